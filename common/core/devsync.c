#include "core/devsync.h"

#include "core/error.h"

#include <stdatomic.h>

static _Atomic(pb_devsync_fn) installed;

void pb_devsync_install(pb_devsync_fn wait) { atomic_store(&installed, wait); }

int pb_devsync_wait(const char *why)
{
    pb_devsync_fn wait = atomic_load(&installed);
    return wait ? wait(why) : PB_OK;
}

static atomic_int timed;

void pb_devsync_timed(int on) { atomic_store_explicit(&timed, on, memory_order_relaxed); }

int pb_devsync_in_timed(void) { return atomic_load_explicit(&timed, memory_order_relaxed); }
