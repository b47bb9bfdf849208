// Thread-count control for a oneDNN built with the TBB CPU runtime (the PyPI
// onednn wheels are). oneDNN has no C call to set its thread count under TBB;
// it sizes its work split from tbb::this_task_arena::max_concurrency(), so the
// documented way is to call it inside a tbb::task_arena of the wanted size.
// Only the benchmark runner uses this; it is compiled when a C++ compiler and
// the TBB headers (PyPI tbb-devel) are found.
#include <oneapi/tbb/task_arena.h>

namespace {
tbb::task_arena *g_arena = nullptr;
}

extern "C" int vxb_tbb_arena_init(int threads)
{
    if (threads < 1)
        return -1;
    if (!g_arena) {
        g_arena = new tbb::task_arena(threads);
        g_arena->initialize();
    }
    return g_arena->max_concurrency();
}

// Runs fn(arg) inside the arena (on the calling thread, with up to
// threads - 1 TBB workers joining), or directly when no arena was made.
extern "C" void vxb_tbb_arena_run(void (*fn)(void *), void *arg)
{
    if (g_arena)
        g_arena->execute([&] { fn(arg); });
    else
        fn(arg);
}

// Concurrency oneDNN would see when called from outside any arena.
extern "C" int vxb_tbb_default_concurrency(void)
{
    return tbb::this_task_arena::max_concurrency();
}
