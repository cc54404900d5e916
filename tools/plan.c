/* plan: the analytical model and planner (needs no MPI).
 *
 *   plan --reproduce                          the seed documents' figures, checked
 *   plan --model M --cluster C --gpus N       rank every (t, p, d) with t*p*d = N
 *   plan ... --tp T --pp P --dp D             one configuration, term by term
 *   plan ... --fsdp world|node                the job as sharded data parallelism instead
 *   plan --fit RESULTS_DIR [--csv FILE]       fit alpha-beta, predict a run's rows
 *   plan --fit RESULTS_DIR --cluster FILE     predict a run from a calibration instead
 *   plan --calibrate RESULTS_DIR [-o FILE]    fitted links + GEMM rate as a cluster file
 *   plan --pp-simulate P,M,TF,TB,TMSG         a pipeline step simulated from stage times (us)
 *
 * Exit: 0 ok; 1 a reproduced figure differs, or no configuration is valid
 * and fits; 2 usage; 3 no sweep data to fit (or no results directory to calibrate from). */
#include "plan/cluster.h"
#include "core/error.h"
#include "core/options.h"
#include "core/escape.h"
#include "core/outpath.h"
#include "plan/model.h"
#include "core/parse.h"
#include "core/version.h"
#include "plan/plan_explain.h"
#include "plan/plan_print.h"
#include "plan/plan_reproduce.h"
#include "plan/plan_fit.h"
#include "plan/plan_fsdp.h"
#include "plan/plan_predict.h"
#include "plan/presets.h"
#include "workload/pp_schedule.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_CONFIGS 4096

typedef struct {
    int reproduce;
    const char *fit_dir, *calibrate_dir, *cluster_out, *pp_sim, *csv, *json, *model_name, *model_file, *cluster_name;
    char model_file_name[64];
    long long gpus, tp, pp, dp, top;
    pb_model_train job;
    pb_model_cluster cluster;
    /* Overrides of the preset model and cluster; < 0 = not given. */
    long long hidden, layers, heads, kv_heads, ffn, seq, vocab, micro_batch, mlp;
    double params, intra_bw, intra_lat, inter_bw, inter_bw_node, inter_lat, tflops, gpu_mem, gpn, hbm_bw;
    long long interleave;
    long long global_batch;
    int fsdp; /* --fsdp: -1 not given, 0 world, 1 node */
} options;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: plan --reproduce\n"
            "       plan --version\n"
            "       plan --model M --cluster C --gpus N [--tp T --pp P --dp D | --fsdp world|node] [options]\n"
            "       plan --fit RESULTS_DIR [--cluster FILE] [--csv FILE]\n"
            "       plan --calibrate RESULTS_DIR [-o|--cluster-out FILE]\n"
            "       plan --pp-simulate P,M,T_FWD_US,T_BWD_US,T_MSG_US [--schedule gpipe|1f1b|interleaved [--interleave V]]\n"
            "model:   --model %s, or --model-file FILE\n"
            "         --hidden H --layers L --heads A --kv-heads K --ffn F --mlp gelu|swiglu --seq S --vocab V\n"
            "         --micro-batch B --params P\n"
            "         --dtype bf16|fp16|fp32 (activations and gradients on the wire)\n"
            "cluster: --cluster %s, or a cluster file (plan --calibrate writes one)\n"
            "         --gpus-per-node G --intra-bw GB/s --intra-lat us --inter-bw GB/s --inter-lat us\n"
            "         --inter-bw-node GB/s (a node's network shared by its GPUs, instead of --inter-bw)\n"
            "         --tflops sustained-GEMM-TFLOP/s --hbm-bw GB/s --gpu-mem GB\n"
            "job:     --gpus N --global-batch SEQS --schedule gpipe|1f1b|interleaved [--interleave V]\n"
            "         --recompute none|selective|full --partition uniform|balanced|embedding\n"
            "         --sp on|off --top K (rows shown) --json FILE\n"
            "fsdp:    --fsdp world|node: the job as sharded data parallelism over every GPU (a shard group of\n"
            "         all of them, or of a node's with one replica a node) instead of a (t, p, d) grid\n",
            pb_presets_preset_names(), pb_cluster_preset_names());
}

enum {
    O_REPRO = 256, O_FIT, O_CSV, O_JSON, O_MODEL, O_CLUSTER, O_GPUS, O_TP, O_PP, O_DP, O_TOP, O_HIDDEN, O_LAYERS,
    O_HEADS, O_SEQ, O_VOCAB, O_MB, O_PARAMS, O_DTYPE, O_GPN, O_IBW, O_ILAT, O_XBW, O_XLAT, O_TFLOPS, O_MEM, O_GB,
    O_SCHED, O_RC, O_SP, O_HBM, O_VSTAGES, O_HELP, O_CALIBRATE, O_CLUSTER_OUT, O_PP_SIM, O_VERSION, O_PARTITION, O_XBW_NODE,
    O_KV_HEADS, O_FFN, O_MLP, O_MODEL_FILE, O_FSDP
};

static const struct option long_opts[] = {
    {"reproduce", no_argument, 0, O_REPRO}, {"fit", required_argument, 0, O_FIT},
    {"csv", required_argument, 0, O_CSV}, {"json", required_argument, 0, O_JSON},
    {"model", required_argument, 0, O_MODEL}, {"cluster", required_argument, 0, O_CLUSTER},
    {"gpus", required_argument, 0, O_GPUS}, {"tp", required_argument, 0, O_TP}, {"pp", required_argument, 0, O_PP},
    {"dp", required_argument, 0, O_DP}, {"top", required_argument, 0, O_TOP},
    {"hidden", required_argument, 0, O_HIDDEN}, {"layers", required_argument, 0, O_LAYERS},
    {"heads", required_argument, 0, O_HEADS}, {"seq", required_argument, 0, O_SEQ},
    {"vocab", required_argument, 0, O_VOCAB}, {"micro-batch", required_argument, 0, O_MB},
    {"params", required_argument, 0, O_PARAMS}, {"dtype", required_argument, 0, O_DTYPE},
    {"gpus-per-node", required_argument, 0, O_GPN}, {"intra-bw", required_argument, 0, O_IBW},
    {"intra-lat", required_argument, 0, O_ILAT}, {"inter-bw", required_argument, 0, O_XBW},
    {"inter-lat", required_argument, 0, O_XLAT}, {"tflops", required_argument, 0, O_TFLOPS},
    {"gpu-mem", required_argument, 0, O_MEM}, {"global-batch", required_argument, 0, O_GB},
    {"schedule", required_argument, 0, O_SCHED}, {"recompute", required_argument, 0, O_RC},
    {"sp", required_argument, 0, O_SP}, {"hbm-bw", required_argument, 0, O_HBM},
    {"interleave", required_argument, 0, O_VSTAGES}, {"help", no_argument, 0, O_HELP},
    {"calibrate", required_argument, 0, O_CALIBRATE}, {"cluster-out", required_argument, 0, O_CLUSTER_OUT},
    {"pp-simulate", required_argument, 0, O_PP_SIM}, {"version", no_argument, 0, O_VERSION},
    {"partition", required_argument, 0, O_PARTITION}, {"inter-bw-node", required_argument, 0, O_XBW_NODE},
    {"kv-heads", required_argument, 0, O_KV_HEADS}, {"ffn", required_argument, 0, O_FFN},
    {"mlp", required_argument, 0, O_MLP}, {"model-file", required_argument, 0, O_MODEL_FILE},
    {"fsdp", required_argument, 0, O_FSDP}, {0, 0, 0, 0},
};

static int choice(const char *opt, const char *arg, const char *const *names, int *out)
{
    return pb_parse_choice(opt, arg, names, out);
}

/* One option; `name` is "--" + the long name for messages. */
static int parse_one(options *o, int c, const char *arg)
{
    static const char *const dtypes[] = {"bf16", "fp16", "fp32", NULL};
    static const char *const scheds[] = {"gpipe", "1f1b", "interleaved", NULL};
    static const pb_pp_sched sched_of[] = {PB_PP_GPIPE, PB_PP_1F1B, PB_PP_INTERLEAVED};
    static const char *const rcs[] = {"none", "selective", "full", NULL};
    static const char *const onoff[] = {"off", "on", NULL};
    static const char *const parts[] = {"uniform", "balanced", "embedding", NULL};
    const long long BIG = 1LL << 40;
    int k;
    switch (c) {
    case O_REPRO: o->reproduce = 1; return PB_OK;
    case O_FIT: o->fit_dir = arg; return PB_OK;
    case O_CALIBRATE: o->calibrate_dir = arg; return PB_OK;
    case O_CLUSTER_OUT: o->cluster_out = arg; return pb_outpath_add("--cluster-out", arg);
    case O_PP_SIM: o->pp_sim = arg; return PB_OK;
    case O_CSV: o->csv = arg; return pb_outpath_add("--csv", arg);
    case O_JSON: o->json = arg; return pb_outpath_add("--json", arg);
    case O_MODEL: o->model_name = arg; o->model_file = NULL; return PB_OK;
    case O_MODEL_FILE: o->model_file = arg; o->model_name = NULL; return PB_OK;
    case O_KV_HEADS: return pb_parse_int("--kv-heads", arg, 1, 1 << 20, &o->kv_heads);
    case O_FFN: return pb_parse_int("--ffn", arg, 1, BIG, &o->ffn);
    case O_MLP: {
        static const char *const mlps[] = {"gelu", "swiglu", NULL};
        PB_TRY(choice("--mlp", arg, mlps, &k));
        o->mlp = k;
        return PB_OK;
    }
    case O_CLUSTER: o->cluster_name = arg; return PB_OK;
    case O_GPUS: return pb_parse_int("--gpus", arg, 1, 1 << 20, &o->gpus);
    case O_TP: return pb_parse_int("--tp", arg, 1, 1 << 20, &o->tp);
    case O_PP: return pb_parse_int("--pp", arg, 1, 1 << 20, &o->pp);
    case O_DP: return pb_parse_int("--dp", arg, 1, 1 << 20, &o->dp);
    case O_TOP: return pb_parse_int("--top", arg, 0, MAX_CONFIGS, &o->top);
    case O_HIDDEN: return pb_parse_int("--hidden", arg, 1, BIG, &o->hidden);
    case O_LAYERS: return pb_parse_int("--layers", arg, 1, 1 << 20, &o->layers);
    case O_HEADS: return pb_parse_int("--heads", arg, 1, 1 << 20, &o->heads);
    case O_SEQ: return pb_parse_int("--seq", arg, 1, BIG, &o->seq);
    case O_VOCAB: return pb_parse_int("--vocab", arg, 0, BIG, &o->vocab);
    case O_MB: return pb_parse_int("--micro-batch", arg, 1, BIG, &o->micro_batch);
    case O_GB: return pb_parse_int("--global-batch", arg, 1, BIG, &o->global_batch);
    case O_PARAMS: return pb_parse_double("--params", arg, 1, 1e16, &o->params);
    case O_GPN: { /* a count of GPUs: 2.5 is refused, not cut to 2 */
        long long g;
        PB_TRY(pb_parse_int("--gpus-per-node", arg, 1, 1024, &g));
        o->gpn = (double)g;
        return PB_OK;
    }
    case O_IBW: return pb_parse_double("--intra-bw", arg, 1e-6, 1e6, &o->intra_bw);
    case O_ILAT: return pb_parse_double("--intra-lat", arg, 0, 1e6, &o->intra_lat);
    case O_XBW: return pb_parse_double("--inter-bw", arg, 1e-6, 1e6, &o->inter_bw);
    case O_XLAT: return pb_parse_double("--inter-lat", arg, 0, 1e6, &o->inter_lat);
    case O_TFLOPS: return pb_parse_double("--tflops", arg, 1e-6, 1e6, &o->tflops);
    case O_MEM: return pb_parse_double("--gpu-mem", arg, 1e-3, 1e6, &o->gpu_mem);
    case O_HBM: return pb_parse_double("--hbm-bw", arg, 0, 1e6, &o->hbm_bw);
    case O_VSTAGES: return pb_parse_int("--interleave", arg, 2, 1 << 10, &o->interleave);
    case O_DTYPE: PB_TRY(choice("--dtype", arg, dtypes, &k)); o->job.dtype_bytes = k == 2 ? 4 : 2; return PB_OK;
    case O_SCHED: PB_TRY(choice("--schedule", arg, scheds, &k)); o->job.sched = sched_of[k]; return PB_OK;
    case O_RC: PB_TRY(choice("--recompute", arg, rcs, &k)); o->job.recompute = (pb_model_recompute)k; return PB_OK;
    case O_SP: PB_TRY(choice("--sp", arg, onoff, &k)); o->job.sp = k; return PB_OK;
    case O_PARTITION: PB_TRY(choice("--partition", arg, parts, &k)); o->job.partition = (pb_model_partition)k; return PB_OK;
    case O_XBW_NODE: return pb_parse_double("--inter-bw-node", arg, 1e-6, 1e6, &o->inter_bw_node);
    case O_FSDP: {
        static const char *const groups[] = {"world", "node", NULL};
        return choice("--fsdp", arg, groups, &o->fsdp);
    }
    default: return PB_ERR_USAGE;
    }
}

static void set_if(long long v, int64_t *dst) { if (v >= 0) *dst = v; }
static void setd_if(double v, double *dst, double scale) { if (v >= 0) *dst = v * scale; }

/* Preset (or a blank custom model) with the shape options applied. */

/* The chunks per stage of the schedule: Megatron-LM's virtual pipeline size
 * (--interleave, 2 when only the interleaved schedule is named), else 1. */
static int chunks_per_stage(const options *o, int *chunks)
{
    if (o->interleave > 0 && o->job.sched != PB_PP_INTERLEAVED)
        return pb_error_usage("--interleave", "applies only with --schedule interleaved (given: %s)",
                              pb_pp_sched_name(o->job.sched));
    *chunks = o->job.sched != PB_PP_INTERLEAVED ? 1 : o->interleave > 0 ? (int)o->interleave : 2;
    return PB_OK;
}
static int build_job(options *o)
{
    pb_presets_model *m = &o->job.model;
    if (o->model_name) PB_TRY(pb_presets_preset(o->model_name, "--model", m));
    else if (o->model_file)
        PB_TRY(pb_presets_load_file(o->model_file, "--model-file", m, o->model_file_name, sizeof o->model_file_name));
    else if (o->hidden < 0 || o->layers < 0 || o->heads < 0 || o->seq < 0)
        return pb_error_usage("--model", "missing; give a preset (%s), --model-file, or all of --hidden --layers "
                              "--heads --seq", pb_presets_preset_names());
    else *m = (pb_presets_model){.name = NULL, .mlp = PB_MLP_GELU, .tied = 1, .micro_batch = 1};
    if (!o->model_name && !o->model_file) { /* a custom shape: GPT's form unless told otherwise */
        set_if(o->hidden, &m->hidden);
        set_if(o->heads, &m->heads);
        m->kv_heads = m->heads;
        m->ffn = 4 * m->hidden;
    }
    pb_presets_resize(m, o->hidden, o->heads);
    set_if(o->layers, &m->layers);
    set_if(o->kv_heads, &m->kv_heads);
    set_if(o->ffn, &m->ffn);
    if (o->mlp >= 0) m->mlp = (pb_presets_mlp)o->mlp;
    set_if(o->seq, &m->seq);
    set_if(o->vocab, &m->vocab);
    set_if(o->micro_batch, &m->micro_batch);
    PB_TRY(pb_presets_validate(m));
    PB_TRY(chunks_per_stage(o, &o->job.interleave));
    o->job.params = o->params > 0 ? o->params : m->nominal_params > 0 ? m->nominal_params : pb_presets_params(m);
    o->job.global_batch = o->global_batch > 0 ? o->global_batch : pb_presets_default_global_batch(m);
    return PB_OK;
}

static int build_cluster(options *o)
{
    pb_model_cluster *c = &o->cluster;
    PB_TRY(pb_cluster_lookup(o->cluster_name ? o->cluster_name : "a100", "--cluster", c));
    if (o->gpn > 0) c->gpus_per_node = (int)o->gpn;
    setd_if(o->intra_bw, &c->intra.bw_Bps, 1e9);
    setd_if(o->intra_lat, &c->intra.alpha_s, 1e-6);
    if (o->inter_bw >= 0 && o->inter_bw_node >= 0)
        return pb_error_usage("--inter-bw-node", "give --inter-bw (per GPU) or --inter-bw-node (per node), not both");
    setd_if(o->inter_bw, &c->inter.bw_Bps, 1e9);
    /* A node's NICs shared by its GPUs, which all cross nodes at once in DP and PP. */
    setd_if(o->inter_bw_node, &c->inter.bw_Bps, 1e9 / c->gpus_per_node);
    setd_if(o->inter_lat, &c->inter.alpha_s, 1e-6);
    setd_if(o->tflops, &c->flops, 1e12);
    setd_if(o->gpu_mem, &c->mem_bytes, 1e9);
    setd_if(o->hbm_bw, &c->mem_bw, 1e9);
    return PB_OK;
}

/* plan --model ... --fsdp world|node: the job as sharded data parallelism. Exit 1 when it is invalid or does not fit. */
static int run_fsdp(options *o)
{
    if (o->tp > 0 || o->pp > 0 || o->dp > 0)
        return pb_error_usage("--fsdp", "plans the job as sharded data parallelism over every GPU; give it or "
                                        "--tp/--pp/--dp, not both");
    if (o->gpus <= 0) return pb_error_usage("--gpus", "missing; give the GPU count to plan for, e.g. --gpus 64");
    if (o->json) return pb_error_usage("--json", "does not apply to --fsdp, which writes no JSON");
    pb_plan_print_setup(&o->job, &o->cluster, stdout);
    pb_plan_fsdp f;
    pb_plan_fsdp_eval(&o->job, &o->cluster, (int)o->gpus, o->fsdp, &f);
    pb_plan_fsdp_print(&f, stdout);
    if (!f.reject[0]) return PB_OK;
    fprintf(stderr, "%s: FSDP on %lld GPUs: %s\n", pb_error_progname(), o->gpus, f.reject);
    return PB_ERR_CHECK;
}

static int run_model(options *o, const char *cmdline)
{
    PB_TRY(build_job(o));
    PB_TRY(build_cluster(o));
    if (o->fsdp >= 0) return run_fsdp(o);
    int single = o->tp > 0 || o->pp > 0 || o->dp > 0;
    if (single && (o->tp < 0 || o->pp < 0 || o->dp < 0))
        return pb_error_usage("--tp", "give all three of --tp, --pp and --dp, or none to enumerate");
    if (single && o->gpus > 0 && o->tp * o->pp * o->dp != o->gpus)
        return pb_error_usage("--gpus", "%lld != tp*pp*dp = %lld", o->gpus, o->tp * o->pp * o->dp);
    if (!single && o->gpus <= 0) return pb_error_usage("--gpus", "missing; give the GPU count to plan for, e.g. --gpus 256");
    pb_plan_print_setup(&o->job, &o->cluster, stdout);
    pb_model_step *s = calloc(MAX_CONFIGS, sizeof *s);
    if (!s) return pb_fail(PB_ERR_ENV, "out of memory");
    int n;
    if (single) {
        pb_model_step_eval(&o->job, &o->cluster, (int)o->tp, (int)o->pp, (int)o->dp, s);
        n = 1;
        pb_plan_print_step(s, stdout);
    } else {
        n = pb_model_step_enumerate(&o->job, &o->cluster, (int)o->gpus, s, MAX_CONFIGS);
        if (n == MAX_CONFIGS) fprintf(stderr, "%s: note: only the first %d factorizations were evaluated\n",
                                      pb_error_progname(), MAX_CONFIGS);
        int want[3], doc = pb_plan_explain_documented(o->job.model.name, (int)o->gpus, want);
        pb_plan_print_ranking(s, n, (int)o->top, doc ? want : NULL, stdout);
        if (doc) {
            char why[512];
            double gap = 0;
            pb_plan_explain(s, n, want, why, sizeof why, &gap);
            printf("\nthe seed documents' configuration (marked *): %s\n", why);
        }
        if (n && !s[0].reject[0]) pb_plan_print_step(&s[0], stdout);
    }
    /* Nothing runnable is an answer a script must see: exit 1, and no JSON a script could take for a plan. */
    int none = n == 0 || s[0].reject[0];
    int st = o->json && !none ? pb_plan_print_json(o->json, cmdline, &o->job, &o->cluster, s, n) : PB_OK;
    free(s);
    if (st == PB_OK && none) {
        fprintf(stderr, "%s: no configuration is valid and fits; see the reasons above\n", pb_error_progname());
        return PB_ERR_CHECK;
    }
    return st;
}

/* P,M,TF,TB,TMSG through the one strict number parser: every field finite
 * and bounded (a NaN passed the old `<= 0` checks and printed efficiency nan),
 * so the simulated step is finite and positive. Times are at most a day. */
static int parse_pp_simulate(const char *text, double v[5])
{
    const char *option = "--pp-simulate", *expected = "expected P,M,T_FWD_US,T_BWD_US,T_MSG_US (stages 1-1024, "
                                                      "micro-batches 1-100000, positive times, transfer >= 0, "
                                                      "times at most 8.64e10 us)";
    size_t n = 0;
    PB_TRY(pb_parse_double_list(option, text, 0, 8.64e10, v, 5, &n));
    if (n != 5) return pb_error_usage(option, "'%s' has %zu values; %s", text, n, expected);
    if (v[0] < 1 || v[0] > 1024 || v[0] != (int)v[0] || v[1] < 1 || v[1] > 1e5 || v[1] != (int)v[1] || v[2] <= 0 ||
        v[3] <= 0)
        return pb_error_usage(option, "'%s' is out of range; %s", text, expected);
    return PB_OK;
}

/* plan --fit DIR: fit the links from DIR's sweeps, or take a calibration's (or
 * preset's) with --cluster, then predict DIR's workload rows with them. */
static int run_fit(const options *o, const char *cmdline)
{
    pb_plan_fit_fitted f;
    if (o->cluster_name) {
        pb_model_cluster calibrated;
        PB_TRY(pb_cluster_lookup(o->cluster_name, "--cluster", &calibrated));
        PB_TRY(pb_plan_fit_from_cluster(o->fit_dir, &calibrated, &f, stdout));
    } else {
        PB_TRY(pb_plan_fit_links(o->fit_dir, "--fit", &f, stdout));
    }
    return pb_plan_predict(o->fit_dir, &f, o->csv, cmdline, stdout);
}

#define PP_SIMULATE_MAX 1e7 /* stages x micro-batches x chunks */

/* plan --pp-simulate P,M,TF,TB,TMSG: the executor's schedule (workload/pp_schedule.h)
 * run as a discrete-event simulation with fixed stage times, for a pipeline
 * deeper than the machine has ranks. */
static int run_pp_simulate(const options *o)
{
    double v[5];
    PB_TRY(parse_pp_simulate(o->pp_sim, v));
    int p = (int)v[0], m = (int)v[1], chunks = 1;
    PB_TRY(chunks_per_stage(o, &chunks));
    if (o->job.sched == PB_PP_INTERLEAVED && (p < 2 || m % p != 0))
        return pb_error_usage("--pp-simulate", "'%s': the interleaved schedule needs P >= 2 and M a multiple of P",
                              o->pp_sim);
    PB_TRY(pb_pp_schedule_valid(o->job.sched, p, m, chunks));
    /* Every action and message is held: about 100 bytes per micro-batch and chunk on each stage. */
    if ((double)p * m * chunks > PP_SIMULATE_MAX)
        return pb_error_usage("--pp-simulate", "'%s': P x M x V = %d x %d x %d is above %.0e (the simulation holds "
                              "every pass of every stage, about 100 bytes each)", o->pp_sim, p, m, chunks,
                              PP_SIMULATE_MAX);
    pb_pp_schedule_plan *plans = calloc((size_t)p, sizeof *plans);
    if (!plans) return pb_fail(PB_ERR_ENV, "out of memory");
    int st = PB_OK;
    for (int s = 0; s < p && st == PB_OK; s++)
        st = pb_pp_schedule_plan_build(o->job.sched, p, m, chunks, s, &plans[s]);
    double step = 0;
    /* A stage's times split evenly over its chunks; every chunk boundary is a message. */
    if (st == PB_OK) st = pb_pp_schedule_simulate(plans, p, v[2] / chunks, v[3] / chunks, v[4], &step, NULL);
    for (int s = 0; s < p; s++) pb_pp_schedule_plan_free(&plans[s]);
    free(plans);
    if (st != PB_OK) return st;
    double ideal = m * (v[2] + v[3]);
    char interleave[32] = "";
    if (chunks > 1) snprintf(interleave, sizeof interleave, " interleave %d", chunks);
    printf("schedule %s%s stages %d micro_batches %d t_fwd_us %.3f t_bwd_us %.3f t_msg_us %.3f\n",
           pb_pp_sched_name(o->job.sched), interleave, p, m, v[2], v[3], v[4]);
    /* v chunks per stage shrink the bubble v-fold: the m/(m+p-1) of m*v micro-batches */
    printf("step_us %.3f ideal_us %.3f efficiency %.5f efficiency_theory %.5f\n", step, ideal, ideal / step,
           pb_model_pipe_efficiency(m * chunks, p));
    return PB_OK;
}

/* Every file the mode reads, so that no output overwrites one (core/outpath.h):
 * a --cluster that names a file, the CSVs --fit and --calibrate read. */
static int register_inputs(const options *o)
{
    struct stat sb;
    if (o->cluster_name && stat(o->cluster_name, &sb) == 0 && S_ISREG(sb.st_mode))
        PB_TRY(pb_outpath_add_input("--cluster", o->cluster_name));
    if (o->fit_dir) PB_TRY(pb_outpath_add_input_dir("--fit", o->fit_dir, pb_plan_fit_reads));
    if (o->calibrate_dir) PB_TRY(pb_outpath_add_input_dir("--calibrate", o->calibrate_dir, pb_plan_fit_reads));
    return PB_OK;
}

/* The command as a shell reads it back (core/escape.h), cut to the buffer. */
static int join_args(int argc, char **argv, char *buf, size_t len)
{
    char *cmd = pb_escape_argv(argc, argv);
    PB_CHECK(cmd, PB_ERR_ENV, "out of memory recording the command line");
    snprintf(buf, len, "%s", cmd);
    free(cmd);
    return PB_OK;
}

int main(int argc, char **argv)
{
    pb_error_set_progname(argv[0]);
    options o;
    memset(&o, 0, sizeof o);
    o.gpus = o.tp = o.pp = o.dp = o.top = -1;
    o.hidden = o.layers = o.heads = o.seq = o.vocab = o.micro_batch = o.global_batch = -1;
    o.kv_heads = o.ffn = o.mlp = o.fsdp = -1;
    o.params = o.intra_bw = o.intra_lat = o.inter_bw = o.inter_bw_node = o.inter_lat = o.tflops = o.gpu_mem = o.gpn = o.hbm_bw = -1;
    o.job.dtype_bytes = 2;
    o.job.sched = PB_PP_1F1B;
    o.job.sp = 1;
    o.job.recompute = PB_RECOMPUTE_SELECTIVE;
    char cmdline[4096];
    PB_TRY(join_args(argc, argv, cmdline, sizeof cmdline));
    opterr = 0;
    int c;
    unsigned char seen[1024] = {0};
    while ((c = getopt_long(argc, argv, "ho:", long_opts, NULL)) != -1) {
        if (c == 'h' || c == O_HELP) { usage(stdout); return PB_OK; }
        if (c == O_VERSION) { printf("%s\n", pb_version_string()); return PB_OK; }
        if (c == 'o') c = O_CLUSTER_OUT;
        if (c == '?' || c == ':') {
            const char *bad = argv[optind - 1];
            if (optopt) return pb_error_usage(bad, "needs a value or is unknown; see plan --help");
            return pb_error_usage(bad, "unknown option; see plan --help");
        }
        int st = pb_options_once(long_opts, seen, sizeof seen, c);
        if (st == PB_OK) st = parse_one(&o, c, optarg);
        if (st != PB_OK) return st;
    }
    if (optind < argc) return pb_error_usage(argv[optind], "unexpected argument; see plan --help");
    int modes = o.reproduce + (o.fit_dir != NULL) + (o.model_name || o.hidden >= 0 || o.gpus >= 0) +
                (o.calibrate_dir != NULL) + (o.pp_sim != NULL);
    if (modes == 0) {
        usage(stderr);
        return pb_error_usage("--reproduce|--model|--fit|--calibrate|--pp-simulate", "give one of the five modes");
    }
    if (modes > 1)
        return pb_error_usage("--reproduce|--model|--fit|--calibrate|--pp-simulate", "give only one of the five modes");
    if (o.cluster_out && !o.calibrate_dir)
        return pb_error_usage("--cluster-out", "applies only to --calibrate DIR");
    PB_TRY(register_inputs(&o));
    /* Each mode writes one kind of file: the other option would be ignored. */
    if (o.pp_sim) return run_pp_simulate(&o);
    if (o.calibrate_dir) return pb_plan_fit_calibrate(o.calibrate_dir, o.cluster_out, stdout);
    if (o.csv && !o.fit_dir)
        return pb_error_usage("--csv", "does not apply to %s, which writes no CSV; expected --fit DIR --csv FILE",
                              o.reproduce ? "--reproduce" : "--model");
    if (o.json && !(o.model_name || o.hidden >= 0 || o.gpus >= 0))
        return pb_error_usage("--json", "does not apply to %s, which writes no JSON; expected --model ... --json FILE",
                              o.reproduce ? "--reproduce" : "--fit");
    if (o.reproduce) return pb_plan_reproduce(stdout);
    if (o.fit_dir) return run_fit(&o, cmdline);
    return run_model(&o, cmdline);
}
