/* The planner's printouts (plan_print.c): the job and cluster it models, the
 * ranked configurations, one configuration term by term, and all of them as
 * JSON for tools. */
#ifndef PB_PLAN_PRINT_H
#define PB_PLAN_PRINT_H

#include "plan/model.h"

#include <stdio.h>

/* Header lines describing the job and the cluster. */
void pb_plan_print_setup(const pb_model_train *job, const pb_model_cluster *c, FILE *out);

/* The ranked table of valid configurations (at most `top`, <= 0 for all),
 * then every rejected one with its reason (with `top` > 0, only counts per
 * reason). `mark` (may be NULL) flags one
 * (t, p, d) with '*'. */
void pb_plan_print_ranking(const pb_model_step *s, int n, int top, const int mark[3], FILE *out);

/* Term-by-term breakdown of one configuration. */
void pb_plan_print_step(const pb_model_step *s, FILE *out);

/* Write the setup and the configurations as JSON to `path`. PB_OK or PB_ERR_ENV. */
int pb_plan_print_json(const char *path, const char *cmdline, const pb_model_train *job, const pb_model_cluster *c,
                       const pb_model_step *s, int n);

#endif
