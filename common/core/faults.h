/* Test-only fault injection, driven by the environment so that no option a
 * user sees can produce wrong results (docs/reliability.md):
 *   PARABENCH_TEST_CORRUPT=RANK  that rank corrupts one element it validates;
 *   PARABENCH_TEST_SKIP=RANK     that rank skips the measured operations, so
 *                                its peers hang and the watchdog must fire. */
#ifndef PB_FAULTS_H
#define PB_FAULTS_H

/* The rank named by the variable, or -1 when it is unset. */
int pb_fault_rank(const char *variable);

static inline int pb_test_corrupt_rank(void) { return pb_fault_rank("PARABENCH_TEST_CORRUPT"); }
static inline int pb_test_skip_rank(void) { return pb_fault_rank("PARABENCH_TEST_SKIP"); }

#endif
