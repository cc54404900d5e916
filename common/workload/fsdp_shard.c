/* The sharding arithmetic of FSDP (fsdp.h): shard sizes with padding, the
 * shard groups, and the bytes a step sends. No MPI, no engine. */
#include "workload/fsdp.h"

#include "core/error.h"

void pb_fsdp_shard_of(uint64_t params, int n, pb_fsdp_shard *out)
{
    uint64_t ranks = n > 0 ? (uint64_t)n : 1;
    out->params = params;
    out->n = (int)ranks;
    out->per_rank = (params + ranks - 1) / ranks;
    out->padded = out->per_rank * ranks;
}

uint64_t pb_fsdp_shard_valid(const pb_fsdp_shard *s, int rank)
{
    uint64_t start = (uint64_t)rank * s->per_rank;
    if (rank < 0 || start >= s->params) return 0;
    uint64_t left = s->params - start;
    return left < s->per_rank ? left : s->per_rank;
}

int pb_fsdp_group_of(int world, int size, int rank, int *group, int *index)
{
    if (size < 1 || size > world || world % size != 0)
        return pb_error_usage("--shard-group", "a shard group of %d ranks does not divide the %d ranks; expected "
                              "world, node, or a divisor of the world size", size, world);
    *group = rank / size;
    *index = rank % size;
    return PB_OK;
}

const char *pb_fsdp_prefetch_name(pb_fsdp_prefetch p) { return p == PB_FSDP_PREFETCH_ON ? "on" : "off"; }

double pb_fsdp_step_bytes_sent(const pb_fsdp_shard *s, int64_t layers, size_t param_elem, size_t grad_elem,
                               int replicas)
{
    double per = (double)s->per_rank, others = (double)(s->n - 1);
    double gathers = 2.0 * per * others * (double)param_elem;
    double scatter = per * others * (double)grad_elem;
    double across = replicas > 1 ? 2.0 * per * (replicas - 1) / replicas * (double)grad_elem : 0.0;
    return (double)layers * (gathers + scatter + across);
}
