/* `plan --fit RESULTS_DIR`, second half (plan_predict.c): predict each
 * dp_allreduce, tp_layer, pp_pipeline and hybrid_3d row of a run from its
 * measured compute plus the modeled communication over the links plan_fit.h
 * gives, and report predicted vs measured. */
#ifndef PB_PLAN_PREDICT_H
#define PB_PLAN_PREDICT_H

#include "plan/plan_fit.h"

#include <stdio.h>

/* Predict the rows found in `dir` with the links `f`; missing files are
 * noted and skipped. Prints to `out`; writes `csv_path` when non-NULL
 * (benchmark,row,predicted_us,measured_us,rel_error). PB_OK, or PB_ERR_ENV
 * when the CSV cannot be written. */
int pb_plan_predict(const char *dir, const pb_plan_fit_fitted *f, const char *csv_path, const char *cmdline, FILE *out);

#endif
