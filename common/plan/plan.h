/* The planner's commands on top of model.h: ranking printout (plan_print.c)
 * and the seed-figure reproduction (plan_repro.c). `plan --fit` is in
 * plan_fit.h. */
#ifndef PB_PLAN_H
#define PB_PLAN_H

#include "plan/model.h"

#include <stdio.h>

/* Header lines describing the job and the cluster. */
void pb_plan_print_setup(const pb_model_train *job, const pb_model_cluster *c, FILE *out);

/* The ranked table of valid configurations (at most `top`, <= 0 for all),
 * then every rejected one with its reason (with `top` > 0, only counts per
 * reason). `mark` (may be NULL) flags one
 * (t, p, d) with '*'. */
void pb_plan_print_ranking(const pb_model_step *s, int n, int top, const int mark[3], FILE *out);

/* Where configuration `want` (t, p, d) ranks among the valid ones of `s`
 * (sorted), and why it is not first: one sentence into `buf`. Returns its
 * rank (1-based), 0 when rejected or absent; `gap` gets step/best - 1. */
int pb_plan_explain(const pb_model_step *s, int n, const int want[3], char *buf, int len, double *gap);

/* The verdict on pb_plan_explain's rank and gap: first, near the top (within
 * 5% of the best step), further behind, or rejected (rank 0, whatever gap). */
const char *pb_plan_rank_verdict(int rank, double gap);

/* The documents' configuration for a preset on a GPU count (70B on 256,
 * 175B on 512), or 0 when they give none. */
int pb_plan_documented(const char *model, int gpus, int want[3]);

/* Term-by-term breakdown of one configuration. */
void pb_plan_print_step(const pb_model_step *s, FILE *out);

/* Write the setup and the configurations as JSON. PB_OK or PB_ERR_ENV. */
int pb_plan_write_json(const char *path, const char *cmdline, const pb_model_train *job, const pb_model_cluster *c,
                       const pb_model_step *s, int n);

/* plan --reproduce: every figure of the seed table (docs/plan.md). PB_OK when every
 * figure the model should reproduce does; PB_ERR_CHECK otherwise. */
int pb_plan_reproduce(FILE *out);

/* Global batch the planner assumes for a preset when none is given: the
 * published tokens per batch / sequence length (GPT-3 table 2.1, LLaMA). */
int64_t pb_plan_default_global_batch(const pb_presets_model *m);

#endif
