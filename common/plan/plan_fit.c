/* plan --fit: which data feed which fit.
 *   p2p fit  (per link class): p2p_sweep latency rows, t = a + S/B, all sizes;
 *            bw rows of at least 1 MiB as t = S/B (streaming hides a).
 *   coll fit (per link class): coll_sweep allreduce rows, t = 2(n-1)a + 2(n-1)/n S/B;
 *            allgather/reducescatter rows, t = (n-1)a + (n-1)/n S/B.
 * Predictions of collectives (dp_allreduce, tp_layer) use the coll fit of the
 * row's link class, else its p2p fit; pp_pipeline uses the p2p fit, else the
 * coll fit. "mixed" rows fall back to the inter fit. */
#include "plan/plan_fit.h"

#include "core/csv.h"
#include "core/error.h"
#include "core/grow.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NCLASS PB_FIT_NCLASS
#define NSRC PB_FIT_NSRC
static const char *const src_names[NSRC] = {"p2p", "coll"};

/* One weighted least-squares solve over the observations with keep[i] set. */
static int solve(const pb_plan_fit_obs *o, int n, const char *keep, double *a_out, double *x_out)
{
    /* Normal equations of sum w (ca*a + cb*x - y)^2, x = 1/B, cb in GB to keep
     * the matrix well scaled. */
    double saa = 0, sab = 0, sbb = 0, say = 0, sby = 0;
    for (int i = 0; i < n; i++) {
        if (!keep[i]) continue;
        double w = 1.0 / (o[i].y * o[i].y), cb = o[i].cb * 1e-9;
        saa += w * o[i].ca * o[i].ca;
        sab += w * o[i].ca * cb;
        sbb += w * cb * cb;
        say += w * o[i].ca * o[i].y;
        sby += w * cb * o[i].y;
    }
    double a = 0.0, x = 0.0, det = saa * sbb - sab * sab;
    int solvable = saa > 0 && det > 1e-12 * saa * sbb;
    if (solvable) {
        a = (say * sbb - sab * sby) / det;
        x = (saa * sby - sab * say) / det;
    }
    if (!solvable || a <= 0) {
        a = 0.0; /* no usable latency information: bandwidth only */
        x = sbb > 0 ? sby / sbb : 0.0;
    }
    if (!(x > 0)) return PB_ERR_CHECK;
    *a_out = a;
    *x_out = x * 1e-9;
    return PB_OK;
}

static double rel_resid(const pb_plan_fit_obs *o, double a, double x) { return (o->ca * a + o->cb * x - o->y) / o->y; }

static int cmp_double(const void *p, const void *q)
{
    double u = *(const double *)p, v = *(const double *)q;
    return (u > v) - (u < v);
}

int pb_plan_fit_alpha_beta(const pb_plan_fit_obs *o, int n, pb_model_link *out, double *rms_rel, int *kept)
{
    char *keep = calloc((size_t)n + 1, 1);
    double *r = calloc((size_t)n + 1, sizeof *r);
    int st = keep && r ? PB_OK : PB_ERR_ENV, k = 0;
    double a = 0, x = 0;
    for (int i = 0; i < n && st == PB_OK; i++) keep[i] = o[i].y > 0, k += keep[i];
    if (st == PB_OK) st = solve(o, n, keep, &a, &x);
    /* One robust pass: a busy machine gives a few wild points (a rank
     * descheduled); drop those off by > max(50%, 4x the median |residual|). */
    if (st == PB_OK && k > 3) {
        int m = 0;
        for (int i = 0; i < n; i++)
            if (keep[i]) r[m++] = fabs(rel_resid(&o[i], a, x));
        qsort(r, (size_t)m, sizeof *r, cmp_double);
        double cut = fmax(0.5, 4.0 * r[m / 2]);
        int k2 = 0;
        for (int i = 0; i < n; i++) {
            if (keep[i] && fabs(rel_resid(&o[i], a, x)) > cut) keep[i] = 0;
            k2 += keep[i];
        }
        if (k2 >= 2 && k2 < k && solve(o, n, keep, &a, &x) == PB_OK) k = k2;
        else for (int i = 0; i < n; i++) keep[i] = o[i].y > 0; /* refit failed: keep all */
    }
    if (st == PB_OK) {
        out->alpha_s = a;
        out->bw_Bps = 1.0 / x;
        double ss = 0;
        for (int i = 0; i < n; i++)
            if (keep[i]) ss += rel_resid(&o[i], a, x) * rel_resid(&o[i], a, x);
        if (rms_rel) *rms_rel = k ? sqrt(ss / k) : 0.0;
        if (kept) *kept = k;
    }
    free(keep);
    free(r);
    return st;
}

/* ---- growing arrays ---- */

typedef struct {
    pb_plan_fit_obs *v;
    int n, cap;
} obsvec;

static int obs_push(obsvec *ov, double ca, double cb, double y)
{
    pb_plan_fit_obs *g = pb_grow(ov->v, &ov->cap, ov->n, sizeof *g, 64);
    if (!g) return pb_fail(PB_ERR_ENV, "out of memory");
    ov->v = g;
    ov->v[ov->n++] = (pb_plan_fit_obs){ca, cb, y};
    return PB_OK;
}

/* ---- directory scan ---- */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* "prefix*.csv", the files list_files takes. */
static int takes(const char *name, const char *prefix)
{
    size_t l = strlen(name), pl = strlen(prefix);
    return strncmp(name, prefix, pl) == 0 && l >= pl + 4 && strcmp(name + l - 4, ".csv") == 0;
}

int pb_plan_fit_reads(const char *name)
{
    static const char *const read[] = {"p2p_sweep", "coll_sweep", "dp_allreduce", "tp_layer", "pp_pipeline",
                                       "hybrid_3d", "fsdp_step", "cp_attention", "moe_layer", "compute_probe"};
    for (size_t i = 0; i < sizeof read / sizeof read[0]; i++)
        if (takes(name, read[i])) return 1;
    return 0;
}

/* Paths "dir/prefix*.csv", sorted. Returns the count (0 on none). */
static int list_files(const char *dir, const char *prefix, char ***out)
{
    DIR *dp = opendir(dir);
    *out = NULL;
    if (!dp) return 0;
    int n = 0, cap = 0;
    char **v = NULL;
    struct dirent *e;
    while ((e = readdir(dp))) {
        size_t l = strlen(e->d_name);
        if (!takes(e->d_name, prefix)) continue;
        char **g = pb_grow(v, &cap, n, sizeof *g, 8);
        if (!g) break;
        v = g;
        size_t len = strlen(dir) + l + 2;
        if (!(v[n] = malloc(len))) break;
        snprintf(v[n++], len, "%s/%s", dir, e->d_name);
    }
    closedir(dp);
    if (n > 1) qsort(v, (size_t)n, sizeof *v, cmp_str);
    *out = v;
    return n;
}

static void free_list(char **v, int n)
{
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

int pb_plan_fit_each_csv(const char *dir, const char *prefix, FILE *out, pb_plan_fit_csv_fn fn, void *ctx)
{
    char **files;
    int nf = list_files(dir, prefix, &files);
    if (nf == 0) fprintf(out, "note: no %s*.csv in %s: skipped\n", prefix, dir);
    int st = PB_OK;
    for (int i = 0; i < nf && st == PB_OK; i++) {
        pb_csv t;
        if (pb_csv_read(files[i], &t) != PB_OK) {
            fprintf(out, "note: %s unreadable or empty: skipped\n", files[i]);
            continue;
        }
        if (t.bad_line) /* the reader stops at a refused line: what follows it is not read */
            fprintf(out, "note: %s:%d: %s; only the rows before it are sure to be read\n", files[i], t.bad_line,
                    t.bad_why);
        st = fn(ctx, files[i], &t);
        pb_csv_free(&t);
    }
    free_list(files, nf);
    return st;
}

/* ---- reading the sweeps ---- */

typedef struct {
    obsvec obs[NCLASS][NSRC];
} obsset;

/* The row's median time when present (robust to a descheduled iteration),
 * else its mean. */
static int row_time(const pb_csv *t, int r, double *us)
{
    if (pb_csv_num(t, r, "time_us_median", us) == PB_OK && *us > 0) return PB_OK;
    return pb_csv_num(t, r, "time_us", us);
}

/* coll_sweep rows -> the coll fit of their link class. */
static int load_coll(const pb_csv *t, obsset *os, int *skipped)
{
    for (int r = 0; r < t->nrows; r++) {
        double S, n, us, wrong = 0;
        int k = pb_link_parse(pb_csv_get(t, r, "link_class"));
        pb_coll c;
        if (pb_coll_from_name(pb_csv_get(t, r, "collective"), &c) != PB_OK || k < 0 ||
            pb_csv_num(t, r, "bytes", &S) || pb_csv_num(t, r, "nranks", &n) || row_time(t, r, &us) ||
            n < 2 || us <= 0) {
            (*skipped)++;
            continue;
        }
        pb_csv_num(t, r, "wrong", &wrong);
        if (wrong > 0) { (*skipped)++; continue; } /* a wrong result's time means nothing */
        pb_coll_cost cost = pb_coll_cost_of(c, (int)n); /* the table's terms */
        if (pb_coll_desc_of(c)->algo == PB_ALGO_RING)
            PB_TRY(obs_push(&os->obs[k][PB_FIT_COLL], cost.steps, cost.bytes * S, us * 1e-6));
        else (*skipped)++; /* tree/pairwise algorithms: not ring-shaped */
    }
    return PB_OK;
}

/* p2p_sweep rows -> the p2p fit of their link class. */
static int load_p2p(const pb_csv *t, obsset *os, int *skipped)
{
    for (int r = 0; r < t->nrows; r++) {
        const char *mode = pb_csv_get(t, r, "mode");
        int k = pb_link_parse(pb_csv_get(t, r, "link_class"));
        double S, us, bw;
        double wrong = 0;
        pb_csv_num(t, r, "wrong", &wrong);
        if (k < 0 || pb_csv_num(t, r, "bytes", &S) || S <= 0 || wrong > 0) { (*skipped)++; continue; }
        if (strcmp(mode, "latency") == 0 && row_time(t, r, &us) == PB_OK && us > 0)
            PB_TRY(obs_push(&os->obs[k][PB_FIT_P2P], 1.0, S, us * 1e-6));
        else if (strcmp(mode, "bw") == 0 && S >= 1048576 && pb_csv_num(t, r, "bw_GBps", &bw) == PB_OK && bw > 0)
            PB_TRY(obs_push(&os->obs[k][PB_FIT_P2P], 0.0, S, S / (bw * 1e9)));
        else (*skipped)++; /* bibw (two directions), small bw rows, malformed */
    }
    return PB_OK;
}

typedef struct {
    obsset *os;
    int coll;
    FILE *out;
} load_ctx;

/* One sweep CSV into the observations (pb_plan_fit_csv_fn). */
static int load_file(void *arg, const char *path, const pb_csv *t)
{
    load_ctx *c = arg;
    int skipped = 0;
    int st = c->coll ? load_coll(t, c->os, &skipped) : load_p2p(t, c->os, &skipped);
    fprintf(c->out, "read %s: %d rows, %d not used for the fit\n", path, t->nrows, skipped);
    return st;
}

/* Read every file of one kind into `os`. */
static int load_kind(const char *dir, const char *prefix, int coll, obsset *os, FILE *out)
{
    load_ctx c = {os, coll, out};
    return pb_plan_fit_each_csv(dir, prefix, out, load_file, &c);
}

int pb_plan_fit_fitted_link(const pb_plan_fit_fitted *f, const char *link_class, int collective, pb_model_link *out, char *used, int len)
{
    int k = pb_link_parse(link_class);
    if (k < 0) return PB_ERR_CHECK;
    int order[2] = {collective ? PB_FIT_COLL : PB_FIT_P2P, collective ? PB_FIT_P2P : PB_FIT_COLL};
    int classes[2] = {k, k == PB_LINK_MIXED ? PB_LINK_INTER : k}; /* mixed -> inter: its slowest hop */
    for (int ci = 0; ci < 2; ci++)
        for (int si = 0; si < 2; si++)
            if (f->have[classes[ci]][order[si]]) {
                *out = f->link[classes[ci]][order[si]];
                snprintf(used, (size_t)len, "%s/%s", pb_link_name(classes[ci]), src_names[order[si]]);
                return PB_OK;
            }
    return PB_ERR_CHECK;
}

static void print_fits(const pb_plan_fit_fitted *f, FILE *out)
{
    fprintf(out, "\nfitted cluster (alpha-beta per link class; weighted least squares on relative error)\n");
    fprintf(out, "%-6s %-5s %6s %6s %12s %12s %10s  %s\n", "class", "from", "rows", "kept", "alpha_us", "B_GBps",
            "rms_rel", "model");
    for (int k = 0; k < NCLASS; k++)
        for (int s = 0; s < NSRC; s++) {
            if (!f->rows[k][s]) continue;
            const char *model = s == PB_FIT_P2P ? "t = a + S/B (latency rows; bw rows >= 1 MiB as S/B)"
                                                : "t = 2(n-1)a + 2(n-1)/n S/B (allreduce); (n-1)a + (n-1)/n S/B (AG/RS)";
            if (f->have[k][s])
                fprintf(out, "%-6s %-5s %6d %6d %12.3f %12.4f %10.4f  %s\n", pb_link_name(k), src_names[s],
                        f->rows[k][s], f->kept[k][s], f->link[k][s].alpha_s * 1e6, f->link[k][s].bw_Bps / 1e9, f->rms[k][s], model);
            else
                fprintf(out, "%-6s %-5s %6d %6s %12s %12s %10s  no positive B fits these rows\n", pb_link_name(k),
                        src_names[s], f->rows[k][s], "-", "-", "-", "-");
        }
}

static int results_dir(const char *dir, const char *option)
{
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return pb_error_usage(option, "'%s' is not a directory; expected a results directory with sweep CSVs", dir);
    return PB_OK;
}

int pb_plan_fit_links(const char *dir, const char *option, pb_plan_fit_fitted *f, FILE *out)
{
    PB_TRY(results_dir(dir, option));
    obsset os;
    memset(&os, 0, sizeof os);
    memset(f, 0, sizeof *f);
    int st = load_kind(dir, "p2p_sweep", 0, &os, out);
    if (st == PB_OK) st = load_kind(dir, "coll_sweep", 1, &os, out);
    int any = 0;
    for (int k = 0; k < NCLASS; k++)
        for (int s = 0; s < NSRC; s++) {
            f->rows[k][s] = os.obs[k][s].n;
            if (st == PB_OK && os.obs[k][s].n >= 2)
                f->have[k][s] = pb_plan_fit_alpha_beta(os.obs[k][s].v, os.obs[k][s].n, &f->link[k][s], &f->rms[k][s],
                                                 &f->kept[k][s]) == PB_OK;
            any |= f->have[k][s];
            free(os.obs[k][s].v);
        }
    if (st != PB_OK) return st;
    if (!any)
        return pb_fail(PB_ERR_ENV, "no sweep data to fit in %s: expected p2p_sweep*.csv or coll_sweep*.csv with at "
                                   "least 2 usable rows per link class", dir);
    print_fits(f, out);
    return PB_OK;
}

int pb_plan_fit_from_cluster(const char *dir, const pb_model_cluster *c, pb_plan_fit_fitted *f, FILE *out)
{
    PB_TRY(results_dir(dir, "--fit"));
    memset(f, 0, sizeof *f);
    for (int s = 0; s < PB_FIT_NSRC; s++) {
        f->have[PB_LINK_INTRA][s] = f->have[PB_LINK_INTER][s] = 1;
        f->link[PB_LINK_INTRA][s] = c->intra;
        f->link[PB_LINK_INTER][s] = c->inter;
    }
    fprintf(out, "links from cluster %s (not fitted from %s): intra %.3g us %.4g GB/s, inter %.3g us %.4g GB/s\n",
            c->name, dir, c->intra.alpha_s * 1e6, c->intra.bw_Bps / 1e9, c->inter.alpha_s * 1e6, c->inter.bw_Bps / 1e9);
    return PB_OK;
}
