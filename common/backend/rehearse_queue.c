/* The rehearsal's in-order executor (rehearse_queue.h). */
#include "backend/rehearse_queue.h"

#include "core/error.h"
#include "core/watchdog.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

typedef struct node {
    void *unit;
    struct node *next;
} node;

struct pb_rehearse_queue {
    pb_rehearse_queue_run_fn run;
    pb_rehearse_queue_drop_fn drop;
    pthread_mutex_t mu;
    pthread_cond_t work; /* a unit was pushed, or stop */
    pthread_cond_t done; /* a unit finished */
    node *head, *tail;
    int pending; /* pushed and not yet finished (the running one included) */
    int status;  /* the first failure; sticky */
    int stop;
    pthread_t worker;
    pb_rehearse_queue *next_live;
};

/* Every live queue, for the device-wide synchronisation. */
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static pb_rehearse_queue *live;

static void *work(void *arg)
{
    pb_rehearse_queue *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->head && !q->stop) pthread_cond_wait(&q->work, &q->mu);
        if (!q->head) break; /* stop, and nothing left */
        node *n = q->head;
        q->head = n->next;
        if (!q->head) q->tail = NULL;
        int failed = q->status != PB_OK;
        pthread_mutex_unlock(&q->mu);
        /* After an error the communicator is unusable, as after NCCL's async error. */
        int status = PB_OK;
        if (failed) q->drop(n->unit);
        else status = q->run(n->unit);
        free(n);
        pthread_mutex_lock(&q->mu);
        if (q->status == PB_OK) q->status = status;
        q->pending--;
        pthread_cond_broadcast(&q->done);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

int pb_rehearse_queue_create(pb_rehearse_queue_run_fn run, pb_rehearse_queue_drop_fn drop, pb_rehearse_queue **out)
{
    pb_rehearse_queue *q = calloc(1, sizeof *q);
    PB_CHECK(q, PB_ERR_ENV, "rehearsal: out of memory for a stream");
    q->run = run;
    q->drop = drop;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->work, NULL);
    pthread_cond_init(&q->done, NULL);
    if (pthread_create(&q->worker, NULL, work, q) != 0) {
        free(q);
        return pb_fail(PB_ERR_ENV, "rehearsal: cannot start a stream's thread");
    }
    pthread_mutex_lock(&live_mu);
    q->next_live = live;
    live = q;
    pthread_mutex_unlock(&live_mu);
    *out = q;
    return PB_OK;
}

int pb_rehearse_queue_push(pb_rehearse_queue *q, void *unit)
{
    node *n = malloc(sizeof *n);
    if (!n) {
        q->drop(unit);
        return pb_fail(PB_ERR_ENV, "rehearsal: out of memory queueing an operation");
    }
    *n = (node){unit, NULL};
    pthread_mutex_lock(&q->mu);
    if (q->tail) q->tail->next = n;
    else q->head = n;
    q->tail = n;
    q->pending++;
    pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->mu);
    return PB_OK;
}

int pb_rehearse_queue_pending(pb_rehearse_queue *q)
{
    pthread_mutex_lock(&q->mu);
    int n = q->pending;
    pthread_mutex_unlock(&q->mu);
    return n;
}

static atomic_int told; /* a timeout was reported: the job is ending */

/* Wait for q with q->mu held; the watchdog's thread is the only way out of a
 * wait that never ends, as for a CUDA stream. */
static int wait_locked(pb_rehearse_queue *q, const char *what)
{
    while (q->pending > 0) {
        if (pb_watchdog_fired() && atomic_exchange(&told, 1)) return PB_ERR_TIMEOUT; /* said once */
        if (pb_watchdog_fired())
            return pb_fail(PB_ERR_TIMEOUT, "NCCL rehearsal: %s did not complete within --timeout: an operation "
                                           "waits for a peer that never posts its match (on a GPU this hangs)", what);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 10 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        int rc = pthread_cond_timedwait(&q->done, &q->mu, &until);
        if (rc != 0 && rc != ETIMEDOUT) return pb_fail(PB_ERR_ENV, "NCCL rehearsal: waiting for %s failed", what);
    }
    return q->status;
}

int pb_rehearse_queue_drain(pb_rehearse_queue *q, const char *what)
{
    int entered = pb_watchdog_enter(what);
    pthread_mutex_lock(&q->mu);
    int status = wait_locked(q, what);
    pthread_mutex_unlock(&q->mu);
    pb_watchdog_leave(entered);
    return status;
}

int pb_rehearse_queue_drain_all(const char *what)
{
    int entered = pb_watchdog_enter(what);
    int status = PB_OK;
    pthread_mutex_lock(&live_mu);
    for (pb_rehearse_queue *q = live; q && status != PB_ERR_TIMEOUT; q = q->next_live) {
        pthread_mutex_lock(&q->mu);
        int s = wait_locked(q, what);
        pthread_mutex_unlock(&q->mu);
        if (s == PB_ERR_TIMEOUT) status = s; /* a queue's own error is its sync's to report */
    }
    pthread_mutex_unlock(&live_mu);
    pb_watchdog_leave(entered);
    return status;
}

int pb_rehearse_queue_destroy(pb_rehearse_queue *q)
{
    if (!q) return PB_OK;
    int status = pb_rehearse_queue_drain(q, "a communicator's destruction");
    pthread_mutex_lock(&live_mu);
    for (pb_rehearse_queue **p = &live; *p; p = &(*p)->next_live)
        if (*p == q) {
            *p = q->next_live;
            break;
        }
    pthread_mutex_unlock(&live_mu);
    /* A worker stuck in a wait that never ends is left to the watchdog, which
     * ends the job; freeing its queue under it would be worse. */
    if (status == PB_ERR_TIMEOUT) return status;
    pthread_mutex_lock(&q->mu);
    q->stop = 1;
    pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->worker, NULL);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->work);
    pthread_cond_destroy(&q->done);
    free(q);
    return status;
}
