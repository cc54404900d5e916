/* plan --reproduce (plan_reproduce.c): every figure of the seed table
 * (docs/plan.md), worked out from first principles and compared with what
 * the document states. */
#ifndef PB_PLAN_REPRODUCE_H
#define PB_PLAN_REPRODUCE_H

#include <stdio.h>

/* Print each figure with its formula, value and verdict. PB_OK when every
 * figure the model should reproduce does; PB_ERR_CHECK otherwise. */
int pb_plan_reproduce(FILE *out);

#endif
