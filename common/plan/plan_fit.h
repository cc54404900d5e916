/* `plan --fit RESULTS_DIR`, first half: fit alpha and B per link class from a
 * run's sweep CSVs (or take a cluster's links instead); plan_predict.h then
 * predicts the run's workload rows with them. */
#ifndef PB_PLAN_FIT_H
#define PB_PLAN_FIT_H

#include "core/csv.h"
#include "core/link.h"
#include "plan/model.h"

#include <stdio.h>

/* One observation y = ca*alpha + cb/B (y in seconds, cb in bytes). */
typedef struct pb_plan_fit_obs {
    double ca, cb, y;
} pb_plan_fit_obs;

/* Least squares on relative error (weights 1/y^2), so the small-message
 * (latency) and large-message (bandwidth) regimes count alike. alpha is
 * clamped at 0 if the data push it negative; with no ca != 0 alpha is 0.
 * One robust refit drops points whose relative residual exceeds
 * max(50%, 4x the median). Returns PB_OK, PB_ERR_CHECK when the data determine
 * no positive B, PB_ERR_ENV on allocation failure. `rms_rel` and `kept` (may
 * be NULL) get the rms relative residual and the points kept. */
int pb_plan_fit_alpha_beta(const pb_plan_fit_obs *o, int n, pb_model_link *out, double *rms_rel, int *kept);

/* Fitted links per link class (intra, inter, mixed) and source (p2p, coll). */
#define PB_FIT_NCLASS PB_LINK_NCLASS /* indexed by pb_link_class */
enum { PB_FIT_P2P, PB_FIT_COLL, PB_FIT_NSRC };
typedef struct pb_plan_fit_fitted {
    int have[PB_FIT_NCLASS][PB_FIT_NSRC];
    pb_model_link link[PB_FIT_NCLASS][PB_FIT_NSRC];
    int rows[PB_FIT_NCLASS][PB_FIT_NSRC];
    int kept[PB_FIT_NCLASS][PB_FIT_NSRC];
    double rms[PB_FIT_NCLASS][PB_FIT_NSRC];
} pb_plan_fit_fitted;

/* The link to model a row of class `link_class` with: for a collective the
 * coll fit, else the p2p fit (and the other way round for P2P); "mixed"
 * falls back to "inter". `used` gets e.g. "inter/coll". PB_OK or PB_ERR_CHECK. */
int pb_plan_fit_fitted_link(const pb_plan_fit_fitted *f, const char *link_class, int collective, pb_model_link *out, char *used, int len);

/* plan --fit DIR --cluster FILE: the links of a cluster (a file `plan
 * --calibrate` wrote from another run, or a preset) in place of a fit of
 * DIR's sweeps; both sources of a class take its link. PB_ERR_USAGE naming
 * --fit when `dir` is not a directory. */
int pb_plan_fit_from_cluster(const char *dir, const pb_model_cluster *c, pb_plan_fit_fitted *f, FILE *out);

/* Whether --fit or --calibrate reads the file `name` of its directory: the
 * sweeps and workloads "<benchmark>*.csv" and compute_probe.csv. The output
 * registry refuses an output there (core/outpath.h). */
int pb_plan_fit_reads(const char *name);

/* Shared with plan_predict.c: pb_plan_fit_each_csv reads every
 * "dir/prefix*.csv" in name order and calls fn on each; a missing kind or an
 * unreadable file is noted on `out` and skipped. It stops at fn's first
 * non-PB_OK status and returns it. */
typedef int (*pb_plan_fit_csv_fn)(void *ctx, const char *path, const pb_csv *t);
int pb_plan_fit_each_csv(const char *dir, const char *prefix, FILE *out, pb_plan_fit_csv_fn fn, void *ctx);

/* The first half of the command: fit every link class and source from the
 * sweeps in `dir` and print the fits. PB_ERR_USAGE naming `option` when
 * `dir` is not a directory, PB_ERR_ENV when nothing can be fitted. */
int pb_plan_fit_links(const char *dir, const char *option, pb_plan_fit_fitted *f, FILE *out);

/* plan --calibrate DIR: the fitted links (coll fit, else p2p fit; inter
 * falls back to intra) and the best GEMM rate of DIR/compute_probe.csv as a
 * cluster file (cluster.h) at `path`. PB_ERR_ENV when DIR is missing or holds
 * no sweep or compute_probe data. */
int pb_plan_fit_calibrate(const char *dir, const char *path, FILE *out);

#endif
