/* coll_sweep: collectives over a size sweep, as nccl-tests' *_perf binaries
 * report them: time, algbw, busbw and #wrong per size.
 *
 * Two clocks, as nccl-tests has: `time` (and algbw, busbw from it) is the host
 * clock around a whole loop of back-to-back iterations and one stream
 * synchronization, divided by the count (min, median, p99 and max come from a
 * shorter pass timed iteration by iteration after it); `devtime` is
 * the device time per operation of a batch of back-to-back operations between
 * two CUDA events on the communication stream, as nccl-tests times a batch
 * (stream-ordered backends only; coll_exec.h). -G replays a CUDA graph of the
 * operation instead of issuing it, which removes the host's launch cost. */
#include "harness/bench.h"
#include "backend/buffers.h"
#include "coll/coll_check.h"
#include "coll/coll_exec.h"
#include "coll/coll_op.h"
#include "coll/coll_skew.h"
#include "core/error.h"
#include "core/group.h"
#include "core/mem.h"
#include "core/parse.h"
#include "harness/runner.h"
#include "core/watchdog.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct sweep_opts {
    pb_options common;
    int colls[PB_COLL_COUNT]; /* which collectives, in the order given */
    int ncolls;
    int graph; /* -G */
    int in_place; /* --in-place */
    int groups; /* --groups: pb_group_groups_kind */
    double skew; /* --skew: alltoallv's imbalance F (coll_skew.h), 1 = even */
    const char *skew_text; /* as given; NULL when absent */
} sweep_opts;

enum { OPT_COLL, OPT_GRAPH, OPT_GROUPS, OPT_IN_PLACE, OPT_SKEW };

static int handle(void *ctx, int id, const char *option, const char *arg)
{
    sweep_opts *o = ctx;
    if (id == OPT_GRAPH) {
        o->graph = 1;
        return PB_OK;
    }
    if (id == OPT_IN_PLACE) {
        o->in_place = 1;
        return PB_OK;
    }
    if (id == OPT_SKEW) {
        o->skew_text = arg;
        return pb_parse_double(option, arg, 1.0, 65536.0, &o->skew); /* the ranks of a group bound it later */
    }
    if (id == OPT_GROUPS) {
        int n = 0;
        return pb_parse_choice_list(option, arg, pb_group_groups_names(), 0, &o->groups, &n);
    }
    return pb_parse_choice_list(option, arg, pb_coll_names(), 1, o->colls, &o->ncolls);
}

/* --coll's help names the collectives of the table (coll_help). */
static pb_options_opt own_opts[] = {
    {"coll", 0, "LIST", NULL, OPT_COLL},
    {"groups", 0, "KIND", "world (default): one collective over all ranks; node: one inside every node at once; "
                          "rail: one across the nodes among the ranks of each local rank, all rails at once",
     OPT_GROUPS},
    {"cuda-graph", 'G', NULL, "capture each size's operation in a CUDA graph and time its replays (--backend nccl; "
                              "fixed buffers, no rotation)", OPT_GRAPH},
    {"in-place", 0, NULL, "in-place operations as NCCL defines them (device buffers; allreduce, allgather, "
                          "reducescatter, broadcast, reduce)", OPT_IN_PLACE},
    {"skew", 0, "F", "alltoallv's imbalance, 1 <= F <= ranks of a group (default 1, even): every rank sends its buffer "
                     "with F times the mean to rank 0, the rest split evenly (docs/METRICS.md)", OPT_SKEW},
};

/* The --coll help, from the collective table. */
static const char *coll_help(void)
{
    static char help[512];
    char names[256];
    snprintf(help, sizeof help, "collectives: %s, or all (comma-separated; default allreduce)",
             pb_coll_name_list(names, sizeof names));
    return help;
}

enum {
    COL_COLLECTIVE,
    COL_BYTES,
    COL_COUNT,
    COL_DTYPE,
    COL_REDOP,
    COL_ROOT,
    COL_NRANKS,
    COL_NNODES,
    COL_LINK_CLASS,
    COL_ITERS,
    COL_TIME_US,
    COL_TIME_US_MIN,
    COL_TIME_US_MAX,
    COL_TIME_US_MEDIAN,
    COL_TIME_US_P99,
    COL_TIME_US_RANKMAX,
    COL_TIME_US_DEVICE,
    COL_ALGBW_GBPS,
    COL_BUSBW_GBPS,
    COL_WRONG,
    COL_GROUP,
    COL_SAMPLE_ITERS,
    COL_TIME_US_SAMPLE_MEAN,
    COL_IMBALANCE,
    NCOLS
};

static const pb_report_column cols[] = {
    [COL_COLLECTIVE] = {"collective", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_BYTES] = {"bytes", "size", "(B)", PB_COL_INT, 12, 0, "B"},
    [COL_COUNT] = {"count", "count", "(elements)", PB_COL_INT, 12, 0, "elements"},
    [COL_DTYPE] = {"dtype", "type", "", PB_COL_STR, 8, 0, ""},
    [COL_REDOP] = {"redop", "redop", "", PB_COL_STR, 6, 0, ""},
    [COL_ROOT] = {"root", "root", "", PB_COL_INT, 5, 0, ""},
    [COL_NRANKS] = {"nranks", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_NNODES] = {"nnodes", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_LINK_CLASS] = {"link_class", "link", "", PB_COL_STR, 6, 0, ""},
    [COL_ITERS] = {"iters", "iters", "", PB_COL_INT, 6, 0, ""},
    [COL_TIME_US] = {"time_us", "time", "(us)", PB_COL_FLOAT, 10, 2, "us"},
    [COL_TIME_US_MIN] = {"time_us_min", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_TIME_US_MAX] = {"time_us_max", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_TIME_US_MEDIAN] = {"time_us_median", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_TIME_US_P99] = {"time_us_p99", "p99", "(us)", PB_COL_FLOAT, 10, 2, "us"},
    [COL_TIME_US_RANKMAX] = {"time_us_rankmax", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_TIME_US_DEVICE] = {"time_us_device", "devtime", "(us)", PB_COL_FLOAT, 10, 2, "us"},
    [COL_ALGBW_GBPS] = {"algbw_GBps", "algbw", "(GB/s)", PB_COL_FLOAT, 8, 3, "GB/s"},
    [COL_BUSBW_GBPS] = {"busbw_GBps", "busbw", "(GB/s)", PB_COL_FLOAT, 8, 3, "GB/s"},
    [COL_WRONG] = {"wrong", "#wrong", "", PB_COL_INT, 7, 0, ""},
    [COL_GROUP] = {"group", "group", "", PB_COL_STR, 8, 0, ""}, /* "world", or the node / rail (--groups) */
    /* The sample pass (docs/METRICS.md "Time"): its iterations and their mean; last, so no reader's column moves. */
    [COL_SAMPLE_ITERS] = {"sample_iters", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_TIME_US_SAMPLE_MEAN] = {"time_us_sample_mean", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    /* The heaviest receiver's bytes over the mean (alltoallv's achieved skew; 1 for the others). */
    [COL_IMBALANCE] = {"imbalance", NULL, NULL, PB_COL_FLOAT, 0, 0, ""},
};
_Static_assert(sizeof cols / sizeof cols[0] == NCOLS, "one column per COL_ index");

/* The sweep's state: the operation (coll_op.h) and the group it runs on. */
typedef struct iter_ctx {
    pb_coll_op op;
    const pb_group *g; /* the ranks this rank runs the collective with */
    const pb_options *o;
} iter_ctx;

/* One size's result in one group, as its leader has it. */
typedef struct group_row {
    double time_us, rankmax_us; /* the whole loop's: mean and max over the ranks */
    pb_stats st;                /* the sample pass's */
    double dev_us;
    int done, samples, nranks, nnodes;
    long long wrong;
    size_t bytes, count; /* the group's shape: groups of other sizes split the buffer otherwise */
    double imbalance;    /* the heaviest receiver's count over the mean (coll_skew.h) */
    char name[32], link[8];
} group_row;

/* The time bandwidths are computed on: the mean over the ranks, or for a skewed receive (alltoallv) the
 * slowest rank's, which the heaviest receiver sets (docs/METRICS.md). */
static double bw_time_us(const iter_ctx *x, const group_row *r)
{
    return pb_coll_skewed(x->op.coll) ? r->rankmax_us : r->time_us;
}

static double algbw_of(const iter_ctx *x, const group_row *r)
{
    double t = bw_time_us(x, r);
    return t > 0 ? (double)r->bytes / t / 1e3 : 0;
}

static double busbw_of(const iter_ctx *x, const group_row *r)
{
    return algbw_of(x, r) * pb_coll_busbw_factor(x->op.coll, r->nranks);
}

static int report_row(pb_bench *b, iter_ctx *x, const group_row *r)
{
    double algbw = algbw_of(x, r);
    const pb_coll_desc *d = pb_coll_desc_of(x->op.coll);
    pb_report_value v[NCOLS] = {
        [COL_COLLECTIVE] = PB_S(d->name),
        [COL_BYTES] = PB_I(r->bytes),
        [COL_COUNT] = PB_I(r->count),
        [COL_DTYPE] = PB_S(pb_dtype_name(x->o->dtype)),
        [COL_REDOP] = PB_S(d->has_op ? pb_dtype_redop_name(x->o->op) : "none"),
        [COL_ROOT] = PB_I(d->has_root ? x->o->root : -1),
        [COL_NRANKS] = PB_I(r->nranks),
        [COL_NNODES] = PB_I(r->nnodes),
        [COL_LINK_CLASS] = PB_S(r->link),
        [COL_ITERS] = PB_I(r->done),
        [COL_TIME_US] = PB_F(r->time_us),
        [COL_TIME_US_MIN] = PB_F(r->st.min),
        [COL_TIME_US_MAX] = PB_F(r->st.max),
        [COL_TIME_US_MEDIAN] = PB_F(r->st.median),
        [COL_TIME_US_P99] = PB_F(r->st.p99),
        [COL_TIME_US_RANKMAX] = PB_F(r->rankmax_us),
        [COL_TIME_US_DEVICE] = PB_F(r->dev_us),
        [COL_ALGBW_GBPS] = PB_F(algbw),
        [COL_BUSBW_GBPS] = PB_F(busbw_of(x, r)),
        [COL_WRONG] = PB_I(x->o->check ? r->wrong : -1),
        [COL_GROUP] = PB_S(r->name),
        [COL_SAMPLE_ITERS] = PB_I(r->samples),
        [COL_TIME_US_SAMPLE_MEAN] = PB_F(r->st.mean),
        [COL_IMBALANCE] = PB_F(r->imbalance),
    };
    return pb_report_row(b->rep, v);
}

/* The groups' leaders bring their rows to world rank 0, which writes them in
 * group order. Adds to the busbw sum, the row count and the wrong count. */
static int report_groups(pb_bench *b, iter_ctx *x, const group_row *mine, double *busbw_sum, int *rows,
                         long long *wrong_sum)
{
    const pb_group *g = x->g;
    group_row *all = b->w.rank == 0 ? calloc((size_t)g->count, sizeof *all) : NULL;
    int status = pb_world_agree(&b->w, b->w.rank != 0 || all ? PB_OK : pb_fail(PB_ERR_ENV, "out of memory for %d "
                                                                               "group rows", g->count));
    if (status == PB_OK) status = pb_group_gather_leaders(&b->w, g, mine, sizeof *mine, all);
    for (int k = 0; all && k < g->count && status == PB_OK; k++) {
        status = report_row(b, x, &all[k]);
        *busbw_sum += busbw_of(x, &all[k]);
        *wrong_sum += all[k].wrong;
        (*rows)++;
    }
    free(all);
    return status;
}

/* This rank's shape of the collective at `bytes`, at --skew where it applies. */
static void shape_for(const pb_coll_op *x, uint64_t bytes, int nranks, pb_coll_exec_shape *out)
{
    pb_coll_exec_shape_skewed(x->coll, bytes, x->dtype, nranks, x->be->rank(x->comm), x->skew, out);
}

/* Issue the collective once at the largest size before the first row is
 * timed: connections, internal buffers and the pages of our buffers are set
 * up here, so the first size is measured like the others. */
static int warm_up_sweep(pb_bench *b, pb_coll_op *x, int nranks, uint64_t largest)
{
    shape_for(x, largest, nranks, &x->shape);
    pb_watchdog_what(pb_coll_name(x->coll), x->shape.bytes);
    pb_watchdog_arm(-1, "warm-up before the sweep");
    int status = x->skip ? PB_OK : pb_coll_op_issue(x, 0);
    if (status == PB_OK && !x->skip) status = x->be->sync(x->comm);
    pb_watchdog_disarm();
    return pb_world_agree(&b->w, status);
}

/* Time one size on the group: the whole loop gives time and rankmax, the
 * sample pass the statistics (docs/METRICS.md "Time"). */
static int time_size(iter_ctx *x, const pb_runner_cfg *loop, double *samples, group_row *r)
{
    pb_runner_op timed = {pb_coll_op_start, pb_coll_op_wait, &x->op};
    pb_runner_whole whole;
    PB_TRY(pb_runner_time_whole(x->g->comm, loop, &timed, samples, &whole));
    r->done = whole.iters;
    r->samples = whole.samples;
    pb_runner_whole_across(x->g->comm, whole.loop_us, &r->time_us, &r->rankmax_us);
    return pb_runner_gather_stats(x->g->comm, samples, whole.samples, &r->st);
}

/* One collective over the whole sweep. Adds to the busbw sum and wrong count. */
/* Requested sizes the collective could not take as asked (whole elements, at least one a rank,
 * as nccl-tests rounds): one note a collective on stderr by the reporting rank, naming the
 * sizes measured above their request and those skipped for rounding to the size just measured. */
typedef struct rounding {
    int above, again;
    uint64_t first_asked;
    size_t first_got;
} rounding;

static void note_rounding(const pb_bench *b, pb_coll c, const rounding *r, int nranks, pb_dtype t)
{
    if (!b->rep || (!r->above && !r->again)) return;
    fprintf(stderr, "coll_sweep: note: %s on %d ranks in %s: %d requested size(s) round up (whole elements, at "
            "least %s a rank; e.g. %llu B to %zu B); %d not measured again (the same size as the one before)\n",
            pb_coll_name(c), nranks, pb_dtype_name(t), r->above, pb_coll_skewed(c) ? "12" : "one",
            (unsigned long long)r->first_asked, r->first_got, r->again);
}

static int sweep_collective(pb_bench *b, iter_ctx *x, const uint64_t *sizes, size_t nsizes, double *busbw_sum,
                            int *rows, long long *wrong_sum)
{
    const pb_options *o = x->o;
    pb_coll_op *op = &x->op;
    pb_coll_exec_shape biggest;
    shape_for(op, sizes[nsizes - 1], x->g->size, &biggest);
    size_t ts = pb_dtype_size(o->dtype), cache = o->rotate ? pb_buffers_cache_bytes(b->be) : 0;
    uint64_t send = pb_mem_mul(biggest.send_count, ts), recv = pb_mem_mul(biggest.recv_count, ts);
    pb_mem_need need = {b->be->mem, NULL, pb_mem_add(pb_buffers_rotation_pool(send, cache, o->rotate),
                                                     pb_buffers_rotation_pool(recv, cache, o->rotate)), 0};
    PB_TRY(pb_bench_mem_require(b, &need, "-e/--maxbytes (send and receive buffers)"));
    int status = pb_buffers_alloc(b->be, biggest.send_count * ts, o->rotate, &op->send);
    if (status == PB_OK) status = pb_buffers_alloc(b->be, biggest.recv_count * ts, o->rotate, &op->recv);
    int max_iters = pb_options_iters_max(o, &pb_policy_collective);
    double *samples = malloc(sizeof(double) * (size_t)max_iters);
    if (!samples && status == PB_OK) status = pb_fail(PB_ERR_ENV, "out of memory for %d samples", max_iters);
    status = pb_world_agree_at(b->w.comm, status, "buffers");
    if (status == PB_OK) status = warm_up_sweep(b, op, x->g->size, sizes[nsizes - 1]);
    if (b->rep && status == PB_OK) {
        printf("#\n# %s\n", pb_coll_name(op->coll));
        pb_report_header(b->rep);
    }
    /* The last size measured and its request: another request that rounds to it is not measured
     * again (the same request twice, as --sizes 8,8 asks, is). */
    size_t last = 0;
    uint64_t last_asked = 0;
    rounding rnd = {0, 0, 0, 0};
    for (size_t i = 0; i < nsizes && status == PB_OK; i++) {
        shape_for(op, sizes[i], x->g->size, &op->shape);
        if (op->shape.bytes > sizes[i] && !rnd.above++) rnd.first_asked = sizes[i], rnd.first_got = op->shape.bytes;
        if (op->shape.bytes == last && sizes[i] != last_asked) {
            rnd.again++;
            continue;
        }
        last = op->shape.bytes, last_asked = sizes[i];
        pb_buffers_fit(&op->send, op->shape.send_count * ts);
        pb_buffers_fit(&op->recv, op->shape.recv_count * ts);
        pb_watchdog_what(pb_coll_name(op->coll), op->shape.bytes);
        pb_runner_cfg loop = {0, 0, o->max_seconds};
        pb_options_iters_for(o, &pb_policy_collective, op->shape.bytes, &loop.iters, &loop.warmup);
        group_row r = {.dev_us = NAN, .nranks = x->g->size, .nnodes = pb_world_nodes_spanned(&b->w, x->g->members, x->g->size),
                       .bytes = op->shape.bytes, .count = op->shape.count,
                       .imbalance = pb_coll_skewed(op->coll)
                                        ? pb_coll_skew_imbalance(op->shape.count, x->g->size, op->shape.skew) : 1.0};
        snprintf(r.name, sizeof r.name, "%s", x->g->name);
        snprintf(r.link, sizeof r.link, "%s", x->g->link);
        if (op->graph) status = pb_world_agree(&b->w, pb_coll_op_capture(op));
        if (status == PB_OK) status = time_size(x, &loop, samples, &r);
        if (status == PB_OK) status = pb_coll_op_device_time(op, pb_coll_exec_devtime_ops(r.done), &r.dev_us);
        if (status == PB_OK && o->check) status = pb_coll_op_validate(op, &r.wrong);
        status = pb_world_agree(&b->w, status); /* every group stops when one fails */
        if (status == PB_OK) status = pb_world_agree(&b->w, report_groups(b, x, &r, busbw_sum, rows, wrong_sum));
    }
    note_rounding(b, op->coll, &rnd, x->g->size, o->dtype);
    free(samples);
    pb_buffers_free(&op->send);
    pb_buffers_free(&op->recv);
    return status;
}

/* -r (its form checked when parsed) in every group: the smallest bounds it. */
static int root_rank(sweep_opts *o, int smallest)
{
    errno = 0;
    long long v = strtoll(o->common.root_text, NULL, 10);
    if (errno == ERANGE || v < 0 || v >= smallest)
        return pb_error_usage("-r/--root", "rank %s does not exist in every %s group; expected a rank in 0..%d",
                              o->common.root_text, pb_group_groups_names()[o->groups], smallest - 1);
    o->common.root = (int)v;
    return PB_OK;
}

/* -r and -o apply to some collectives only: refused when none of --coll takes them. */
static int check_combinations(const sweep_opts *o)
{
    int roots = 0, ops = 0;
    for (int k = 0; k < o->ncolls; k++) {
        roots |= pb_coll_desc_of((pb_coll)o->colls[k])->has_root;
        ops |= pb_coll_desc_of((pb_coll)o->colls[k])->has_op;
    }
    if (o->common.root_text && !roots)
        return pb_error_usage("-r/--root", "does not apply to --coll %s, which takes no root; expected a collective "
                                           "with a root (broadcast, reduce) or no -r", pb_coll_name((pb_coll)o->colls[0]));
    if (o->common.op_given && !ops)
        return pb_error_usage("-o/--op", "does not apply to --coll %s, which reduces nothing; expected a reducing "
                                         "collective or no -o", pb_coll_name((pb_coll)o->colls[0]));
    for (int k = 0; k < o->ncolls && o->in_place; k++) { /* refused before anything is allocated */
        void *p, *q;
        pb_coll_exec_shape none = {0};
        PB_TRY(pb_coll_exec_in_place("--in-place", (pb_coll)o->colls[k], &none, o->common.dtype, 0, NULL, &p, &q));
    }
    int skewed = 0;
    for (int k = 0; k < o->ncolls; k++) skewed |= pb_coll_skewed((pb_coll)o->colls[k]);
    if (o->skew_text && !skewed)
        return pb_error_usage("--skew", "does not apply to --coll %s, which sends even blocks; expected --coll "
                                        "alltoallv or no --skew", pb_coll_name((pb_coll)o->colls[0]));
    if (o->graph && o->common.rotate)
        return pb_error_usage("-G/--cuda-graph", "does not apply with --rotate 1: a graph replays fixed buffers; "
                                                 "expected one or the other");
    return PB_OK;
}

int main(int argc, char **argv)
{
    sweep_opts o = {.ncolls = 0, .skew = 1.0};
    pb_options_defaults(&o.common);
    own_opts[0].help = coll_help(); /* --coll */
    pb_options_add_list("collectives", pb_coll_names());
    pb_options_group groups[] = {
        {"coll_sweep options", own_opts, (int)(sizeof own_opts / sizeof own_opts[0]), handle, &o},
        pb_options_common_group(&o.common, PB_OPTS_ALL),
    };
    pb_bench b;
    pb_bench_start(&b, "coll_sweep", &argc, &argv, MPI_THREAD_SINGLE,
                   "Usage: mpirun -np N coll_sweep [options]\n"
                   "Collectives over a size sweep: time, algbw, busbw and #wrong per size (nccl-tests definitions).\n"
                   "Iterations per size as OSU: 1000 (+100 warm-up) up to 8 KiB, 100 (+10) above; -n/-w set one "
                   "count for all.",
                   groups, 2);
    if (o.ncolls == 0) o.colls[o.ncolls++] = PB_COLL_ALLREDUCE;
    int status = pb_options_validate(&o.common);
    if (status == PB_OK) status = check_combinations(&o);
    pb_group g = {.comm = MPI_COMM_NULL};
    if (status == PB_OK) status = pb_group_split(&b.w, (pb_group_groups_kind)o.groups, &g);
    int smallest = g.size;
    MPI_Allreduce(MPI_IN_PLACE, &smallest, 1, MPI_INT, MPI_MIN, b.w.comm);
    if (status == PB_OK && o.common.root_text) status = root_rank(&o, smallest);
    if (status == PB_OK && !pb_coll_skew_valid(o.skew, smallest))
        status = pb_error_usage("--skew", "%s is more than every rank sending everything to one (%d ranks in the "
                                "smallest %s group); expected 1 <= F <= %d", o.skew_text, smallest,
                                pb_group_groups_names()[o.groups], smallest);
    if (status == PB_OK) status = pb_bench_select(&b, &o.common);
    if (status == PB_OK && o.graph && !(b.be->capture_begin && b.be->capture_end && b.be->replay))
        status = pb_error_usage("-G/--cuda-graph", "the %s backend completes operations on the host and has no CUDA graphs; "
                          "expected --backend nccl", b.be->name);
    if (status == PB_OK && o.in_place && b.be->mem == PB_MEM_HOST) /* MPI would need MPI_IN_PLACE, not aliases */
        status = pb_error_usage("--in-place", "host buffers of the %s backend cannot alias; expected --backend nccl "
                                "or --mem device", b.be->name);
    if (status != PB_OK) pb_bench_finish(&b, status);

    uint64_t sizes[PB_MAX_SIZES];
    size_t nsizes = pb_options_sweep_sizes(&o.common, sizes, PB_MAX_SIZES);
    iter_ctx x = {.g = &g, .o = &o.common,
                  .op = {.be = b.be, .group = g.comm, .dtype = o.common.dtype, .op = o.common.op, .root = o.common.root,
                         .skew = o.skew, .in_place = o.in_place, .graph = o.graph, .skip = pb_faults_skip_rank() == b.w.rank,
                         .slow = pb_faults_slow_rank() == b.w.rank}};
    int events = b.be->span_begin != NULL;
    cJSON *meta = cJSON_CreateObject();
    cJSON_AddStringToObject(meta, "timer", events ? "time: host clock around the timed iterations issued back to "
                                                      "back and one stream synchronization, per operation; min, median, "
                                                      "p99, max: a sample pass timed one by one after it; devtime: "
                                                      "CUDA events around a batch of back-to-back operations on the "
                                                      "communication stream, per operation"
                                                    : "time: host clock around the timed iterations issued back to "
                                                      "back and one completion wait, per operation; min, median, p99, "
                                                      "max: a sample pass timed one by one after it; devtime: not "
                                                      "measured (host backend)");
    cJSON_AddBoolToObject(meta, "cuda_graph", o.graph);
    cJSON_AddBoolToObject(meta, "in_place", o.in_place);
    cJSON_AddNumberToObject(meta, "skew", o.skew);
    cJSON_AddStringToObject(meta, "validation", o.common.check ? pb_coll_check_where(b.be) : "off");
    cJSON_AddItemToObject(meta, "buffers", pb_buffers_mode_meta(b.be, o.common.rotate));
    char iters[160];
    pb_options_iters_describe(&o.common, &pb_policy_collective, iters, sizeof iters);
    cJSON_AddStringToObject(meta, "iterations", iters);
    cJSON_AddStringToObject(meta, "groups", pb_group_groups_names()[o.groups]);
    cJSON_AddNumberToObject(meta, "group_count", g.count);
    status = pb_bench_open(&b, &o.common, cols, NCOLS, meta);
    if (status == PB_OK) status = pb_world_agree_at(b.w.comm, b.be->comm_create(g.comm, &x.op.comm), "comm");
    double busbw_sum = 0;
    int rows = 0;
    long long wrong = 0;
    for (int k = 0; k < o.ncolls && status == PB_OK; k++) {
        x.op.coll = (pb_coll)o.colls[k];
        status = sweep_collective(&b, &x, sizes, nsizes, &busbw_sum, &rows, &wrong);
    }
    if (x.op.comm) b.be->comm_destroy(x.op.comm);
    pb_group_free(&g);
    if (b.rep && rows > 0) {
        printf("#\n");
        pb_report_summary(b.rep, "avg_busbw_GBps", "Avg bus bandwidth", busbw_sum / rows, "GB/s");
        if (o.common.check) {
            char detail[32];
            snprintf(detail, sizeof detail, "checked on the %s", pb_coll_check_where(b.be));
            pb_bench_note_wrong(b.rep, wrong, detail);
        }
    }
    if (status == PB_OK && wrong > 0) status = PB_ERR_CHECK;
    pb_bench_finish(&b, status);
}
