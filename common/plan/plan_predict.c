/* plan --fit, second half: predict each dp_allreduce, tp_layer, pp_pipeline,
 * hybrid_3d, fsdp_step, cp_attention and moe_layer row of a run from its measured compute plus the modeled
 * communication (model.h with the fitted links), print predicted vs measured,
 * and write benchmark,row,predicted_us,measured_us,rel_error. */
#include "plan/plan_predict.h"
#include "core/version.h"

#include "core/csv.h"
#include "core/atomic.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/escape.h"
#include "core/grow.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    char bench[16];
    char label[96];
    char link[16];
    double pred_us, meas_us;
} prediction;

typedef struct {
    prediction *v;
    int n, cap;
} predvec;

static int push(predvec *pv, const char *bench, const char *label, const char *link, double pred_us, double meas_us)
{
    prediction *g = pb_grow(pv->v, &pv->cap, pv->n, sizeof *g, 32);
    if (!g) return pb_fail(PB_ERR_ENV, "out of memory");
    pv->v = g;
    prediction *p = &pv->v[pv->n++];
    snprintf(p->bench, sizeof p->bench, "%s", bench);
    snprintf(p->label, sizeof p->label, "%s", label);
    snprintf(p->link, sizeof p->link, "%s", link);
    p->pred_us = pred_us;
    p->meas_us = meas_us;
    return PB_OK;
}

static int num(const pb_csv *t, int r, const char *col, double *v) { return pb_csv_num(t, r, col, v) == PB_OK; }

/* Overlap column values that mean "none". */
static int overlapped(const char *v)
{
    return *v && strcmp(v, "none") != 0 && strcmp(v, "off") != 0 && strcmp(v, "0") != 0 && strcmp(v, "no") != 0;
}

/* DP: step = compute + ring allreduce(grad_bytes, n). With overlap, the
 * allreduce can hide behind backward (2/3 of compute). */
static int predict_dp(const pb_csv *t, int r, const pb_plan_fit_fitted *f, predvec *pv)
{
    double n, S, comp, step;
    pb_model_link l;
    char used[16], label[96];
    const char *cls = pb_csv_get(t, r, "link_class");
    if (!num(t, r, "nranks", &n) || !num(t, r, "grad_bytes", &S) || !num(t, r, "compute_us", &comp) ||
        !num(t, r, "step_us", &step) || pb_plan_fit_fitted_link(f, cls, 1, &l, used, sizeof used))
        return PB_ERR_CHECK;
    double comm = pb_model_t_ring_allreduce(S, (int)n, l) * 1e6;
    const char *ov = pb_csv_get(t, r, "overlap");
    double pred = overlapped(ov) ? fmax(comp, comp / 3.0 + comm) : comp + comm;
    snprintf(label, sizeof label, "n=%d %s grad_bytes=%.0f%s%s", (int)n, cls, S, *ov ? " overlap=" : "", ov);
    return push(pv, "dp_allreduce", label, used, pred, step);
}

/* TP, per layer as tp_layer writes every time and byte count: 4 allreduces
 * (or 4 AG + 4 RS), 8(t-1) latency terms, and the row's comm_bytes_per_rank
 * at B (an older file without it: 8*b*s*h*(t-1)/t elements of its dtype). */
static int predict_tp(const pb_csv *t, int r, const pb_plan_fit_fitted *f, predvec *pv)
{
    double tp, comp, step, bytes, b, s, h;
    pb_model_link l;
    char used[16], label[96];
    const char *cls = pb_csv_get(t, r, "link_class"), *mode = pb_csv_get(t, r, "mode");
    if (!num(t, r, "tp", &tp) || !num(t, r, "compute_us", &comp) || !num(t, r, "step_us", &step) ||
        pb_plan_fit_fitted_link(f, cls, 1, &l, used, sizeof used))
        return PB_ERR_CHECK;
    if (!num(t, r, "comm_bytes_per_rank", &bytes)) {
        const char *dt = pb_csv_get(t, r, "dtype");
        double dsz = !strcmp(dt, pb_dtype_name(PB_BFLOAT16)) || !strcmp(dt, pb_dtype_name(PB_FLOAT16)) ? 2 : 4;
        if (!num(t, r, "batch", &b) || !num(t, r, "seq", &s) || !num(t, r, "hidden", &h)) return PB_ERR_CHECK;
        bytes = pb_model_tp_elems_per_rank_layer(b, s, h, (int)tp) * dsz;
    }
    double comm = tp > 1 ? (8.0 * (tp - 1) * l.alpha_s + bytes / l.bw_Bps) * 1e6 : 0.0;
    snprintf(label, sizeof label, "t=%d %s %s bytes_per_rank=%.0f", (int)tp, cls, *mode ? mode : "allreduce", bytes);
    return push(pv, "tp_layer", label, used, comp + comm, step);
}

/* PP: (m+p-1) slots of t_fwd + t_bwd + 2 transfers of act_bytes (blocking
 * sends: each slot pays its transfer). */
static int predict_pp(const pb_csv *t, int r, const pb_plan_fit_fitted *f, predvec *pv)
{
    double p, m, act, tf, tb, step;
    pb_model_link l;
    char used[16], label[96];
    const char *cls = pb_csv_get(t, r, "link_class");
    if (!num(t, r, "stages", &p) || !num(t, r, "micro_batches", &m) || !num(t, r, "act_bytes", &act) ||
        !num(t, r, "t_fwd_us", &tf) || !num(t, r, "t_bwd_us", &tb) || !num(t, r, "step_us", &step) ||
        pb_plan_fit_fitted_link(f, cls, 0, &l, used, sizeof used))
        return PB_ERR_CHECK;
    double c = p > 1 ? 2.0 * pb_model_t_p2p(act, l) * 1e6 : 0.0;
    double pred = (m + p - 1) * (tf + tb + c);
    snprintf(label, sizeof label, "p=%d m=%d %s %s act_bytes=%.0f", (int)p, (int)m, pb_csv_get(t, r, "schedule"), cls,
             act);
    return push(pv, "pp_pipeline", label, used, pred, step);
}

/* 3D (hybrid_3d): the pipeline's (m+p-1) slots, each one micro-batch's
 * compute, TP collectives and stage transfers, then the DP allreduce:
 *   step = (m+p-1)/m * (compute + TP + PP) + DP
 * TP: the row's tp_bytes at B plus 2(t-1) latencies for each of the 4
 * collectives of a layer, per layer of the stage and micro-batch; PP: one
 * send and one receive of pp_bytes/m per micro-batch; DP: dp_bytes (already
 * the ring's 2(d-1)/d share) at B plus 2(d-1) latencies. Each axis uses the
 * fit of its own link class. */
static int predict_hybrid(const pb_csv *t, int r, const pb_plan_fit_fitted *f, predvec *pv)
{
    double tp, pp, dp, m, layers, comp, step, tpb, ppb, dpb;
    pb_model_link lt, lp, ld;
    char used[16], label[96];
    if (!num(t, r, "tp", &tp) || !num(t, r, "pp", &pp) || !num(t, r, "dp", &dp) || !num(t, r, "micro_batches", &m) ||
        !num(t, r, "layers", &layers) || !num(t, r, "compute_us", &comp) || !num(t, r, "step_us", &step) ||
        !num(t, r, "tp_bytes", &tpb) || !num(t, r, "pp_bytes", &ppb) || !num(t, r, "dp_bytes", &dpb) || m < 1 ||
        pb_plan_fit_fitted_link(f, pb_csv_get(t, r, "tp_link"), 1, &lt, used, sizeof used) ||
        pb_plan_fit_fitted_link(f, pb_csv_get(t, r, "pp_link"), 0, &lp, used, sizeof used) ||
        pb_plan_fit_fitted_link(f, pb_csv_get(t, r, "dp_link"), 1, &ld, used, sizeof used))
        return PB_ERR_CHECK;
    double tp_s = tp > 1 ? m * (layers / pp) * 4.0 * 2.0 * (tp - 1) * lt.alpha_s + tpb / lt.bw_Bps : 0.0;
    double pp_s = pp > 1 ? 2.0 * m * pb_model_t_p2p(ppb / m, lp) : 0.0;
    double dp_s = dp > 1 ? 2.0 * (dp - 1) * ld.alpha_s + dpb / ld.bw_Bps : 0.0;
    double pred = (m + pp - 1) / m * (comp + (tp_s + pp_s) * 1e6) + dp_s * 1e6;
    snprintf(label, sizeof label, "t=%d p=%d d=%d m=%d %s", (int)tp, (int)pp, (int)dp, (int)m,
             pb_csv_get(t, r, "placement"));
    return push(pv, "hybrid_3d", label, "per axis", pred, step);
}

/* A dtype column's element size, or 0 when it names none (a missing or empty
 * cell is not parsed: the parser would print a usage line for it). */
static double element_bytes(const pb_csv *t, int r, const char *col)
{
    const char *text = pb_csv_get(t, r, col);
    pb_dtype d;
    return text && *text && pb_dtype_parse(col, text, &d) == PB_OK ? (double)pb_dtype_size(d) : 0.0;
}

/* FSDP (fsdp_step): the planner's step model (pb_model_fsdp_step) from the
 * row's measured compute, split as the benchmark splits it (a layer's
 * forward a third of its compute, its backward two), and each layer's
 * all-gather of n*S parameter elements and reduce-scatter of n*S gradient
 * elements over the shard group's fitted link; with r replicas, the shard's
 * all-reduce over them on the inter-node link where one was fitted. */
static int predict_fsdp(const pb_csv *t, int r, const pb_plan_fit_fitted *f, predvec *pv)
{
    double n, reps, layers, S, comp, step;
    pb_model_link l, across;
    char used[16], spare[16], label[96];
    const char *cls = pb_csv_get(t, r, "link_class"), *prefetch = pb_csv_get(t, r, "prefetch");
    double pes = element_bytes(t, r, "compute_dtype"), ges = element_bytes(t, r, "dtype");
    if (!num(t, r, "shard_group", &n) || !num(t, r, "replicas", &reps) || !num(t, r, "layers", &layers) ||
        !num(t, r, "shard_elems", &S) || !num(t, r, "compute_us", &comp) || !num(t, r, "step_us", &step) ||
        layers < 1 || !pes || !ges || pb_plan_fit_fitted_link(f, cls, 1, &l, used, sizeof used))
        return PB_ERR_CHECK;
    if (reps <= 1 || pb_plan_fit_fitted_link(f, "inter", 1, &across, spare, sizeof spare)) across = l;
    pb_model_fsdp_layer k;
    pb_model_fsdp_comm(n * S * pes, n * S * ges, (int)n, (int)reps, l, across, &k);
    k.fwd = comp * 1e-6 / (3.0 * layers);
    k.bwd = 2.0 * k.fwd;
    double pred = pb_model_fsdp_step((int64_t)layers, &k, strcmp(prefetch, "on") == 0) * 1e6;
    snprintf(label, sizeof label, "n=%d r=%d %s L=%d prefetch=%s", (int)n, (int)reps, cls, (int)layers, prefetch);
    return push(pv, "fsdp_step", label, used, pred, step);
}

/* CP (cp_attention): the ring step model (pb_model_cp_step) per layer, from
 * the row's measured compute split as the benchmark splits it (a block's
 * forward 1/3.5 of its share, its backward 2.5/3.5), every K/V block and
 * accumulator a point-to-point transfer of transfer_bytes on the ring's
 * fitted link; overlap on or off as the row says. */
static int predict_cp(const pb_csv *t, int r, const pb_plan_fit_fitted *f, predvec *pv)
{
    double c, layers, comp, step, bytes;
    pb_model_link l;
    char used[16], label[96];
    const char *cls = pb_csv_get(t, r, "link_class"), *overlap = pb_csv_get(t, r, "overlap");
    if (!num(t, r, "cp", &c) || !num(t, r, "layers", &layers) || !num(t, r, "compute_us", &comp) ||
        !num(t, r, "step_us", &step) || !num(t, r, "transfer_bytes", &bytes) || c < 1 || layers < 1 ||
        pb_plan_fit_fitted_link(f, cls, 0, &l, used, sizeof used))
        return PB_ERR_CHECK;
    double per = comp * 1e-6 / (layers * c), xfer = c > 1 ? pb_model_t_p2p(bytes, l) : 0.0;
    pb_model_cp_block blk = {.fwd = per / 3.5, .bwd = 2.5 * per / 3.5, .kv = xfer, .dkv = xfer};
    double pred = layers * pb_model_cp_step((int)c, &blk, strcmp(overlap, "on") == 0) * 1e6;
    snprintf(label, sizeof label, "c=%d %s L=%d block=%.0f overlap=%s", (int)c, cls, (int)layers, bytes, overlap);
    return push(pv, "cp_attention", label, used, pred, step);
}

/* MoE (moe_layer): the row's measured compute (the step outside its
 * all-to-alls) plus the MoE model's four all-to-alls a layer
 * (pb_model_moe_a2a), each moving the heaviest rank's imbalance x
 * bytes_per_a2a over the EP group's fitted link: the all-to-all model
 * checked against the step it sits in. */
static int predict_moe(const pb_csv *t, int r, const pb_plan_fit_fitted *f, predvec *pv)
{
    double n, layers, comp, step, bytes, imbalance;
    pb_model_link l;
    char used[16], label[96];
    const char *cls = pb_csv_get(t, r, "link_class");
    if (!num(t, r, "ep_group", &n) || !num(t, r, "layers", &layers) || !num(t, r, "compute_us", &comp) ||
        !num(t, r, "step_us", &step) || !num(t, r, "bytes_per_a2a", &bytes) || !num(t, r, "imbalance", &imbalance) ||
        n < 1 || layers < 1 || pb_plan_fit_fitted_link(f, cls, 1, &l, used, sizeof used))
        return PB_ERR_CHECK;
    pb_model_moe_layer m = {.a2a_bytes = bytes, .imbalance = imbalance, .n = (int)n};
    double pred = comp + 4.0 * layers * pb_model_moe_a2a(&m, l) * 1e6;
    snprintf(label, sizeof label, "n=%d %s L=%d skew=%s imbalance=%.2f", (int)n, cls, (int)layers,
             pb_csv_get(t, r, "skew"), imbalance);
    return push(pv, "moe_layer", label, used, pred, step);
}

typedef int (*predictor)(const pb_csv *, int, const pb_plan_fit_fitted *, predvec *);

typedef struct {
    predictor fn;
    const pb_plan_fit_fitted *f;
    predvec *pv;
    FILE *out;
} predict_ctx;

/* Every row of one benchmark CSV (pb_plan_fit_csv_fn). */
static int predict_file(void *arg, const char *path, const pb_csv *t)
{
    predict_ctx *c = arg;
    int st = PB_OK, skipped = 0;
    for (int r = 0; r < t->nrows && st != PB_ERR_ENV; r++) {
        st = c->fn(t, r, c->f, c->pv);
        if (st == PB_ERR_CHECK) skipped++, st = PB_OK;
    }
    if (skipped) fprintf(c->out, "note: %s: %d rows lack columns or a fitted link: skipped\n", path, skipped);
    return st;
}

static int predict_kind(const char *dir, const char *prefix, predictor fn, const pb_plan_fit_fitted *f, predvec *pv, FILE *out)
{
    predict_ctx c = {fn, f, pv, out};
    return pb_plan_fit_each_csv(dir, prefix, out, predict_file, &c);
}

static double rel_err(const prediction *p) { return p->meas_us > 0 ? (p->pred_us - p->meas_us) / p->meas_us : NAN; }

static int write_csv(const char *path, const predvec *pv, const char *cmdline)
{
    char tmp[4096];
    FILE *fp = pb_atomic_open(path, tmp, sizeof tmp);
    if (!fp) return PB_ERR_ENV;
    time_t now = time(NULL);
    char date[64];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S%z", localtime(&now));
    fputs("# command: ", fp);
    pb_escape_fputs(fp, pb_escape_csv_comment, cmdline);
    fprintf(fp, "\n# date: %s\n# git: %s\n", date, pb_version_git_rev());
    fprintf(fp, "benchmark,row,predicted_us,measured_us,rel_error\n");
    /* a label holds strings read from result files: one field each */
    for (int i = 0; i < pv->n; i++) {
        pb_escape_fputs(fp, pb_escape_csv_field, pv->v[i].bench);
        fputc(',', fp);
        pb_escape_fputs(fp, pb_escape_csv_field, pv->v[i].label);
        fprintf(fp, ",%.3f,%.3f,%.5f\n", pv->v[i].pred_us, pv->v[i].meas_us, rel_err(&pv->v[i]));
    }
    fputs("# complete\n", fp); /* as the benchmarks' CSVs: acceptance trusts no file without it */
    return pb_atomic_commit(fp, tmp, path, !ferror(fp));
}

int pb_plan_predict(const char *dir, const pb_plan_fit_fitted *f, const char *csv_path, const char *cmdline, FILE *out)
{
    predvec pv = {0};
    int st = predict_kind(dir, "dp_allreduce", predict_dp, f, &pv, out);
    if (st == PB_OK) st = predict_kind(dir, "tp_layer", predict_tp, f, &pv, out);
    if (st == PB_OK) st = predict_kind(dir, "pp_pipeline", predict_pp, f, &pv, out);
    if (st == PB_OK) st = predict_kind(dir, "hybrid_3d", predict_hybrid, f, &pv, out);
    if (st == PB_OK) st = predict_kind(dir, "fsdp_step", predict_fsdp, f, &pv, out);
    if (st == PB_OK) st = predict_kind(dir, "cp_attention", predict_cp, f, &pv, out);
    if (st == PB_OK) st = predict_kind(dir, "moe_layer", predict_moe, f, &pv, out);
    if (st == PB_OK) {
        fprintf(out, "\npredicted step time (measured compute + modeled communication) vs measured\n");
        fprintf(out, "%-12s %-52s %-11s %14s %14s %9s\n", "benchmark", "row", "link/fit", "predicted_us",
                "measured_us", "rel_err");
        for (int i = 0; i < pv.n; i++) {
            const prediction *p = &pv.v[i];
            fprintf(out, "%-12s %-52s %-11s %14.1f %14.1f %+8.1f%%\n", p->bench, p->label, p->link, p->pred_us,
                    p->meas_us, 100.0 * rel_err(p));
        }
        if (pv.n == 0)
            fprintf(out, "(no dp_allreduce, tp_layer, pp_pipeline, hybrid_3d, fsdp_step, cp_attention or moe_layer rows "
                         "to predict)\n");
        if (csv_path) st = write_csv(csv_path, &pv, cmdline);
    }
    free(pv.v);
    return st;
}
