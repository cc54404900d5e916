/* Pure arithmetic of data parallelism: the decoupled gradient layout and the
 * overhead figures. No MPI, no engine: unit-tested directly. */
#include "workload/dp.h"

#include "core/error.h"
#include "core/stats.h"

#include <inttypes.h>
#include <string.h>

const char *pb_dp_overlap_name(pb_dp_overlap m)
{
    switch (m) {
    case PB_DP_OVERLAP_NONE: return "none";
    case PB_DP_OVERLAP_BUCKET: return "bucket";
    default: return NULL;
    }
}

int pb_dp_layout(const uint64_t *real, int64_t n, uint64_t total, uint64_t align, uint64_t *share)
{
    PB_CHECK(n > 0 && real && share && align > 0, PB_ERR_USAGE, "gradient layout: no layers");
    PB_CHECK(total % align == 0, PB_ERR_USAGE,
             "gradient layout: %" PRIu64 " bytes is not a multiple of the %" PRIu64 "-byte element", total, align);
    unsigned __int128 sum = 0;
    for (int64_t i = 0; i < n; i++) sum += real[i] / align;
    PB_CHECK(sum > 0, PB_ERR_USAGE, "gradient layout: the layers have no gradients");
    /* 128-bit products: a 64 GiB buffer times a 64 GiB stack overflows 64 bits. */
    unsigned __int128 units = total / align, before = 0;
    uint64_t prev = 0;
    for (int64_t i = 0; i < n; i++) {
        before += real[i] / align;
        uint64_t end = i == n - 1 ? total : (uint64_t)(before * units / sum) * align;
        share[i] = end - prev;
        prev = end;
    }
    return PB_OK;
}

void pb_dp_metrics_of(double compute_us, double comm_us, double step_us, pb_dp_metrics *out)
{
    out->exposed_us = step_us - compute_us;
    out->overhead = compute_us > 0 ? out->exposed_us / compute_us : 0;
    out->predicted_overhead = compute_us > 0 ? comm_us / compute_us : 0;
    double hidden = comm_us > 0 ? 1.0 - out->exposed_us / comm_us : 0;
    out->hidden_fraction = hidden < 0 ? 0 : hidden > 1 ? 1 : hidden;
}

double pb_dp_paired_overhead(const double *compute_us, const double *step_us, int n, double *scratch)
{
    if (n <= 0) return 0;
    pb_stats diff, compute; /* both sorted in scratch: the inputs keep their pairing */
    for (int i = 0; i < n; i++) scratch[i] = step_us[i] - compute_us[i];
    pb_stats_of(scratch, (size_t)n, &diff);
    pb_stats_of(memcpy(scratch, compute_us, sizeof(double) * (size_t)n), (size_t)n, &compute);
    return compute.median > 0 ? diff.median / compute.median : 0;
}
