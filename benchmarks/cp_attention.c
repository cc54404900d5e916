/* cp_attention: context parallelism, ring attention over CP groups of c
 * ranks: per iteration every layer's attention forward and backward with the
 * K/V blocks (and, backward, the dK/dV accumulators) travelling around the
 * ring by point-to-point, overlapped with the blocks' attention or not
 * (common/workload/cp.h). Per configuration: compute alone, communication
 * alone, the step, exposed communication and the planner's step beside it.
 * See docs/cp_attention.md. */
#include "harness/bench.h"
#include "core/error.h"
#include "core/mem.h"
#include "core/parse.h"
#include "core/stats.h"
#include "core/timing.h"
#include "core/watchdog.h"
#include "harness/runner.h"
#include "plan/model.h"
#include "workload/cp.h"
#include "workload/ordering.h"
#include "workload/workload_opts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct cp_opts {
    pb_options common;
    pb_workload_opts work;
    int overlap[PB_CP_OVERLAP_COUNT], noverlap; /* in the order given */
    int cp;                                     /* --cp: ranks per ring; 0 = every rank */
    int64_t check_rows;                         /* --check-rows: PB_CP_CHECK_AUTO, _ALL or N */
} cp_opts;

enum { O_CP, O_OVERLAP, O_CHECK_ROWS };

static const pb_options_opt own_opts[] = {
    {"cp", 0, "C", "ranks of a CP group (a ring); it must divide the ranks and the sequence (default: every rank)",
     O_CP},
    {"overlap", 0, "MODE", "on (each step's exchange runs under the block's attention), off (exchange, wait, then "
                           "attention), or off,on (default)", O_OVERLAP},
    {"check-rows", 0, "ROWS", "what -c 1 checks: all (O, dQ, dK and dV of every row), N (O and dQ of N rows of each "
                              "block a head, spread evenly; dK and dV unchecked), or auto (default: all while the "
                              "host reference stays within 2^33 row-key-dim products a rank, else as many rows as fit)",
     O_CHECK_ROWS},
};

#define CHECK_ROWS_MAX (1 << 30)

static int parse_check_rows(const char *option, const char *arg, int64_t *out)
{
    long long v = 0;
    if (arg && strcmp(arg, "auto") == 0) *out = PB_CP_CHECK_AUTO;
    else if (arg && strcmp(arg, "all") == 0) *out = PB_CP_CHECK_ALL;
    else if (arg && !pb_parse_decimal_problem(arg, 0) && (v = strtoll(arg, NULL, 10)) >= 1 && v <= CHECK_ROWS_MAX)
        *out = v;
    else
        return pb_error_usage(option, "'%s' is not accepted; expected auto, all or a number of rows in [1, %d]",
                              arg ? arg : "", CHECK_ROWS_MAX);
    return PB_OK;
}

static const char *const overlap_names[] = {"off", "on", NULL}; /* pb_cp_overlap order */

static int handle(void *ctx, int id, const char *option, const char *arg)
{
    cp_opts *o = ctx;
    long long v = 0;
    switch (id) {
    case O_CP: PB_TRY(pb_parse_int(option, arg, 1, 1 << 20, &v)); o->cp = (int)v; return PB_OK;
    case O_OVERLAP: return pb_parse_choice_list(option, arg, overlap_names, 0, o->overlap, &o->noverlap);
    case O_CHECK_ROWS: return parse_check_rows(option, arg, &o->check_rows);
    default: return pb_error_usage(option, "not handled");
    }
}

enum {
    COL_NRANKS,
    COL_CP,
    COL_GROUPS,
    COL_LINK_CLASS,
    COL_MODEL,
    COL_LAYERS,
    COL_HIDDEN,
    COL_HEADS,
    COL_KV_HEADS,
    COL_SEQ,
    COL_BLOCK_TOKENS,
    COL_MICRO_BATCH,
    COL_COMPUTE_DTYPE,
    COL_OVERLAP,
    COL_ITERS,
    COL_COMPUTE_US,
    COL_COMM_US,
    COL_STEP_US,
    COL_EXPOSED_US,
    COL_OVERHEAD,
    COL_PREDICTED_STEP_US,
    COL_PREDICTED_EXPOSED_US,
    COL_WAIT_US,
    COL_TRANSFER_BYTES,
    COL_TRANSFERS,
    COL_GFLOPS,
    COL_WRONG,
    COL_WRONG_OUT,
    COL_WRONG_GRADS,
    NCOLS
};

static const pb_report_column cols[] = {
    [COL_NRANKS] = {"nranks", "ranks", "", PB_COL_INT, 5, 0, ""},
    [COL_CP] = {"cp", "cp", "", PB_COL_INT, 4, 0, ""},
    [COL_GROUPS] = {"groups", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_LINK_CLASS] = {"link_class", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_MODEL] = {"model", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_LAYERS] = {"layers", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_HIDDEN] = {"hidden", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_HEADS] = {"heads", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_KV_HEADS] = {"kv_heads", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_SEQ] = {"seq", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_BLOCK_TOKENS] = {"block_tokens", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_MICRO_BATCH] = {"micro_batch", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_COMPUTE_DTYPE] = {"compute_dtype", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_OVERLAP] = {"overlap", "overlap", "", PB_COL_STR, 7, 0, ""},
    [COL_ITERS] = {"iters", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_COMPUTE_US] = {"compute_us", "compute", "(us)", PB_COL_FLOAT, 10, 0, "us"},
    [COL_COMM_US] = {"comm_us", "comm", "(us)", PB_COL_FLOAT, 10, 0, "us"},
    [COL_STEP_US] = {"step_us", "step", "(us)", PB_COL_FLOAT, 10, 0, "us"},
    [COL_EXPOSED_US] = {"exposed_us", "exposed", "(us)", PB_COL_FLOAT, 10, 0, "us"},
    [COL_OVERHEAD] = {"overhead", "overhead", "", PB_COL_FLOAT, 8, 3, ""},
    [COL_PREDICTED_STEP_US] = {"predicted_step_us", "predict", "(us)", PB_COL_FLOAT, 10, 0, "us"},
    [COL_PREDICTED_EXPOSED_US] = {"predicted_exposed_us", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_WAIT_US] = {"wait_us", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_TRANSFER_BYTES] = {"transfer_bytes", "block", "(B)", PB_COL_INT, 9, 0, "B"},
    [COL_TRANSFERS] = {"transfers", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_GFLOPS] = {"gflops", NULL, NULL, PB_COL_FLOAT, 0, 0, "GFLOP/s"},
    [COL_WRONG] = {"wrong", "#wrong", "", PB_COL_INT, 6, 0, ""},
    [COL_WRONG_OUT] = {"wrong_out", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_WRONG_GRADS] = {"wrong_grads", NULL, NULL, PB_COL_INT, 0, 0, ""},
};
_Static_assert(sizeof cols / sizeof cols[0] == NCOLS, "one column per COL_ index");

/* The run: the CP groups and their communicator. */
typedef struct run_ctx {
    pb_bench *b;
    cp_opts *o;
    const pb_compute *eng;
    int c, groups, group, index;
    int64_t check_rows; /* validation's rows of a block a head (pb_cp_check_rows) */
    MPI_Comm ring_mpi;
    pb_comm *ring;
    const char *link;
    double *samples, *t[3]; /* per timed iteration: compute, comm, step */
    double wait_sum;
    pb_cp *f;
} run_ctx;

typedef struct row {
    pb_cp_overlap overlap;
    int iters;
    pb_stats compute, comm, step;
    double wait_us;
    long long wrong_out, wrong_grads;
} row;

/* Time one phase from an aligned start (the barrier is outside the timed region). */
static int timed(run_ctx *r, int (*fn)(pb_cp *), double *us)
{
    MPI_Barrier(r->b->w.comm);
    double t0 = pb_timing_now_us();
    int status = fn(r->f);
    *us = pb_timing_now_us() - t0;
    return status;
}

/* The phases back to back in each iteration, so load drift on a shared
 * machine hits them alike and exposed = step - compute is a paired difference. */
static int it_all(void *a, int iter)
{
    run_ctx *r = a;
    double us[3];
    pb_cp_timing t;
    PB_TRY(timed(r, pb_cp_compute, &us[0]));
    PB_TRY(timed(r, pb_cp_comm, &us[1]));
    PB_TRY(timed(r, pb_cp_step, &us[2]));
    pb_cp_last_timing(r->f, &t);
    if (iter < 0) return PB_OK;
    for (int k = 0; k < 3; k++) r->t[k][iter] = us[k];
    r->wait_sum += t.wait_us;
    return PB_OK;
}

static pb_cp_config config_of(const run_ctx *r, pb_cp_overlap ov)
{
    const pb_presets_model *m = &r->o->work.model;
    return (pb_cp_config){.eng = r->eng, .be = r->b->be, .ring = r->ring, .b = m->micro_batch, .seq = m->seq,
                          .heads = m->heads, .kv_heads = m->kv_heads, .head_dim = m->hidden / m->heads,
                          .dtype = r->o->work.compute_dtype, .layers = m->layers, .seed = r->o->work.seed,
                          .group = r->group, .rank = r->b->w.rank, .overlap = ov,
                          .check_rows = r->check_rows};
}

static int memory_check(const run_ctx *r, const pb_cp_config *cc)
{
    uint64_t eng = 0, host = 0;
    pb_cp_bytes(cc, &eng, &host);
    char what[160];
    snprintf(what, sizeof what, "cp_attention (%d ranks on this node x (Q, O, dO, dQ, K/V blocks, scores%s))",
             r->b->w.local_size, r->o->common.check ? ", validation" : "");
    pb_mem_need need = {r->eng->mem, r->eng->mem_info, eng, r->o->common.check ? host : 0};
    return pb_bench_mem_require(r->b, &need, what);
}

static int measure(run_ctx *r, row *out)
{
    const pb_options *c = &r->o->common;
    pb_runner_cfg loop = {c->iters, c->warmup, c->max_seconds};
    int done = 0;
    r->wait_sum = 0;
    pb_watchdog_what("cp step", 0);
    PB_TRY(pb_runner_time_loop(r->b->w.comm, &loop, it_all, r, r->samples, &done));
    pb_stats *st[3] = {&out->compute, &out->comm, &out->step};
    for (int k = 0; k < 3; k++) PB_TRY(pb_runner_gather_stats(r->b->w.comm, r->t[k], done, st[k]));
    out->iters = done;
    out->wait_us = pb_world_max(&r->b->w, r->wait_sum / (done > 0 ? done : 1));
    if (!c->check) return PB_OK;
    pb_watchdog_arm(0, "validate");
    int status = pb_cp_validate(r->f, r->ring_mpi, pb_faults_corrupt_rank() == r->b->w.rank, &out->wrong_out,
                                &out->wrong_grads);
    pb_watchdog_disarm();
    MPI_Allreduce(MPI_IN_PLACE, &out->wrong_out, 1, MPI_LONG_LONG, MPI_SUM, r->b->w.comm);
    MPI_Allreduce(MPI_IN_PLACE, &out->wrong_grads, 1, MPI_LONG_LONG, MPI_SUM, r->b->w.comm);
    return status;
}

/* The planner's step (plan/model.h) from this run's own compute and
 * exchanges: a block's forward 1/3.5 of the compute per block, its backward
 * 2.5/3.5 (their FLOPs); each block transfer an equal share of the
 * communication alone. */
static double predicted_step(const run_ctx *r, const row *w, const pb_cp_config *cc)
{
    double L = (double)cc->layers, blocks = L * r->c, transfers = L * pb_cp_transfers(r->c);
    double per = w->compute.rankmax / blocks, xfer = transfers > 0 ? w->comm.rankmax / transfers : 0.0;
    pb_model_cp_block blk = {.fwd = per / 3.5, .bwd = 2.5 * per / 3.5, .kv = xfer, .dkv = xfer};
    return L * pb_model_cp_step(r->c, &blk, w->overlap == PB_CP_OVERLAP_ON);
}

static int report(run_ctx *r, const row *w, const pb_cp_config *cc)
{
    if (!r->b->rep) return PB_OK;
    const pb_workload_opts *wo = &r->o->work;
    const pb_presets_model *m = &wo->model;
    pb_attn_block blk;
    pb_cp_block_shape(cc, &blk);
    double compute = w->compute.rankmax, exposed = w->step.rankmax - compute, pred = predicted_step(r, w, cc);
    int check = r->o->common.check;
    pb_report_value v[NCOLS] = {
        [COL_NRANKS] = PB_I(r->b->w.size),
        [COL_CP] = PB_I(r->c),
        [COL_GROUPS] = PB_I(r->groups),
        [COL_LINK_CLASS] = PB_S(r->link),
        [COL_MODEL] = PB_S(wo->preset),
        [COL_LAYERS] = PB_I(m->layers),
        [COL_HIDDEN] = PB_I(m->hidden),
        [COL_HEADS] = PB_I(m->heads),
        [COL_KV_HEADS] = PB_I(m->kv_heads),
        [COL_SEQ] = PB_I(m->seq),
        [COL_BLOCK_TOKENS] = PB_I(blk.sq),
        [COL_MICRO_BATCH] = PB_I(m->micro_batch),
        [COL_COMPUTE_DTYPE] = PB_S(pb_dtype_name(blk.t)),
        [COL_OVERLAP] = PB_S(pb_cp_overlap_name(w->overlap)),
        [COL_ITERS] = PB_I(w->iters),
        [COL_COMPUTE_US] = PB_F(compute),
        [COL_COMM_US] = PB_F(w->comm.rankmax),
        [COL_STEP_US] = PB_F(w->step.rankmax),
        [COL_EXPOSED_US] = PB_F(exposed),
        [COL_OVERHEAD] = PB_F(compute > 0 ? exposed / compute : 0),
        [COL_PREDICTED_STEP_US] = PB_F(pred),
        [COL_PREDICTED_EXPOSED_US] = PB_F(pred - compute),
        [COL_WAIT_US] = PB_F(w->wait_us),
        [COL_TRANSFER_BYTES] = PB_I(pb_cp_block_bytes(blk.b, m->seq, r->c, blk.kv_heads, blk.hd,
                                                      pb_dtype_size(blk.t))),
        [COL_TRANSFERS] = PB_I((int64_t)pb_cp_transfers(r->c) * m->layers),
        [COL_GFLOPS] = PB_F(compute > 0 ? pb_cp_flops(r->f) / compute / 1e3 : 0),
        [COL_WRONG] = PB_I(check ? w->wrong_out + w->wrong_grads : -1),
        [COL_WRONG_OUT] = PB_I(check ? w->wrong_out : -1),
        [COL_WRONG_GRADS] = PB_I(check ? w->wrong_grads : -1),
    };
    PB_TRY(pb_report_row(r->b->rep, v));
    const char *why = pb_stats_diff_noise(&w->step, &w->compute, exposed, w->iters, MPI_Wtick() * 1e6);
    if (why || exposed < 0)
        pb_report_note(r->b->rep, "untrustworthy: overhead %.3f (overlap %s, cp %d): exposed = step - compute = "
                       "%.3g us: %s%s%s; use more iterations (-n) or a longer sequence", v[COL_OVERHEAD].f,
                       pb_cp_overlap_name(w->overlap), r->c, exposed,
                       exposed < 0 ? "negative (the step measured shorter than its compute)" : "",
                       exposed < 0 && why ? ", " : "", why ? why : "");
    return PB_OK;
}

/* One configuration: create, measure, validate, report. */
static int run_config(run_ctx *r, pb_cp_overlap ov, long long *wrong)
{
    pb_cp_config cc = config_of(r, ov);
    PB_TRY(memory_check(r, &cc));
    row w = {.overlap = ov};
    int status = pb_world_agree(&r->b->w, pb_cp_create(&cc, &r->f));
    if (status == PB_OK) status = measure(r, &w);
    status = pb_world_agree(&r->b->w, status);
    if (status == PB_OK) status = report(r, &w, &cc);
    status = pb_world_agree(&r->b->w, status); /* a row rank 0 could not write (a full disk) stops every rank */
    pb_cp_destroy(r->f);
    r->f = NULL;
    *wrong += w.wrong_out + w.wrong_grads;
    return status;
}

static int validate_opts(pb_bench *b, cp_opts *o, run_ctx *r)
{
    PB_TRY(pb_options_validate(&o->common));
    PB_TRY(pb_workload_opts_resolve(&o->work));
    if (o->noverlap == 0) {
        o->overlap[o->noverlap++] = PB_CP_OVERLAP_OFF;
        o->overlap[o->noverlap++] = PB_CP_OVERLAP_ON;
    }
    r->c = o->cp > 0 ? o->cp : b->w.size;
    PB_TRY(pb_cp_group_of(b->w.size, r->c, b->w.rank, &r->group, &r->index));
    r->groups = b->w.size / r->c;
    PB_TRY(pb_cp_check_seq(o->work.model.seq, r->c));
    const pb_presets_model *m = &o->work.model;
    r->check_rows = pb_cp_check_rows(m->micro_batch, m->heads, m->seq, r->c, m->hidden / m->heads, o->check_rows);
    pb_layer_shape sh = pb_workload_opts_layer_shape(&o->work, o->work.model.hidden, o->work.model.seq, 1, 0);
    return pb_layer_shape_check(&sh);
}

/* The ring's communicator, and the link its ranks share (every group is a block alike). */
static int place(run_ctx *r)
{
    pb_bench *b = r->b;
    MPI_Comm_split(b->w.comm, r->group, r->index, &r->ring_mpi);
    PB_TRY(b->be->comm_create(r->ring_mpi, &r->ring));
    int *ranks = malloc(sizeof(int) * (size_t)r->c);
    PB_CHECK(ranks, PB_ERR_ENV, "out of memory");
    for (int k = 0; k < r->c; k++) ranks[k] = k;
    r->link = r->c == 1 ? "none" : pb_link_name(pb_world_link(&b->w, ranks, r->c));
    free(ranks);
    return PB_OK;
}

/* What -c 1 compares: every row's results, or a sample of rows' O and dQ. */
static const char *checked_what(const run_ctx *r)
{
    static char what[320];
    int64_t rows = r->o->work.model.seq / r->c;
    if (r->check_rows >= rows)
        return "O, dQ, dK and dV against attention over the whole sequence on the host, in double";
    const pb_presets_model *m = &r->o->work.model;
    int64_t hd = m->hidden / m->heads;
    double full = (double)m->micro_batch * (double)m->heads * (double)m->seq * (double)hd * (double)rows;
    snprintf(what, sizeof what, "O and dQ of %lld of each block's %lld rows a head against attention over the whole "
             "sequence on the host, in double; dK and dV not checked (%s: checking every row is %.3g row-key-dim "
             "products a rank)", (long long)r->check_rows, (long long)rows,
             r->o->check_rows == PB_CP_CHECK_AUTO ? "--check-rows auto, over its budget of 2^33" : "--check-rows",
             full);
    return what;
}

static void notes(run_ctx *r)
{
    if (!r->b->rep) return;
    pb_report_note(r->b->rep, "engine: %s", r->eng->describe());
    pb_report_note(r->b->rep, "context parallelism: %d ring%s of %d rank%s (%s), %lld tokens per block; no causal "
                   "mask", r->groups, r->groups == 1 ? "" : "s", r->c, r->c == 1 ? "" : "s", r->link,
                   (long long)(r->o->work.model.seq / r->c));
    pb_report_note(r->b->rep, "times: max over ranks of each rank's mean; exposed = step - compute; overhead = "
                              "exposed/compute; predict = the planner's step from this run's compute and "
                              "exchanges; block = the bytes of one K/V block (one transfer)");
    pb_ordering ord = pb_ordering_plan(r->eng, r->b->be);
    pb_report_note(r->b->rep, "ordering %s: %s", pb_ordering_name(ord),
                   ord == PB_ORDERING_STREAM
                       ? "exchanges on the communication stream, ordered against compute by CUDA events"
                       : "overlap on runs the exchanges on a communication thread (MPI_THREAD_MULTIPLE); "
                         "overlap off runs each one to completion before the block's attention");
    if (r->o->common.check) pb_report_note(r->b->rep, "validation (-c 1): %s", checked_what(r));
    pb_report_header(r->b->rep);
}

int main(int argc, char **argv)
{
    cp_opts o = {.check_rows = PB_CP_CHECK_AUTO};
    pb_options_defaults(&o.common);
    o.common.iters = 10, o.common.warmup = 2;
    pb_workload_opts_defaults(&o.work, "tiny");
    pb_options_group groups[] = {
        {"cp_attention options", own_opts, (int)(sizeof own_opts / sizeof own_opts[0]), handle, &o},
        pb_workload_opts_group(&o.work),
        pb_options_common_group(&o.common, PB_OPTS_ITERS | PB_OPTS_DATA | PB_OPTS_OUTPUT | PB_OPTS_VALIDATE),
    };
    pb_bench b;
    pb_bench_start(&b, "cp_attention", &argc, &argv, MPI_THREAD_MULTIPLE,
                   "Usage: mpirun -np N cp_attention [options]\n"
                   "Context parallelism (ring attention): the sequence split over a ring of C ranks, each layer's "
                   "attention\nforward and backward with the K/V blocks (and dK/dV) passed around the ring, "
                   "overlapped with the\nblocks' attention or not. Reports compute, comm, step, exposed comm and "
                   "the planner's step.",
                   groups, 3);
    run_ctx r = {.b = &b, .o = &o, .ring_mpi = MPI_COMM_NULL};
    int status = validate_opts(&b, &o, &r);
    if (status != PB_OK) pb_bench_finish(&b, status);
    status = pb_workload_opts_open(&b, &o.work, &o.common, cols, NCOLS, NULL, &r.eng);
    if (status == PB_OK) status = pb_world_agree_at(b.w.comm, place(&r), "comm");
    r.samples = malloc(sizeof(double) * 4 * (size_t)o.common.iters);
    if (status == PB_OK && !r.samples) status = pb_fail(PB_ERR_ENV, "out of memory for samples");
    status = pb_world_agree_at(b.w.comm, status, "samples");
    for (int k = 0; r.samples && k < 3; k++) r.t[k] = r.samples + (size_t)(k + 1) * (size_t)o.common.iters;
    long long wrong = 0;
    if (status == PB_OK && r.eng) {
        notes(&r);
        pb_load start;
        pb_load_sample(&start);
        for (int k = 0; k < o.noverlap && status == PB_OK; k++)
            status = run_config(&r, (pb_cp_overlap)o.overlap[k], &wrong);
        if (status == PB_OK) pb_bench_note_load(&b, &start);
        if (b.rep && status == PB_OK && o.common.check) {
            printf("#\n");
            pb_bench_note_wrong(b.rep, wrong, checked_what(&r));
        }
    }
    free(r.samples);
    if (r.ring) b.be->comm_destroy(r.ring);
    if (r.ring_mpi != MPI_COMM_NULL) MPI_Comm_free(&r.ring_mpi);
    if (r.eng) r.eng->finalize();
    pb_bench_finish(&b, status == PB_OK && wrong > 0 ? PB_ERR_CHECK : status);
}
