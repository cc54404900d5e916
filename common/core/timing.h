/* Wall-clock time in microseconds from a monotonic clock (about 20 ns to read). */
#ifndef PB_TIMING_H
#define PB_TIMING_H

#include <time.h>

static inline double pb_timing_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

#endif
