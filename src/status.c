#include "status.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char t_msg[512];

VX_API const char *vx_status_string(vx_status s)
{
    switch (s) {
    case VX_OK: return "VX_OK";
    case VX_ERR_INVALID_ARG: return "VX_ERR_INVALID_ARG";
    case VX_ERR_UNSUPPORTED: return "VX_ERR_UNSUPPORTED";
    case VX_ERR_NO_MEMORY: return "VX_ERR_NO_MEMORY";
    case VX_ERR_DEVICE: return "VX_ERR_DEVICE";
    case VX_ERR_INTERNAL: return "VX_ERR_INTERNAL";
    }
    return "VX_ERR_UNKNOWN_STATUS";
}

VX_API const char *vx_last_error(void)
{
    return t_msg;
}

vx_status vx_fail(vx_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t_msg, sizeof t_msg, fmt, ap);
    va_end(ap);
    return s;
}
