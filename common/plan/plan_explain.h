/* Why the planner ranks a configuration where it does (plan_explain.c). */
#ifndef PB_PLAN_EXPLAIN_H
#define PB_PLAN_EXPLAIN_H

#include "plan/model.h"

/* Where configuration `want` (t, p, d) ranks among the valid ones of `s`
 * (sorted), and why it is not first: one sentence into `buf`. Returns its
 * rank (1-based), 0 when rejected or absent; `gap` gets step/best - 1. */
int pb_plan_explain(const pb_model_step *s, int n, const int want[3], char *buf, int len, double *gap);

/* The verdict on pb_plan_explain's rank and gap: first, near the top (within
 * 5% of the best step), further behind, or rejected (rank 0, whatever gap). */
const char *pb_plan_explain_verdict(int rank, double gap);

/* The documents' configuration for a preset on a GPU count (70B on 256,
 * 175B on 512), or 0 when they give none. */
int pb_plan_explain_documented(const char *model, int gpus, int want[3]);

#endif
