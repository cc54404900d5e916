/* Printing the planner's results: a ranked table for humans, JSON for tools. */
#include "plan/plan_print.h"
#include "core/version.h"

#include "plan/cluster.h"
#include "core/atomic.h"
#include "core/error.h"
#include "core/escape.h"

#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *rc_name(pb_model_recompute r)
{
    return r == PB_RECOMPUTE_FULL ? "full" : r == PB_RECOMPUTE_SELECTIVE ? "selective" : "none";
}

void pb_plan_print_setup(const pb_model_train *job, const pb_model_cluster *c, FILE *out)
{
    const pb_presets_model *m = &job->model;
    char desc[256];
    pb_cluster_describe(c, desc, sizeof desc);
    fprintf(out, "model   %s: h=%lld L=%lld heads=%lld kv_heads=%lld ffn=%lld (%s) s=%lld V=%lld%s b=%lld; %.2fe9 "
                 "params (counted from the shape: %.2fe9); %d-byte activations/gradients\n",
            m->name ? m->name : "custom", (long long)m->hidden, (long long)m->layers, (long long)m->heads,
            (long long)m->kv_heads, (long long)m->ffn, pb_presets_mlp_name(m->mlp), (long long)m->seq,
            (long long)m->vocab, m->tied ? "" : " untied", (long long)m->micro_batch, job->params / 1e9,
            pb_presets_params(m) / 1e9, job->dtype_bytes);
    fprintf(out, "job     global batch %lld sequences, schedule %s, sequence parallel %s, recompute %s\n",
            (long long)job->global_batch, pb_pp_sched_name(job->sched), job->sp ? "on" : "off", rc_name(job->recompute));
    fprintf(out, "cluster %s\n", desc);
    fprintf(out, "memory  %.0f B/param: bf16 weights %.0f + bf16 grads %.0f + fp32 master/m/v %.0f (no ZeRO); "
                 "activations per Korthikanti et al. 2022\n",
            PB_BYTES_PER_PARAM, PB_BYTES_WEIGHTS, PB_BYTES_GRADS, PB_BYTES_OPTIMIZER);
}

static void print_row(const pb_model_step *s, int rank, const int mark[3], FILE *out)
{
    int marked = mark && s->t == mark[0] && s->p == mark[1] && s->d == mark[2];
    fprintf(out, "%c%4d %4d %4d %4d %5d  %-5s %5s/%-5s/%-5s %9.4g %9.4g %6.1f %6.1f %6.1f %7.1f %7.1f\n",
            marked ? '*' : ' ', rank, s->t, s->p, s->d, s->m, pb_model_order_name(s->order), pb_link_name(s->link_t),
            pb_link_name(s->link_p), pb_link_name(s->link_d), s->step, s->compute,
            100.0 * s->m * s->c_tp / s->compute, 100.0 * s->m * s->c_pp / s->compute, 100.0 * s->c_dp / s->compute,
            100.0 * s->bubble / s->step, s->mem.total / 1e9);
}

/* Count rejections by kind of reason: the first needle (model_step.c's
 * wording) a reason holds, so "exceeds the global batch" comes before
 * "global batch"; a reason of no kind is counted as such, never dropped. */
static void summarize_rejects(const pb_model_step *s, int n, FILE *out)
{
    static const struct {
        const char *needle, *text;
    } kinds[] = {
        {"does not fit", "do not fit in GPU memory"},
        {"larger than a node", "have t larger than a node"},
        {"does not divide", "have t not dividing the heads or p (p*v) not dividing the layers"},
        {"more stages than", "have more stages than layers"},
        {"exceeds the global batch", "have d*b above the global batch"},
        {"global batch", "have a global batch not a multiple of d*b"},
    };
    enum { NKINDS = sizeof kinds / sizeof kinds[0] };
    int count[NKINDS + 1] = {0}; /* [NKINDS]: of no kind */
    for (int i = 0; i < n; i++) {
        if (!s[i].reject[0]) continue;
        int k = 0;
        while (k < NKINDS && !strstr(s[i].reject, kinds[k].needle)) k++;
        count[k]++;
    }
    for (int k = 0; k < NKINDS; k++)
        if (count[k]) fprintf(out, "  %d %s\n", count[k], kinds[k].text);
    if (count[NKINDS]) fprintf(out, "  %d for other reasons\n", count[NKINDS]);
    fprintf(out, "  (run without --top to list each with its reason)\n");
}

void pb_plan_print_ranking(const pb_model_step *s, int n, int top, const int mark[3], FILE *out)
{
    fprintf(out, "\n tp/pp/dp %% = that axis' communication over the ideal compute m*(t_fwd+t_bwd); "
                 "bubble %% = the fill/drain over the step ((p-1)/v slots when the stages are even)\n");
    fprintf(out, "%5s %4s %4s %4s %5s  %-5s %-17s %9s %9s %6s %6s %6s %7s %7s\n", "rank", "t", "p", "d", "m", "order",
            "links t/p/d", "step_s", "compute_s", "tp%", "pp%", "dp%", "bubble%", "mem_GB");
    int valid = 0, shown = 0;
    for (int i = 0; i < n; i++) {
        if (s[i].reject[0]) continue;
        valid++;
        int marked = mark && s[i].t == mark[0] && s[i].p == mark[1] && s[i].d == mark[2];
        if (top > 0 && shown >= top && !marked) continue;
        print_row(&s[i], valid, mark, out);
        shown++;
    }
    if (!valid) fprintf(out, "  (no configuration fits)\n");
    fprintf(out, "\nrejected (%d)%s\n", n - valid, n - valid == 0 ? "" : ":");
    if (top > 0) {
        if (n > valid) summarize_rejects(s, n, out);
        return;
    }
    for (int i = 0; i < n; i++)
        if (s[i].reject[0]) fprintf(out, "  t=%-3d p=%-3d d=%-4d %s\n", s[i].t, s[i].p, s[i].d, s[i].reject);
}

void pb_plan_print_step(const pb_model_step *s, FILE *out)
{
    fprintf(out, "\nconfiguration t=%d p=%d d=%d, m=%d micro-batches, rank order %s, links t %s, p %s, d %s", s->t,
            s->p, s->d, s->m, pb_model_order_name(s->order), pb_link_name(s->link_t), pb_link_name(s->link_p),
            pb_link_name(s->link_d));
    if (s->link_d == PB_LINK_INTER && s->d_per_node > 1) fprintf(out, " (%d a node)", s->d_per_node);
    fputc('\n', out);
    if (s->reject[0]) fprintf(out, "  REJECTED: %s\n", s->reject);
    fprintf(out, "  per micro-batch on the slowest stage (%d of 0-%d): fwd %.3f ms, bwd %.3f ms, TP comm %.3f ms, "
            "PP comm %.3f ms\n", s->slow, s->p - 1, s->t_fwd * 1e3, s->t_bwd * 1e3, s->c_tp * 1e3, s->c_pp * 1e3);
    double slot = s->t_fwd + s->t_bwd + s->c_tp + s->c_pp;
    /* The other stages' slots once each (fill and drain), over v: (p-1)/v slots when the stages are even. */
    fprintf(out, "  step = m x slot + fill/drain + DP allreduce = %d x %.3f ms + %.3f ms + %.3f ms = %.4g s\n", s->m,
            slot * 1e3, s->bubble * 1e3, s->c_dp * 1e3, s->step);
    if (s->v > 1)
        fprintf(out, "  ideal compute %.4g s; bubble %.4g s = %.1f%% of step, %.4g slots = (p-1)/v when the stages "
                "are even, v=%d virtual stages\n", s->compute, s->bubble, 100.0 * s->bubble / s->step,
                s->bubble / slot, s->v);
    else
        fprintf(out, "  ideal compute %.4g s; bubble %.4g s = %.1f%% of step, %.4g slots = p-1 when the stages are "
                "even; efficiency m/(m+p-1) = %.1f%%\n", s->compute, s->bubble, 100.0 * s->bubble / s->step,
                s->bubble / slot, 100.0 * pb_model_pipe_efficiency(s->m, s->p));
    fprintf(out, "  memory per GPU: weights %.2f + grads %.2f + optimizer %.2f + activations %.2f = %.2f GB\n",
            s->mem.weights / 1e9, s->mem.grads / 1e9, s->mem.optimizer / 1e9, s->mem.activations / 1e9,
            s->mem.total / 1e9);
}

static cJSON *step_json(const pb_model_step *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "t", s->t);
    cJSON_AddNumberToObject(o, "p", s->p);
    cJSON_AddNumberToObject(o, "d", s->d);
    cJSON_AddNumberToObject(o, "micro_batches", s->m);
    cJSON_AddStringToObject(o, "order", pb_model_order_name(s->order));
    cJSON_AddStringToObject(o, "link_t", pb_link_name(s->link_t));
    cJSON_AddStringToObject(o, "link_p", pb_link_name(s->link_p));
    cJSON_AddStringToObject(o, "link_d", pb_link_name(s->link_d));
    cJSON_AddNumberToObject(o, "d_per_node", s->d_per_node);
    cJSON_AddNumberToObject(o, "step_s", s->step);
    cJSON_AddNumberToObject(o, "compute_s", s->compute);
    cJSON_AddNumberToObject(o, "tp_comm_s", s->m * s->c_tp);
    cJSON_AddNumberToObject(o, "pp_comm_s", s->m * s->c_pp);
    cJSON_AddNumberToObject(o, "dp_comm_s", s->c_dp);
    cJSON_AddNumberToObject(o, "bubble_s", s->bubble);
    cJSON_AddNumberToObject(o, "mem_bytes", s->mem.total);
    cJSON_AddNumberToObject(o, "act_bytes", s->mem.activations);
    if (s->reject[0]) cJSON_AddStringToObject(o, "rejected", s->reject);
    return o;
}

int pb_plan_print_json(const char *path, const char *cmdline, const pb_model_train *job, const pb_model_cluster *c,
                       const pb_model_step *s, int n)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(root, "metadata");
    cJSON_AddStringToObject(meta, "command", cmdline);
    cJSON_AddStringToObject(meta, "version", pb_version_string());
    cJSON_AddStringToObject(meta, "git", pb_version_git_rev());
    cJSON *jm = cJSON_AddObjectToObject(root, "job");
    cJSON_AddStringToObject(jm, "model", job->model.name ? job->model.name : "custom");
    cJSON_AddNumberToObject(jm, "params", job->params);
    cJSON_AddNumberToObject(jm, "global_batch", (double)job->global_batch);
    cJSON *jc = cJSON_AddObjectToObject(root, "cluster");
    cJSON_AddStringToObject(jc, "name", c->name);
    cJSON_AddNumberToObject(jc, "gpus_per_node", c->gpus_per_node);
    cJSON_AddNumberToObject(jc, "intra_alpha_s", c->intra.alpha_s);
    cJSON_AddNumberToObject(jc, "intra_Bps", c->intra.bw_Bps);
    cJSON_AddNumberToObject(jc, "inter_alpha_s", c->inter.alpha_s);
    cJSON_AddNumberToObject(jc, "inter_Bps", c->inter.bw_Bps);
    cJSON_AddNumberToObject(jc, "flops", c->flops);
    cJSON_AddNumberToObject(jc, "mem_bytes", c->mem_bytes);
    cJSON *arr = cJSON_AddArrayToObject(root, "configurations");
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(arr, step_json(&s[i]));
    char *raw = cJSON_Print(root);
    cJSON_Delete(root);
    char *text = raw ? pb_escape_utf8(raw) : NULL; /* invalid UTF-8 in an argument: still valid JSON */
    cJSON_free(raw);
    if (!text) return pb_fail(PB_ERR_ENV, "out of memory building JSON");
    char tmp[4096];
    FILE *fp = pb_atomic_open(path, tmp, sizeof tmp);
    int ok = fp && fputs(text, fp) >= 0 && fputc('\n', fp) != EOF;
    free(text);
    return fp ? pb_atomic_commit(fp, tmp, path, ok) : PB_ERR_ENV;
}
