/* Device-wide synchronisation points outside the backend. On a GPU,
 * cudaMalloc and cudaFree wait for every stream of the device, the
 * communication streams included: a compute engine's allocation behind a
 * receive whose send has not been issued yet never returns. The NCCL
 * rehearsal (comm_rehearse.c) installs its wait here, so that the host
 * engine's allocations rehearse that rule too; without it these calls do
 * nothing. */
#ifndef PB_DEVSYNC_H
#define PB_DEVSYNC_H

/* Waits for every communication stream of the process; `why` names the
 * point in a timeout message. */
typedef int (*pb_devsync_fn)(const char *why);

void pb_devsync_install(pb_devsync_fn wait);

/* PB_OK at once when nothing is installed. */
int pb_devsync_wait(const char *why);

/* Set by the runner (harness/runner.c) around its timed iterations: an
 * allocation or free there synchronises the device inside the measured step.
 * The NCCL rehearsal refuses one; other backends only keep the flag. */
void pb_devsync_timed(int on);
int pb_devsync_in_timed(void);

#endif
