/* Status names and the thread-local message behind vx_last_error(). */
#ifndef VX_STATUS_H
#define VX_STATUS_H

#include "vortex/vortex.h"

/* Record a message for vx_last_error() and return s (for `return vx_fail(...)`). */
vx_status vx_fail(vx_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
