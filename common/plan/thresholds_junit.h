/* Acceptance verdicts as JUnit XML, the format Jenkins and GitLab read: one
 * testcase per rule, a failed rule a <failure>, a skipped one <skipped>. */
#ifndef PB_THRESHOLDS_JUNIT_H
#define PB_THRESHOLDS_JUNIT_H

#include "plan/thresholds.h"
#include "plan/thresholds_eval.h"

/* Write `path` whole or not at all (core/atomic.h): the rules of `set`
 * (read from `tfile`), their outcomes `o` and the verdicts' counts
 * (by enum pb_th_verdict). PB_OK, or PB_ERR_ENV with a message naming
 * --junit when it cannot be written (a directory, no room, no memory). */
int pb_thresholds_junit_write(const char *path, const char *tfile, const pb_thresholds_set *set,
                              const pb_thresholds_eval_outcome *o, const int counts[3]);

#endif
