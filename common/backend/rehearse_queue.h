/* The in-order executor of the NCCL rehearsal (comm_rehearse.c): one worker
 * thread per communicator runs the units pushed to it one after another, as a
 * CUDA stream runs its kernels. The host only queues; pb_rehearse_queue_drain
 * waits for one queue (cudaStreamSynchronize), pb_rehearse_queue_drain_all for
 * every live queue of the process (a device-wide synchronisation: cudaMalloc,
 * cudaFree, a blocking cudaMemcpy).
 *
 * A unit that fails leaves the queue in error, as NCCL's asynchronous error
 * leaves a communicator: the units after it are dropped unrun and every drain
 * returns that status. Drains poll the watchdog (core/watchdog.h): a wait that
 * never completes, because a peer never posts the matching operation, returns
 * PB_ERR_TIMEOUT once --timeout has passed, and the watchdog ends the job. */
#ifndef PB_REHEARSE_QUEUE_H
#define PB_REHEARSE_QUEUE_H

typedef struct pb_rehearse_queue pb_rehearse_queue;

/* Runs one unit on the worker thread and frees it; returns its status. */
typedef int (*pb_rehearse_queue_run_fn)(void *unit);
/* Frees a unit that is dropped unrun (after an error, or at destroy). */
typedef void (*pb_rehearse_queue_drop_fn)(void *unit);

int pb_rehearse_queue_create(pb_rehearse_queue_run_fn run, pb_rehearse_queue_drop_fn drop, pb_rehearse_queue **out);

/* Queue `unit` behind everything pushed before it; the call does not wait. */
int pb_rehearse_queue_push(pb_rehearse_queue *q, void *unit);

/* Wait until every unit pushed so far has run; the queue's status. `what`
 * names the wait in the timeout message. */
int pb_rehearse_queue_drain(pb_rehearse_queue *q, const char *what);

/* Wait for every live queue of the process: the device synchronisation.
 * PB_OK or PB_ERR_TIMEOUT: a queue's own error is left to its drain, as
 * cudaMalloc does not report NCCL's asynchronous errors. */
int pb_rehearse_queue_drain_all(const char *what);

/* Units pushed and not yet run (for tests). */
int pb_rehearse_queue_pending(pb_rehearse_queue *q);

/* Stop the worker after the units already queued have run (or been dropped,
 * with a status saying why) and free the queue. Returns the queue's status. */
int pb_rehearse_queue_destroy(pb_rehearse_queue *q);

#endif
