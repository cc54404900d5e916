/* coll_sweep: collectives over a size sweep, as nccl-tests' *_perf binaries
 * report them: time, algbw, busbw and #wrong per size.
 *
 * Two clocks, as nccl-tests has: `time` (and algbw, busbw from it) is the host
 * clock around issue + stream synchronization of each iteration; `devtime` is
 * the device time per operation of a batch of back-to-back operations between
 * two CUDA events on the communication stream, as nccl-tests times a batch
 * (stream-ordered backends only; coll_exec.h). -G replays a CUDA graph of the
 * operation instead of issuing it, which removes the host's launch cost. */
#include "harness/bench.h"
#include "backend/buffers.h"
#include "coll/coll_check.h"
#include "coll/coll_exec.h"
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
} sweep_opts;

enum { OPT_COLL, OPT_GRAPH, OPT_GROUPS, OPT_IN_PLACE };

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
};
_Static_assert(sizeof cols / sizeof cols[0] == NCOLS, "one column per COL_ index");

typedef struct iter_ctx {
    const pb_comm_backend *be;
    const pb_group *g; /* the ranks this rank runs the collective with */
    pb_comm *comm;
    pb_coll coll;
    pb_coll_exec_shape shape;
    pb_buffers send, recv;
    const pb_options *o;
    int skip;
    int events;    /* the backend has CUDA-event spans */
    int graph;     /* -G: replay the captured operation */
    int in_place;  /* --in-place: send and receive inside one buffer (coll_exec.h) */
} iter_ctx;

/* The receive buffer of iteration `iter`: the send buffer itself for a
 * broadcast on a backend whose broadcast has one buffer (comm.h). */
static void *recv_slot(const iter_ctx *x, int iter)
{
    if (x->coll == PB_COLL_BROADCAST && x->be->broadcast_in_place) return pb_buffers_slot(&x->send, iter);
    return pb_buffers_slot(&x->recv, iter);
}

/* The send and receive pointers of iteration `iter`; with --in-place both lie
 * in the larger of the two slots. */
static void slots(const iter_ctx *x, int iter, void **send, void **recv)
{
    *send = pb_buffers_slot(&x->send, iter);
    *recv = recv_slot(x, iter);
    if (!x->in_place) return;
    void *buf = x->shape.recv_count >= x->shape.send_count ? *recv : *send;
    (void)pb_coll_exec_in_place("--in-place", x->coll, &x->shape, x->o->dtype, x->be->rank(x->comm), buf, send, recv);
}

static int issue(iter_ctx *x, int iter)
{
    void *send, *recv;
    slots(x, iter, &send, &recv);
    return pb_coll_exec_issue(x->be, x->comm, x->coll, &x->shape, send, recv, x->o->dtype, x->o->op, x->o->root);
}

static int one_iteration(void *arg, int iter)
{
    iter_ctx *x = arg;
    if (x->skip) return PB_OK; /* test-only: leave the peers waiting (PARABENCH_TEST_SKIP) */
    PB_TRY(x->graph ? x->be->replay(x->comm) : issue(x, iter));
    return x->be->sync(x->comm);
}

/* -G: record this size's operation on slot 0 (a graph keeps its pointers)
 * into the communicator's graph. Nothing runs. */
static int capture(iter_ctx *x)
{
    if (x->skip) return PB_OK;
    PB_TRY(x->be->capture_begin(x->comm));
    int status = issue(x, 0);
    int end = x->be->capture_end(x->comm); /* always: the stream must leave capture mode */
    return status != PB_OK ? status : end;
}

/* Issue (or, with -G, replay) operation i of a device-time batch. */
static int batch_op(void *arg, int i)
{
    iter_ctx *x = arg;
    return x->graph ? x->be->replay(x->comm) : issue(x, i);
}

/* Mean over ranks of the device time per operation of a batch of n
 * back-to-back operations (coll_exec.h; NaN without events). */
static int device_time(iter_ctx *x, int n, double *mean_us)
{
    double mine = NAN;
    int status = PB_OK;
    if (x->events && !x->skip) {
        pb_watchdog_arm(0, "devtime batch");
        status = pb_coll_exec_device_time(x->be, x->comm, n, batch_op, x, &mine);
        pb_watchdog_disarm();
    }
    MPI_Allreduce(&mine, mean_us, 1, MPI_DOUBLE, MPI_SUM, x->g->comm);
    *mean_us /= x->g->size;
    return status;
}

/* Run the collective once on known inputs and count wrong elements on all
 * ranks; on the device when the buffers are there (coll_check.h). */
static int validate(iter_ctx *x, long long *wrong_total)
{
    const pb_coll_exec_shape *sh = &x->shape;
    int n = x->be->size(x->comm), me = x->be->rank(x->comm);
    void *send, *recv;
    slots(x, 0, &send, &recv);
    int status = pb_coll_check_fill(x->be, x->coll, sh, x->o->dtype, me, n, send);
    pb_watchdog_arm(0, "validate");
    if (status == PB_OK) status = one_iteration(x, 0);
    pb_watchdog_disarm();
    long long wrong = 0;
    if (status == PB_OK)
        status = pb_coll_check_count(x->be, x->coll, sh, x->o->dtype, x->o->op, me, n, x->o->root,
                                     pb_faults_corrupt_rank() == me, recv, &wrong);
    MPI_Allreduce(&wrong, wrong_total, 1, MPI_LONG_LONG, MPI_SUM, x->g->comm);
    return status;
}

/* One size's result in one group, as its leader has it. */
typedef struct group_row {
    pb_stats st;
    double dev_us;
    int done, nranks, nnodes;
    long long wrong;
    size_t bytes, count; /* the group's shape: groups of other sizes split the buffer otherwise */
    char name[32], link[8];
} group_row;

#define TAG_GROUP_ROW 7704

static double busbw_of(const iter_ctx *x, const group_row *r)
{
    return r->st.mean > 0 ? (double)r->bytes / r->st.mean / 1e3 * pb_busbw_factor(x->coll, r->nranks) : 0;
}

static int report_row(pb_bench *b, iter_ctx *x, const group_row *r)
{
    double algbw = r->st.mean > 0 ? (double)r->bytes / r->st.mean / 1e3 : 0;
    const pb_coll_desc *d = pb_coll_desc_of(x->coll);
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
        [COL_TIME_US] = PB_F(r->st.mean),
        [COL_TIME_US_MIN] = PB_F(r->st.min),
        [COL_TIME_US_MAX] = PB_F(r->st.max),
        [COL_TIME_US_MEDIAN] = PB_F(r->st.median),
        [COL_TIME_US_P99] = PB_F(r->st.p99),
        [COL_TIME_US_RANKMAX] = PB_F(r->st.rankmax),
        [COL_TIME_US_DEVICE] = PB_F(r->dev_us),
        [COL_ALGBW_GBPS] = PB_F(algbw),
        [COL_BUSBW_GBPS] = PB_F(busbw_of(x, r)),
        [COL_WRONG] = PB_I(x->o->check ? r->wrong : -1),
        [COL_GROUP] = PB_S(r->name),
    };
    return pb_report_row(b->rep, v);
}

/* The groups' leaders bring their rows to world rank 0, which writes them in
 * group order. Adds to the busbw sum, the row count and the wrong count. */
static int report_groups(pb_bench *b, iter_ctx *x, const group_row *mine, double *busbw_sum, int *rows,
                         long long *wrong_sum)
{
    const pb_group *g = x->g;
    if (g->rank == 0 && b->w.rank != 0) MPI_Send(mine, sizeof *mine, MPI_BYTE, 0, TAG_GROUP_ROW, b->w.comm);
    if (b->w.rank != 0) return PB_OK;
    int status = PB_OK;
    for (int k = 0; k < g->count && status == PB_OK; k++) {
        group_row r = *mine;
        if (g->leaders[k] != 0) MPI_Recv(&r, sizeof r, MPI_BYTE, g->leaders[k], TAG_GROUP_ROW, b->w.comm, MPI_STATUS_IGNORE);
        status = report_row(b, x, &r);
        *busbw_sum += busbw_of(x, &r);
        *wrong_sum += r.wrong;
        (*rows)++;
    }
    return status;
}

/* Issue the collective once at the largest size before the first row is
 * timed: connections, internal buffers and the pages of our buffers are set
 * up here, so the first size is measured like the others. */
static int warm_up_sweep(pb_bench *b, iter_ctx *x, uint64_t largest)
{
    pb_coll_exec_shape_of(x->coll, largest, x->o->dtype, x->g->size, &x->shape);
    pb_watchdog_what(pb_coll_name(x->coll), x->shape.bytes);
    pb_watchdog_arm(-1, "warm-up before the sweep");
    int status = x->skip ? PB_OK : issue(x, 0);
    if (status == PB_OK && !x->skip) status = x->be->sync(x->comm);
    pb_watchdog_disarm();
    return pb_world_agree(&b->w, status);
}

/* One collective over the whole sweep. Adds to the busbw sum and wrong count. */
static int sweep_collective(pb_bench *b, iter_ctx *x, const uint64_t *sizes, size_t nsizes, double *busbw_sum,
                            int *rows, long long *wrong_sum)
{
    const pb_options *o = x->o;
    pb_coll_exec_shape biggest;
    pb_coll_exec_shape_of(x->coll, sizes[nsizes - 1], o->dtype, x->g->size, &biggest);
    size_t ts = pb_dtype_size(o->dtype), cache = o->rotate ? pb_buffers_cache_bytes(b->be) : 0;
    uint64_t send = pb_mem_mul(biggest.send_count, ts), recv = pb_mem_mul(biggest.recv_count, ts);
    pb_mem_need need = {b->be->mem, NULL, pb_mem_add(pb_buffers_rotation_pool(send, cache, o->rotate),
                                                     pb_buffers_rotation_pool(recv, cache, o->rotate)), 0};
    PB_TRY(pb_bench_mem_require(b, &need, "-e/--maxbytes (send and receive buffers)"));
    int status = pb_buffers_alloc(b->be, biggest.send_count * ts, o->rotate, &x->send);
    if (status == PB_OK) status = pb_buffers_alloc(b->be, biggest.recv_count * ts, o->rotate, &x->recv);
    int max_iters = pb_options_iters_max(o, &pb_policy_collective);
    double *samples = malloc(sizeof(double) * (size_t)max_iters);
    if (!samples && status == PB_OK) status = pb_fail(PB_ERR_ENV, "out of memory for %d samples", max_iters);
    status = pb_world_agree_at(b->w.comm, status, "buffers");
    if (status == PB_OK) status = warm_up_sweep(b, x, sizes[nsizes - 1]);
    if (b->rep && status == PB_OK) {
        printf("#\n# %s\n", pb_coll_name(x->coll));
        pb_report_header(b->rep);
    }
    for (size_t i = 0; i < nsizes && status == PB_OK; i++) {
        pb_coll_exec_shape_of(x->coll, sizes[i], o->dtype, x->g->size, &x->shape);
        pb_buffers_fit(&x->send, x->shape.send_count * ts);
        pb_buffers_fit(&x->recv, x->shape.recv_count * ts);
        pb_watchdog_what(pb_coll_name(x->coll), x->shape.bytes);
        pb_runner_cfg loop = {0, 0, o->max_seconds};
        pb_options_iters_for(o, &pb_policy_collective, x->shape.bytes, &loop.iters, &loop.warmup);
        group_row r = {.dev_us = NAN, .nranks = x->g->size, .nnodes = pb_world_nodes_spanned(&b->w, x->g->members, x->g->size),
                       .bytes = x->shape.bytes, .count = x->shape.count};
        snprintf(r.name, sizeof r.name, "%s", x->g->name);
        snprintf(r.link, sizeof r.link, "%s", x->g->link);
        if (x->graph) status = pb_world_agree(&b->w, capture(x));
        if (status == PB_OK) status = pb_runner_time_loop(x->g->comm, &loop, one_iteration, x, samples, &r.done);
        if (status == PB_OK) status = pb_runner_gather_stats(x->g->comm, samples, r.done, &r.st);
        if (status == PB_OK) status = device_time(x, pb_coll_exec_devtime_ops(r.done), &r.dev_us);
        if (status == PB_OK && o->check) status = validate(x, &r.wrong);
        status = pb_world_agree(&b->w, status); /* every group stops when one fails */
        if (status == PB_OK) status = pb_world_agree(&b->w, report_groups(b, x, &r, busbw_sum, rows, wrong_sum));
    }
    free(samples);
    pb_buffers_free(&x->send);
    pb_buffers_free(&x->recv);
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
    if (o->graph && o->common.rotate)
        return pb_error_usage("-G/--cuda-graph", "does not apply with --rotate 1: a graph replays fixed buffers; "
                                                 "expected one or the other");
    return PB_OK;
}

int main(int argc, char **argv)
{
    sweep_opts o = {.ncolls = 0};
    pb_options_defaults(&o.common);
    own_opts[0].help = coll_help(); /* --coll */
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
    iter_ctx x = {.be = b.be, .g = &g, .o = &o.common, .skip = pb_faults_skip_rank() == b.w.rank,
                  .events = b.be->span_begin != NULL, .graph = o.graph,
                  .in_place = o.in_place};
    cJSON *meta = cJSON_CreateObject();
    cJSON_AddStringToObject(meta, "timer", x.events ? "time: host clock, issue to stream synchronization; "
                                                      "devtime: CUDA events around a batch of back-to-back operations "
                                                      "on the communication stream, per operation"
                                                    : "time: host clock, issue to completion; devtime: not measured "
                                                      "(host backend)");
    cJSON_AddBoolToObject(meta, "cuda_graph", o.graph);
    cJSON_AddBoolToObject(meta, "in_place", o.in_place);
    cJSON_AddStringToObject(meta, "validation", o.common.check ? pb_coll_check_where(b.be) : "off");
    cJSON_AddItemToObject(meta, "buffers", pb_buffers_mode_meta(b.be, o.common.rotate));
    char iters[160];
    pb_options_iters_describe(&o.common, &pb_policy_collective, iters, sizeof iters);
    cJSON_AddStringToObject(meta, "iterations", iters);
    cJSON_AddStringToObject(meta, "groups", pb_group_groups_names()[o.groups]);
    cJSON_AddNumberToObject(meta, "group_count", g.count);
    status = pb_bench_open(&b, &o.common, cols, NCOLS, meta);
    if (status == PB_OK) status = pb_world_agree_at(b.w.comm, b.be->comm_create(g.comm, &x.comm), "comm");
    double busbw_sum = 0;
    int rows = 0;
    long long wrong = 0;
    for (int k = 0; k < o.ncolls && status == PB_OK; k++) {
        x.coll = (pb_coll)o.colls[k];
        status = sweep_collective(&b, &x, sizes, nsizes, &busbw_sum, &rows, &wrong);
    }
    if (x.comm) b.be->comm_destroy(x.comm);
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
