#include "backend/comm_count.h"

#include "core/error.h"
#include "core/parse.h"

#include <stdlib.h>

static pb_comm_count count;

int pb_comm_count_max(int *max)
{
    const char *v = getenv("PARABENCH_MAX_COMMS");
    long long n = PB_COMM_COUNT_MAX;
    if (v && *v) PB_TRY(pb_parse_int("PARABENCH_MAX_COMMS", v, 1, 1024, &n));
    *max = (int)n;
    return PB_OK;
}

int pb_comm_count_admit(void)
{
    int max = PB_COMM_COUNT_MAX;
    PB_TRY(pb_comm_count_max(&max));
    PB_CHECK(count.live < max, PB_ERR_ENV,
             "communicator %d of this rank refused: at most %d may be live at once (PARABENCH_MAX_COMMS; each holds "
             "GPU buffers and, with NVLS, NVSwitch multicast objects)", count.live + 1, max);
    return PB_OK;
}

void pb_comm_count_add(uint64_t held_bytes, int measured)
{
    count.live++, count.created++;
    if (count.live > count.peak) count.peak = count.live;
    count.held_bytes += held_bytes;
    if (count.held_bytes > count.held_peak) count.held_peak = count.held_bytes;
    count.held_measured |= measured != 0;
}

void pb_comm_count_remove(uint64_t held_bytes)
{
    if (count.live > 0) count.live--;
    count.held_bytes = held_bytes < count.held_bytes ? count.held_bytes - held_bytes : 0;
}

pb_comm_count pb_comm_count_get(void) { return count; }

int pb_comm_count_fits(int need, const char *what)
{
    int max = PB_COMM_COUNT_MAX;
    PB_TRY(pb_comm_count_max(&max));
    PB_CHECK(need <= max, PB_ERR_ENV,
             "%s needs %d communicators per rank, more than the %d a rank may hold (PARABENCH_MAX_COMMS; each holds "
             "GPU buffers and, with NVLS, NVSwitch multicast objects; docs/gpu.md, \"Communicators\")", what, need,
             max);
    return PB_OK;
}
