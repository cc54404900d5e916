/* Acceptance rules judged on a run_all.sh results folder: the files a rule's
 * metric reads ("<source>*.csv", matched literally and sorted), read and then
 * judged by plan/thresholds_eval.h. A file that cannot be read, is cut short or
 * garbled makes the rule untrusted, naming FILE:LINE. */
#ifndef PB_THRESHOLDS_RUN_H
#define PB_THRESHOLDS_RUN_H

#include "plan/thresholds.h"
#include "plan/thresholds_eval.h"

#include <stddef.h>

/* The tables of one metric in a run's folder: the paths found, and those read
 * that hold the metric's column (a file without it is another benchmark's shape). */
typedef struct pb_thresholds_run {
    char **paths;
    int npaths;
    pb_thresholds_eval_table *tabs;
    int ntab;
} pb_thresholds_run;

/* Whether `name` (a file name in a results folder) is one a rule may read:
 * some metric's "<source>*.csv". */
int pb_thresholds_run_reads(const char *name);

/* Find and read the tables of `metric` in `dir`; reasons not to trust them go
 * to `o` (started). Free with pb_thresholds_run_free, whatever happened. */
void pb_thresholds_run_load(pb_thresholds_run *t, const pb_thresholds_metric *metric, const char *dir,
                            pb_thresholds_eval_outcome *o);
void pb_thresholds_run_free(pb_thresholds_run *t);

/* Rule `r` judged on the run in `dir`; with `from`, the file the measured
 * value came from ("" when none). */
pb_thresholds_eval_outcome pb_thresholds_run_judge(const pb_thresholds_rule *r, const char *dir, char *from, size_t len);

#endif
