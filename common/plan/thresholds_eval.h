/* One acceptance rule (plan/thresholds.h) judged against result tables that
 * are already read: the rows it selects, the size measured nearest the rule's,
 * the worst value of those rows, and the verdict with its reason. No I/O:
 * the acceptance tool finds and reads the files, prints and writes JUnit. */
#ifndef PB_THRESHOLDS_EVAL_H
#define PB_THRESHOLDS_EVAL_H

#include "core/csv.h"
#include "plan/result_notes.h"
#include "plan/thresholds.h"

enum pb_th_verdict { PB_TH_PASS, PB_TH_FAIL, PB_TH_SKIP };

/* A result file a rule reads: its path (only named in reasons), its rows and
 * the rows its benchmark marked untrustworthy. */
typedef struct pb_thresholds_eval_table {
    const char *path;
    pb_csv csv;
    pb_result_notes notes;
} pb_thresholds_eval_table;

typedef struct pb_thresholds_eval_outcome {
    enum pb_th_verdict v;
    double measured; /* worst matching value, NAN when none */
    int from_table;  /* the table and row `measured` came from, -1 when none */
    int from_row;
    int rows;      /* rows evaluated */
    int untrusted; /* a result it read cannot be trusted: why says which */
    int noted;     /* matching rows the benchmark itself marked untrustworthy (not folded) */
    char noted_why[300];
    char why[600]; /* for FAIL and SKIP */
} pb_thresholds_eval_outcome;

/* An outcome before anything is read: PASS, nothing measured. */
void pb_thresholds_eval_start(pb_thresholds_eval_outcome *o);

/* The first reason not to trust what a rule reads (a file that cannot be read,
 * a garbled row); the rule fails with it, later reasons are dropped. */
void pb_thresholds_eval_distrust(pb_thresholds_eval_outcome *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Judge rule `r` on the `ntab` tables holding its metric's column (none: the
 * benchmark did not run), into `o` (started, perhaps already distrusted while
 * the tables were read). A rule with a size takes the size measured nearest
 * it; the selected rows fold into the worst value; a row with wrong values,
 * a value that is not a finite number, or only untrustworthy rows fail it;
 * no rows of the rule's link class skip it. */
void pb_thresholds_eval(const pb_thresholds_rule *r, const pb_thresholds_eval_table *tabs, int ntab,
                        pb_thresholds_eval_outcome *o);

#endif
