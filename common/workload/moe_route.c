/* The routing arithmetic of a mixture-of-experts layer (moe.h): the load of
 * each expert and rank, and the EP groups. No MPI, no engine. */
#include "workload/moe.h"

#include "coll/coll_skew.h"
#include "core/error.h"

int64_t pb_moe_expert_rows(const pb_moe_route *r, int e)
{
    size_t choices = (size_t)r->tokens * (size_t)r->top_k;
    return (int64_t)pb_coll_skew_split(choices, r->experts, r->skew, e);
}

int64_t pb_moe_rank_rows(const pb_moe_route *r, int d)
{
    int per = r->experts / r->ep;
    int64_t rows = 0;
    for (int e = d * per; e < (d + 1) * per; e++) rows += pb_moe_expert_rows(r, e);
    return rows;
}

int64_t pb_moe_rank_first(const pb_moe_route *r, int d)
{
    int64_t rows = 0;
    for (int p = 0; p < d; p++) rows += pb_moe_rank_rows(r, p);
    return rows;
}

int64_t pb_moe_recv_rows(const pb_moe_route *r, int d) { return (int64_t)r->ep * pb_moe_rank_rows(r, d); }

double pb_moe_imbalance(const pb_moe_route *r)
{
    int64_t most = 0;
    for (int d = 0; d < r->ep; d++) {
        int64_t got = pb_moe_recv_rows(r, d);
        if (got > most) most = got;
    }
    double mean = (double)r->tokens * (double)r->top_k;
    return mean > 0 ? (double)most / mean : 1.0;
}

int pb_moe_row_expert(const pb_moe_route *r, int64_t s)
{
    int64_t end = 0;
    for (int e = 0; e < r->experts; e++) {
        end += pb_moe_expert_rows(r, e);
        if (s < end) return e;
    }
    return r->experts - 1;
}

int pb_moe_route_check(const pb_moe_route *r)
{
    if (r->experts < 1 || r->experts % r->ep != 0)
        return pb_error_usage("--experts", "%d experts do not spread evenly over an EP group of %d ranks; expected a "
                              "multiple of %d", r->experts, r->ep, r->ep);
    if (r->top_k < 1 || r->top_k > r->experts)
        return pb_error_usage("--top-k", "%d: each token goes to 1 to %d experts (the experts)", r->top_k,
                              r->experts);
    if (!(r->skew >= 1.0))
        return pb_error_usage("--skew", "%g: the most loaded expert gets F >= 1 times the mean; expected uniform or "
                              "F >= 1", r->skew);
    int64_t hot = 0;
    for (int e = 0; e < r->experts; e++) hot = pb_moe_expert_rows(r, e) > hot ? pb_moe_expert_rows(r, e) : hot;
    if (hot > r->tokens)
        return pb_error_usage("--skew", "%g: an expert would get %lld choices of %lld tokens (a token chooses an expert "
                              "once); expected F <= about E/k = %g", r->skew, (long long)hot, (long long)r->tokens,
                              (double)r->experts / r->top_k);
    return PB_OK;
}

int pb_moe_group_of(int world, int size, int rank, int *group, int *index)
{
    if (size < 1 || size > world || world % size != 0)
        return pb_error_usage("--ep-group", "an EP group of %d ranks does not divide the %d ranks; expected world, "
                              "node, or a divisor of the world size", size, world);
    *group = rank / size;
    *index = rank % size;
    return PB_OK;
}
