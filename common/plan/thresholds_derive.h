/* Thresholds from a golden run (acceptance --derive, docs/acceptance.md): which
 * rules a run's result tables hold a headline figure for, and the threshold each
 * gets from its measured value and a margin. No I/O: the acceptance tool reads
 * the tables, judges each proposed rule with plan/thresholds_eval.h (so that the
 * value a rule is derived from is the value a later check reads: the worst
 * matching row, trustworthy and checked) and writes the file. */
#ifndef PB_THRESHOLDS_DERIVE_H
#define PB_THRESHOLDS_DERIVE_H

#include "plan/thresholds.h"
#include "plan/thresholds_eval.h"

/* One headline figure: a metric, whether it is a rate (>=) or a time or a
 * share of one (<=), a selector every rule of it carries, the keys whose every
 * measured value gets a rule of its own, and the key fixed at the largest (or
 * smallest) value measured for each of them. */
typedef struct pb_thresholds_derive_headline {
    const char *metric;
    enum pb_th_op op;
    int fixed;          /* a PB_TH_KEY_* every rule sets to fixed_value, or -1 */
    const char *fixed_value;
    int by[3];          /* PB_TH_KEY_* values, -1 after the last */
    int pick;           /* PB_TH_KEY_*, or -1 */
    int largest;        /* pick the largest value measured, else the smallest */
} pb_thresholds_derive_headline;

/* The headline figures, in the order the derived file lists them; NULL metric ends. */
const pb_thresholds_derive_headline *pb_thresholds_derive_headlines(void);

/* The rules headline h proposes for the `ntab` tables of its metric: each
 * "METRIC KEY=VALUE ..." without its comparison, one per distinct value of the
 * `by` keys in rows its metric and fixed selector select, at the picked value
 * of those rows. A value a threshold file cannot hold (empty, a blank, '#') is
 * left out. PB_OK with *out (n strings, each and the array malloc'ed; free with
 * pb_thresholds_derive_free), or PB_ERR_ENV when memory runs out. */
int pb_thresholds_derive_propose(const pb_thresholds_derive_headline *h, const pb_thresholds_eval_table *tabs, int ntab,
                                 char ***out, int *n);

void pb_thresholds_derive_free(char **rules, int n);

/* The threshold for a figure measured at `measured`: less `margin` (a fraction)
 * for >=, plus it for <=, to 4 significant digits rounded away from the
 * measured value, so that the figure it came from always passes. */
double pb_thresholds_derive_threshold(enum pb_th_op op, double measured, double margin);

#endif
