/* compute_probe: what one rank's compute engine sustains, without MPI: GEMM
 * rates (the planner's --tflops, and a sanity check of the engine) and
 * engine-memory copy bandwidth (device-to-device on a GPU).
 *   compute_probe [--engine NAME] [--dtype float|bfloat16] [--sizes 1024,4096]
 *                 [-n ITERS] [--copy-bytes SIZE] [--warmup-ms MS] [--threads N] [--csv FILE] */
#include "compute/compute.h"
#include "core/error.h"
#include "core/outpath.h"
#include "backend/gpu.h"
#include "core/options.h"
#include "core/parse.h"
#include "core/report.h"
#include "core/timing.h"

#include <stdio.h>
#include <string.h>

#define MAX_SIZES 16

typedef struct probe_opts {
    const char *engine, *csv;
    pb_dtype dtype;
    uint64_t sizes[MAX_SIZES], copy_bytes;
    size_t nsizes;
    int iters, threads;
    long long warmup_ms; /* -1: the engine's default (DEVICE_WARMUP_MS on a GPU, none on the host) */
} probe_opts;

/* A GPU idles at a low clock and ramps up under load: a few timed GEMMs right
 * after start would measure the ramp. Half a second of GEMMs first. */
#define DEVICE_WARMUP_MS 500

enum { O_ENGINE, O_DTYPE, O_SIZES, O_ITERS, O_COPY, O_WARMUP, O_THREADS, O_CSV };

/* --engine's help names the engines of the table (main). */
static pb_options_opt opts[] = {
    {"engine", 0, "NAME", NULL, O_ENGINE},
    {"dtype", 'd', "TYPE", "GEMM type: float (default) or bfloat16", O_DTYPE},
    {"sizes", 0, "LIST", "square GEMM sizes m = n = k (default 512,1024,2048)", O_SIZES},
    {"iters", 'n', "N", "GEMMs timed per size (default 10)", O_ITERS},
    {"copy-bytes", 0, "SIZE", "bytes per engine-memory copy (default 256M; 0 skips)", O_COPY},
    {"warmup-ms", 0, "MS", "GEMMs of the largest size for at least MS ms before timing (default 500 on a GPU "
                          "engine, 0 on the host)", O_WARMUP},
    {"threads", 0, "N", "BLAS threads (default 1)", O_THREADS},
    {"csv", 0, "FILE", "write the results as CSV", O_CSV},
};

static int handle(void *ctx, int id, const char *option, const char *arg)
{
    probe_opts *o = ctx;
    long long v;
    switch (id) {
    case O_ENGINE:
        PB_TRY(pb_compute_check_name(option, arg));
        o->engine = arg;
        return PB_OK;
    case O_DTYPE:
        PB_TRY(pb_dtype_parse(option, arg, &o->dtype));
        return o->dtype == PB_FLOAT32 || o->dtype == PB_BFLOAT16
                   ? PB_OK
                   : pb_error_usage(option, "'%s' is not accepted here; expected float or bfloat16", arg);
    case O_SIZES: return pb_parse_size_list(option, arg, 65536, o->sizes, MAX_SIZES, &o->nsizes);
    case O_ITERS: PB_TRY(pb_parse_int(option, arg, 1, 100000, &v)); o->iters = (int)v; return PB_OK;
    case O_COPY:
        if (strcmp(arg, "0") == 0) return o->copy_bytes = 0, PB_OK;
        return pb_parse_size(option, arg, PB_SIZE_MAX, &o->copy_bytes);
    case O_WARMUP: return pb_parse_int(option, arg, 0, 600000, &o->warmup_ms);
    case O_THREADS: PB_TRY(pb_parse_int(option, arg, 1, 1024, &v)); o->threads = (int)v; return PB_OK;
    case O_CSV: o->csv = arg; return pb_outpath_add(option, arg);
    default: return pb_error_usage(option, "not handled");
    }
}

enum {
    COL_TEST,
    COL_ENGINE,
    COL_DTYPE,
    COL_SIZE,
    COL_ITERS,
    COL_RATE,
    COL_UNIT,
    NCOLS
};

static const pb_report_column cols[] = {
    [COL_TEST] = {"test", "test", "", PB_COL_STR, 6, 0, ""},
    [COL_ENGINE] = {"engine", "engine", "", PB_COL_STR, 7, 0, ""},
    [COL_DTYPE] = {"dtype", "type", "", PB_COL_STR, 9, 0, ""},
    [COL_SIZE] = {"size", "size", "", PB_COL_INT, 11, 0, ""},
    [COL_ITERS] = {"iters", "iters", "", PB_COL_INT, 6, 0, ""},
    [COL_RATE] = {"rate", "rate", "", PB_COL_FLOAT, 12, 1, ""},
    [COL_UNIT] = {"unit", "unit", "", PB_COL_STR, 7, 0, ""},
};
_Static_assert(sizeof cols / sizeof cols[0] == NCOLS, "one column per COL_ index");

/* Copy bandwidth in engine memory: read + write counted once, as bandwidthTest does. */
static int copy_rate(const pb_compute *e, uint64_t bytes, int iters, double *gbps)
{
    void *a = NULL, *b = NULL;
    int st = e->alloc(&a, bytes);
    if (st == PB_OK) st = e->alloc(&b, bytes);
    if (st == PB_OK) st = e->memset(a, 1, bytes);
    if (st == PB_OK) st = e->copy(b, a, bytes); /* warm-up */
    if (st == PB_OK) st = e->synchronize();
    double t0 = pb_timing_now_us();
    for (int i = 0; i < iters && st == PB_OK; i++) st = e->copy(b, a, bytes);
    if (st == PB_OK) st = e->synchronize();
    double sec = (pb_timing_now_us() - t0) * 1e-6;
    *gbps = sec > 0 ? (double)bytes * iters / sec / 1e9 : 0;
    if (a) e->free(a);
    if (b) e->free(b);
    return st;
}

/* GEMMs of n^3, one at a time, until at least ms milliseconds have passed. */
static int warm_up(const pb_compute *e, int64_t n, pb_dtype t, long long ms)
{
    if (ms <= 0) return PB_OK;
    double t0 = pb_timing_now_us(), g = 0;
    int count = 0;
    do {
        PB_TRY(pb_compute_gemm_benchmark(e, n, n, n, t, 1, &g));
        count++;
    } while (pb_timing_now_us() - t0 < (double)ms * 1e3);
    printf("# warm-up %d GEMMs of %lld in %.0f ms (at least %lld ms)\n", count, (long long)n,
           (pb_timing_now_us() - t0) * 1e-3, ms);
    return PB_OK;
}

static int run(const probe_opts *o, const pb_compute *e, pb_report *rep)
{
    for (size_t i = 0; i < o->nsizes; i++) {
        double gflops = 0;
        int64_t n = (int64_t)o->sizes[i];
        PB_TRY(pb_compute_gemm_benchmark(e, n, n, n, o->dtype, o->iters, &gflops));
        pb_report_value v[NCOLS] = {
            [COL_TEST] = PB_S("gemm"),
            [COL_ENGINE] = PB_S(e->name),
            [COL_DTYPE] = PB_S(pb_dtype_name(e->gemm_dtype(o->dtype))),
            [COL_SIZE] = PB_I(n),
            [COL_ITERS] = PB_I(o->iters),
            [COL_RATE] = PB_F(gflops),
            [COL_UNIT] = PB_S("GFLOP/s"),
        };
        PB_TRY(pb_report_row(rep, v));
    }
    if (o->copy_bytes == 0) return PB_OK;
    double gbps = 0;
    PB_TRY(copy_rate(e, o->copy_bytes, o->iters, &gbps));
    pb_report_value v[NCOLS] = {
        [COL_TEST] = PB_S("copy"),
        [COL_ENGINE] = PB_S(e->name),
        [COL_DTYPE] = PB_S("byte"),
        [COL_SIZE] = PB_I(o->copy_bytes),
        [COL_ITERS] = PB_I(o->iters),
        [COL_RATE] = PB_F(gbps),
        [COL_UNIT] = PB_S("GB/s"),
    };
    return pb_report_row(rep, v);
}

/* Refuse before allocating: three n x n matrices for the largest GEMM, two
 * copy buffers; each message names its option. */
static int memory_check(const probe_opts *o, const pb_compute *e)
{
    uint64_t n = 0, es = pb_dtype_size(e->gemm_dtype(o->dtype));
    for (size_t i = 0; i < o->nsizes; i++) n = o->sizes[i] > n ? o->sizes[i] : n;
    pb_mem_need gemm = {e->mem, e->mem_info, 3 * n * n * es, 0}, copy = {e->mem, e->mem_info, 2 * o->copy_bytes, 0};
    PB_TRY(pb_mem_require(&gemm, 1, "--sizes (three matrices of the largest GEMM)"));
    return pb_mem_require(&copy, 1, "--copy-bytes (two copy buffers)");
}

int main(int argc, char **argv)
{
    pb_error_set_progname(argv[0]);
    probe_opts o = {.engine = pb_compute_default(PB_MEM_HOST), .dtype = PB_FLOAT32, .sizes = {512, 1024, 2048}, .nsizes = 3,
                    .copy_bytes = 256u << 20, .iters = 10, .threads = 1, .warmup_ms = -1};
    char engine_help[160], names[128];
    snprintf(engine_help, sizeof engine_help, "%s (default %s)",
             pb_parse_join_names(pb_compute_names(), names, sizeof names), o.engine);
    opts[O_ENGINE].help = engine_help;
    pb_options_add_list("engines", pb_compute_names());
    pb_options_group g = {"compute_probe options", opts, (int)(sizeof opts / sizeof opts[0]), handle, &o};
    int status = pb_options_parse(argc, argv,
                              "Usage: compute_probe [options]\nGEMM rate and engine-memory copy bandwidth of one "
                              "compute engine (no MPI).",
                              &g, 1);
    if (status == PB_HELP_SHOWN) return PB_OK;
    if (status != PB_OK) return status;
    const pb_compute *e = NULL;
    char gpu[160] = "none";
    status = pb_compute_select("--engine", o.engine, &e);
    if (status == PB_OK && e->mem == PB_MEM_DEVICE) status = pb_gpu_bind(0, 0, gpu, sizeof gpu);
    pb_compute_opts copts = {.threads = o.threads};
    if (status == PB_OK) status = e->init(&copts);
    if (status == PB_OK) status = memory_check(&o, e);
    if (status != PB_OK) return status;
    printf("# compute_probe\n# engine %s\n# gpu    %s\n", e->describe(), gpu);
    uint64_t big = 0;
    for (size_t i = 0; i < o.nsizes; i++) big = o.sizes[i] > big ? o.sizes[i] : big;
    status = warm_up(e, (int64_t)big, o.dtype,
                     o.warmup_ms >= 0 ? o.warmup_ms : e->mem == PB_MEM_DEVICE ? DEVICE_WARMUP_MS : 0);
    if (status != PB_OK) return status;
    pb_report *rep = NULL;
    status = pb_report_open("compute_probe", cols, NCOLS, NULL, stdout, o.csv, NULL,
                            &rep);
    pb_report_header(rep);
    if (status == PB_OK) status = run(&o, e, rep);
    int closed = pb_report_close(rep, status == PB_OK);
    e->finalize();
    return status != PB_OK ? status : closed;
}
