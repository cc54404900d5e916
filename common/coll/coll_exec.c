#include "coll/coll_exec.h"

#include "coll/coll_expect.h"
#include "coll/coll_skew.h"
#include "core/error.h"
#include "core/parse.h"

#include <math.h>
#include <stdlib.h>

static size_t span_count(pb_coll_span s, size_t count, size_t n) { return s == PB_SPAN_CHUNK ? count / n : count; }

void pb_coll_exec_shape_of(pb_coll c, size_t bytes, pb_dtype t, int nranks, pb_coll_exec_shape *out)
{
    size_t n = (size_t)nranks, count = bytes / pb_dtype_size(t);
    /* Whole blocks per rank; a skewed split also whole units of the input pattern (coll_skew.h). */
    size_t unit = pb_coll_skewed(c) ? PB_COLL_SKEW_UNIT * n : n;
    if (count == 0) count = 1;
    if (pb_coll_splits(c)) {
        count -= count % unit;
        if (count == 0) count = unit;
    }
    out->count = count;
    out->bytes = count * pb_dtype_size(t);
    out->send_count = out->recv_count = out->param = count;
    out->skew = 1.0;
    const pb_coll_desc *d = pb_coll_desc_of(c);
    if (!d) return;
    out->send_count = span_count(d->send, count, n);
    out->recv_count = span_count(d->recv, count, n);
    out->param = span_count(d->param, count, n);
}

void pb_coll_exec_shape_skewed(pb_coll c, size_t bytes, pb_dtype t, int nranks, int rank, double skew,
                               pb_coll_exec_shape *out)
{
    pb_coll_exec_shape_of(c, bytes, t, nranks, out);
    if (!pb_coll_skewed(c)) return;
    out->skew = skew;
    out->recv_count = pb_coll_skew_recv_count(out->count, nranks, skew, rank);
}

size_t pb_coll_exec_expect_count(pb_coll c, const pb_coll_exec_shape *sh)
{
    return pb_coll_skewed(c) ? sh->recv_count : sh->count;
}

int pb_coll_exec_issue(const pb_comm_backend *b, pb_comm *comm, pb_coll c, const pb_coll_exec_shape *sh, const void *send,
                  void *recv, pb_dtype t, pb_dtype_redop op, int root)
{
    const pb_coll_desc *d = pb_coll_desc_of(c);
    if (!d) return pb_fail(PB_ERR_USAGE, "collective %d is not implemented", (int)c);
    return d->issue(b, comm, sh, send, recv, t, op, root);
}

/* The collectives that have an in-place form, for the refusal. */
static const char *in_place_names(char *buf, size_t len)
{
    const char *names[PB_COLL_COUNT + 1];
    int n = 0;
    for (int c = 0; c < PB_COLL_COUNT; c++)
        if (pb_coll_desc_of((pb_coll)c)->in_place != PB_IN_PLACE_NONE) names[n++] = pb_coll_name((pb_coll)c);
    names[n] = NULL;
    return pb_parse_join_names(names, buf, len);
}

int pb_coll_exec_in_place(const char *option, pb_coll c, const pb_coll_exec_shape *sh, pb_dtype t, int rank,
                          void *buf, void **send, void **recv)
{
    const pb_coll_desc *d = pb_coll_desc_of(c);
    size_t es = pb_dtype_size(t);
    char *base = buf;
    *send = *recv = buf;
    switch (d ? d->in_place : PB_IN_PLACE_NONE) {
    case PB_IN_PLACE_SAME: return PB_OK;
    case PB_IN_PLACE_SEND_BLOCK: *send = base + (size_t)rank * sh->send_count * es; return PB_OK;
    case PB_IN_PLACE_RECV_BLOCK: *recv = base + (size_t)rank * sh->recv_count * es; return PB_OK;
    case PB_IN_PLACE_NONE: break;
    }
    char names[256];
    return pb_error_usage(option, "%s has no in-place form; expected %s", pb_coll_name(c),
                          in_place_names(names, sizeof names));
}

int pb_coll_exec_devtime_batch(int n)
{
    const char *env = getenv("PARABENCH_DEVTIME_BATCH");
    char *end = NULL;
    long v = env && *env ? strtol(env, &end, 10) : 0;
    if (!env || !*env || *end || v < 1 || v >= n) return n;
    return (int)v;
}

int pb_coll_exec_devtime_ops(int done)
{
    if (done <= 4) return done;
    return done / 4 > 4 ? done / 4 : 4;
}

/* One span of operations first .. first+count-1, completed. */
static int timed_span(const pb_comm_backend *b, pb_comm *comm, int first, int count, pb_coll_exec_op_fn op, void *ctx)
{
    PB_TRY(b->span_begin(comm));
    int status = PB_OK;
    for (int i = first; i < first + count && status == PB_OK; i++) status = op(ctx, i);
    int end = b->span_end(comm); /* always: an open span would refuse the next begin */
    if (status == PB_OK) status = end;
    return status == PB_OK ? b->sync(comm) : status;
}

int pb_coll_exec_device_time(const pb_comm_backend *b, pb_comm *comm, int n, pb_coll_exec_op_fn op, void *ctx,
                             double *us_per_op)
{
    *us_per_op = NAN;
    if (!b->span_begin || n < 1) return PB_OK;
    int batch = pb_coll_exec_devtime_batch(n), status = PB_OK;
    for (int first = 0; first < n && status == PB_OK; first += batch)
        status = timed_span(b, comm, first, first + batch <= n ? batch : n - first, op, ctx);
    double us = 0;
    int spans = 0, take = b->span_take(comm, &us, &spans); /* always: forget the spans */
    if (status == PB_OK) status = take;
    if (status == PB_OK && spans > 0) *us_per_op = us / n;
    return status;
}

double pb_coll_exec_input_value(int rank, size_t i) { return pb_coll_expect_input(rank, i); }

/* The per-element arithmetic lives in coll_expect.h, which the device check
 * (coll_check_cuda.cu) compiles too: these loops are the host's use of it,
 * through the table. */
void pb_coll_exec_fill(pb_coll c, const pb_coll_exec_shape *sh, pb_dtype t, int rank, int nranks, int root, void *host_send)
{
    (void)root;
    const pb_coll_desc *d = pb_coll_desc_of(c);
    pb_coll_span send = d ? d->send : PB_SPAN_FULL;
    for (size_t j = 0; j < sh->send_count; j++)
        pb_dtype_set(t, host_send, j, pb_coll_expect_send_value(send, sh->count, nranks, rank, j));
}

double pb_coll_exec_tolerance(pb_dtype t, int nranks) { return pb_coll_expect_tolerance(t, nranks); }

size_t pb_coll_exec_count_wrong(pb_coll c, const pb_coll_exec_shape *sh, pb_dtype t, pb_dtype_redop op, int rank, int nranks,
                           int root, const void *host_recv)
{
    const pb_coll_desc *d = pb_coll_desc_of(c);
    if (!d) return sh->recv_count; /* no known answer: nothing can be right */
    if (!pb_coll_output_defined(c, rank, root)) return 0;
    double tol = pb_coll_expect_tolerance(t, nranks);
    size_t wrong = 0, count = pb_coll_exec_expect_count(c, sh);
    for (size_t j = 0; j < sh->recv_count; j++) {
        double want = d->expected(op, count, nranks, rank, root, j);
        wrong += (size_t)pb_coll_expect_is_wrong(pb_dtype_get(t, host_recv, j), want, tol); /* NaN is wrong */
    }
    return wrong;
}
