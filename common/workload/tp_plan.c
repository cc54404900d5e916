/* Tensor parallelism arithmetic: shape constraints, group placement, volumes
 * and tolerances. No MPI, no engine: unit-tested on its own. */
#include "workload/tp.h"

#include "core/error.h"
#include "plan/model.h"

#include <string.h>

static const char *const mode_names[PB_TP_MODE_COUNT + 1] = {"allreduce", "sp", NULL};

const char *const *pb_tp_mode_names(void) { return mode_names; }

const char *pb_tp_mode_name(pb_tp_mode m)
{
    return m >= 0 && m < PB_TP_MODE_COUNT ? mode_names[m] : "?";
}

int pb_tp_mode_parse(const char *option, const char *text, pb_tp_mode *out)
{
    for (int m = 0; m < PB_TP_MODE_COUNT; m++) {
        if (strcmp(text, mode_names[m]) == 0) {
            *out = (pb_tp_mode)m;
            return PB_OK;
        }
    }
    return pb_error_usage(option, "'%s' is not a TP communication mode; expected allreduce (Megatron f/g all-reduces) "
                            "or sp (sequence parallelism: all-gather + reduce-scatter)",
                    text);
}

/* One divisibility constraint of the Megatron split, named in the message. */
static int divides(int t, long long v, const char *what)
{
    if (v % t == 0) return PB_OK;
    return pb_error_usage("--tp", "tensor-parallel size t = %d must divide %s = %lld", t, what, v);
}

int pb_tp_shape_check(const pb_layer_shape *sh, pb_tp_mode mode)
{
    int t = sh->tp_size;
    if (t <= 0) return pb_error_usage("--tp", "must be positive, got %d", t);
    if (sh->h > 0 && sh->heads > 0) {
        /* Column-parallel QKV (h x 3h/t) and MLP-up (h x 4h/t), row-parallel
         * out (h/t x h) and MLP-down (4h/t x h), whole heads per rank. */
        PB_TRY(divides(t, (long long)sh->h, "the hidden size h (row-parallel output projection h/t x h)"));
        PB_TRY(divides(t, 3LL * sh->h, "3h (column-parallel QKV h x 3h/t)"));
        PB_TRY(divides(t, 4LL * sh->h, "4h (column-parallel MLP-up h x 4h/t, row-parallel MLP-down 4h/t x h)"));
        PB_TRY(divides(t, (long long)sh->heads, "the attention head count (whole heads per rank)"));
    }
    PB_TRY(pb_layer_shape_check(sh));
    if (mode == PB_TP_SP && sh->s % t != 0)
        return pb_error_usage("--seq", "sequence parallelism shards the sequence over t = %d ranks; s = %lld is not "
                                 "divisible by %d",
                        t, (long long)sh->s, t);
    return PB_OK;
}

int pb_tp_group_of(int world, int t, int stride, int rank, int *group, int *index)
{
    if (t <= 0 || t > world)
        return pb_error_usage("--tp", "tensor-parallel size %d must be between 1 and the world size %d", t, world);
    if (world % t != 0)
        return pb_error_usage("--tp", "tensor-parallel size %d does not divide the world size %d", t, world);
    if (stride <= 0) return pb_error_usage("--tp-stride", "must be positive, got %d", stride);
    if (world % (stride * t) != 0)
        return pb_error_usage("--tp-stride", "stride %d x tp %d = %d does not divide the world size %d", stride, t,
                        stride * t, world);
    int block = rank / (stride * t), within = rank % (stride * t);
    *group = block * stride + within % stride;
    *index = within / stride;
    return PB_OK;
}

void pb_tp_group_ranks(int world, int t, int stride, int group, int *ranks)
{
    (void)world;
    int block = group / stride, j = group % stride;
    for (int k = 0; k < t; k++) ranks[k] = block * stride * t + j + k * stride;
}

uint64_t pb_tp_allreduce_bytes(uint64_t count, int t, size_t elem)
{
    if (t <= 1) return 0;
    uint64_t num = 2 * count * (uint64_t)(t - 1) * elem;
    return (num + (uint64_t)t / 2) / (uint64_t)t;
}

uint64_t pb_tp_shard_coll_bytes(uint64_t count, int t, size_t elem)
{
    return t <= 1 ? 0 : count * (uint64_t)(t - 1) * elem;
}

double pb_tp_expected_bytes_layer(const pb_layer_shape *sh, size_t elem)
{
    return pb_model_tp_elems_per_rank_layer((double)sh->b, (double)sh->s, (double)sh->h, sh->tp_size) * (double)elem;
}

double pb_tp_tolerance(pb_dtype t) { return t == PB_BFLOAT16 ? 3e-2 : 1e-4; }
