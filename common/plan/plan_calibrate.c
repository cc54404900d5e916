/* plan --calibrate DIR: turn a run's sweeps and compute_probe rates into a
 * cluster file the planner reads like a preset (--cluster FILE). */
#include "plan/plan_fit.h"

#include "core/csv.h"
#include "core/error.h"
#include "core/escape.h"
#include "plan/cluster.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The best link fitted for a class: the coll fit (what collectives see), else the p2p fit. */
static int best_link(const pb_plan_fit_fitted *f, int k, pb_model_link *out, const char **from)
{
    for (int s = PB_FIT_COLL;; s = PB_FIT_P2P) {
        if (f->have[k][s]) {
            *out = f->link[k][s];
            *from = s == PB_FIT_COLL ? "coll" : "p2p";
            return 1;
        }
        if (s == PB_FIT_P2P) return 0;
    }
}

/* The highest GEMM rate of compute_probe.csv (GFLOP/s): the sustained rate of one rank. */
static int gemm_rate(const char *dir, double *gflops)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/compute_probe.csv", dir);
    pb_csv t;
    if (pb_csv_read(path, &t) != PB_OK)
        return pb_fail(PB_ERR_ENV, "--calibrate: %s is missing or empty; run compute_probe --csv there (run_all.sh does)",
                       path);
    *gflops = 0;
    for (int r = 0; r < t.nrows; r++) {
        double v;
        if (strcmp(pb_csv_get(&t, r, "test"), "gemm") == 0 && pb_csv_num(&t, r, "rate", &v) == PB_OK && v > *gflops)
            *gflops = v;
    }
    pb_csv_free(&t);
    return *gflops > 0 ? PB_OK : pb_fail(PB_ERR_ENV, "--calibrate: %s has no gemm row with a positive rate", path);
}

/* Ranks per node: the most ranks of an intra-node row of coll_sweep.csv (1 when none). */
static int ranks_per_node(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/coll_sweep.csv", dir);
    pb_csv t;
    int best = 1;
    if (pb_csv_read(path, &t) != PB_OK) return best;
    for (int r = 0; r < t.nrows; r++) {
        double n;
        if (strcmp(pb_csv_get(&t, r, "link_class"), "intra") == 0 && pb_csv_num(&t, r, "nranks", &n) == PB_OK &&
            n > best)
            best = (int)n;
    }
    pb_csv_free(&t);
    return best;
}

int pb_plan_fit_calibrate(const char *dir, const char *path, FILE *out)
{
    pb_plan_fit_fitted f; /* pb_plan_fit_links refuses a DIR that is not a directory (usage, exit 2) */
    double gflops = 0;
    PB_TRY(pb_plan_fit_links(dir, "--calibrate", &f, out));
    PB_TRY(gemm_rate(dir, &gflops));
    pb_model_cluster c;
    memset(&c, 0, sizeof c);
    const char *from_intra = "-", *from_inter = "-";
    int intra = best_link(&f, PB_LINK_INTRA, &c.intra, &from_intra);
    int inter = best_link(&f, PB_LINK_INTER, &c.inter, &from_inter);
    if (!intra && !inter) return pb_fail(PB_ERR_ENV, "--calibrate: no intra- or inter-node link fitted in %s", dir);
    if (!intra) c.intra = c.inter, from_intra = "inter";
    if (!inter) c.inter = c.intra, from_inter = "intra (no inter-node rows)";
    snprintf(c.name, sizeof c.name, "calibrated");
    c.gpus_per_node = ranks_per_node(dir);
    c.flops = gflops * 1e9;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    c.mem_bytes = pages > 0 && page > 0 ? (double)pages * (double)page / c.gpus_per_node : 16e9;
    char note[600], line[256];
    char *shown = pb_escape_csv_comment(dir); /* a newline in DIR must not end the comment and start a key */
    if (!shown) return pb_fail(PB_ERR_ENV, "--calibrate: out of memory");
    snprintf(note, sizeof note, "plan --calibrate %.400s: intra from the %s fit, inter from the %s fit, tflops = best gemm "
             "of compute_probe.csv", shown, from_intra, from_inter);
    free(shown);
    pb_cluster_describe(&c, line, sizeof line);
    fprintf(out, "\ncalibrated cluster: %s\n", line);
    if (!path) return PB_OK;
    PB_TRY(pb_cluster_file_write(path, &c, note));
    fprintf(out, "wrote %s\n", path);
    return PB_OK;
}
