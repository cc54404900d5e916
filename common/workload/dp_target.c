#include "workload/dp_target.h"

#include "core/error.h"

#include <math.h>

/* The multiple of align nearest bytes, within [align, top]. */
static uint64_t candidate(double bytes, uint64_t align, uint64_t top)
{
    if (!(bytes >= (double)align)) return align; /* also NaN */
    if (bytes >= (double)top) return top;
    return (uint64_t)llround(bytes / (double)align) * align;
}

static double clamp(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

int pb_dp_target_search(const pb_dp_target_cfg *cfg, pb_dp_target_probe_fn probe, void *ctx, pb_dp_target_result *out)
{
    const double target = cfg->target;
    const uint64_t align = cfg->align ? cfg->align : 1, top = cfg->max_bytes / align * align;
    *out = (pb_dp_target_result){0};
    if (!(target > 0) || top == 0 || cfg->max_probes < 1)
        return pb_fail(PB_ERR_USAGE, "target search: target %g, %llu bytes at most, %d probes", target,
                       (unsigned long long)cfg->max_bytes, cfg->max_probes);
    double best_err = INFINITY, r_lo = 0, r_hi = 0, r_prev = 0;
    uint64_t x = candidate((double)cfg->start, align, top), lo = 0, hi = 0; /* 0: that end not found yet */
    uint64_t prev = 0;                                                           /* the probe before x */
    double w_lo = 1, w_hi = 1; /* Illinois weights of the ends' distances from the target */
    int moved = 0;             /* the end the last probe replaced: -1 lo, +1 hi */
    for (int k = 0; k < cfg->max_probes; k++) {
        double r;
        PB_TRY(probe(ctx, x, &r));
        if (!isfinite(r) || r < 0)
            return pb_fail(PB_ERR_ENV, "target search: the probe at %llu bytes measured comm/compute %g",
                           (unsigned long long)x, r);
        out->probes = k + 1;
        double err = fabs(r / target - 1);
        if (err < best_err) best_err = err, out->grad_bytes = x, out->ratio = r;
        if (err <= cfg->tol) break;
        /* On a curved comm(size) one end of the bracket stays put while the other creeps
         * towards it (regula falsi's stall); the Illinois rule halves the kept end's weight each
         * time the same end moves again, so the next point lands past the target. */
        if (r < target) {
            if (moved < 0 && hi) w_hi /= 2;
            lo = x, r_lo = r, w_lo = 1, moved = -1;
            if (hi && hi <= lo) hi = 0; /* noise contradicted the bracket: the newer point wins */
        } else {
            if (moved > 0 && lo) w_lo /= 2;
            hi = x, r_hi = r, w_hi = 1, moved = 1;
            if (lo && lo >= hi) lo = 0;
        }
        uint64_t next;
        if (lo && hi && (double)(hi - lo) <= cfg->tol * (double)lo)
            break; /* sizes within tol of each other: further probes would measure the loop's noise */
        if (lo && hi) {
            double below = (target - r_lo) * w_lo, above = (r_hi - target) * w_hi;
            double t = clamp(below / (below + above), 0.125, 0.875);
            next = candidate((double)lo + t * (double)(hi - lo), align, top);
            if (next <= lo || next >= hi) break; /* the bracket is one align wide */
        } else {
            /* The secant through the last two probes (exact where the time is alpha + bytes/bw), else
             * proportional scaling; either within x/16..16x. */
            double slope = prev ? (r - r_prev) / ((double)x - (double)prev) : 0;
            double want = slope > 0 ? (double)x + (target - r) / slope : r > 0 ? (double)x * target / r : 16.0 * (double)x;
            next = candidate(clamp(want, (double)x / 16, 16.0 * (double)x), align, top);
            if (next == x) break; /* at the smallest or largest size allowed */
        }
        prev = x, r_prev = r;
        x = next;
    }
    out->converged = best_err <= cfg->tol;
    return PB_OK;
}
