/* The known inputs and exact outputs of the validated collectives, element by
 * element, shared by the host check (coll_exec.c) and the device check
 * (coll_check_cuda.cu): header-only, plain scalars, host+device under nvcc.
 *
 * Input element i of rank r is v(r, i) = ((r + 2i) mod 3) - 1 + (i mod 4), in
 * -1..4: the first term differs between ranks, the second makes the result of
 * every reduction vary with i on any rank count (with the first term alone, a
 * sum over 3 ranks is 0 everywhere and hides a broken reduction). Every partial
 * result is an integer of magnitude at most 4 * nranks, exact in every type up
 * to the limits of pb_coll_expect_tolerance.
 *
 * Parameters: `count` is the full buffer in elements (pb_coll_exec_shape.count);
 * collectives that split the buffer use chunk = count / nranks per rank. */
#ifndef PB_COLL_EXPECT_H
#define PB_COLL_EXPECT_H

#include "coll/coll.h"
#include "core/dtype.h"

#include <math.h>
#include <stddef.h>

#ifndef PB_HD
#if defined(__CUDACC__)
#define PB_HD __host__ __device__
#else
#define PB_HD
#endif
#endif

/* The part of v(rank, i) that all ranks share, and the largest |v|. */
static inline PB_HD int pb_coll_expect_offset(size_t i) { return (int)(i % 4); }
#define PB_CX_MAX_INPUT 4

/* v(rank, i). */
static inline PB_HD int pb_coll_expect_input(int rank, size_t i)
{
    return (int)(((size_t)rank + 2 * i) % 3) - 1 + pb_coll_expect_offset(i);
}

/* Which global element a rank's send element j stands for: where the send
 * buffer is one rank's chunk (allgather), ranks send their own chunk of the
 * whole buffer; otherwise elements 0..send_count-1. */
static inline PB_HD size_t pb_coll_expect_send_index(pb_coll_span send, size_t count, int nranks, int rank, size_t j)
{
    return send == PB_SPAN_CHUNK ? (size_t)rank * (count / (size_t)nranks) + j : j;
}

/* Send element j of `rank` (send: the descriptor's send span). */
static inline PB_HD int pb_coll_expect_send_value(pb_coll_span send, size_t count, int nranks, int rank, size_t j)
{
    return pb_coll_expect_input(rank, pb_coll_expect_send_index(send, count, nranks, rank, j));
}

/* How many ranks r in 0..nranks-1 have v(r, i) = k - 1 + offset(i) (k in 0..2). Over r,
 * (r + 2i) mod 3 takes the residue k exactly when r = m (mod 3), with
 * m = (k - 2i) mod 3; there are ceil((nranks - m) / 3) such r. */
static inline PB_HD int pb_coll_expect_ranks_with(int nranks, size_t i, int k)
{
    int m = (k + 3 - (int)((2 * i) % 3)) % 3;
    return m < nranks ? (nranks - 1 - m) / 3 + 1 : 0;
}

/* op over v(0, i), ..., v(nranks - 1, i), exactly: O(1), not a loop over ranks
 * (the unit tests compare it with the loop). */
static inline PB_HD int pb_coll_expect_reduced(pb_dtype_redop op, int nranks, size_t i)
{
    int minus = pb_coll_expect_ranks_with(nranks, i, 0), zero = pb_coll_expect_ranks_with(nranks, i, 1),
        plus = pb_coll_expect_ranks_with(nranks, i, 2);
    int off = pb_coll_expect_offset(i);
    switch (op) {
    case PB_MAX: return off + (plus ? 1 : zero ? 0 : -1);
    case PB_MIN: return off + (minus ? -1 : zero ? 0 : 1);
    default: return plus - minus + nranks * off;
    }
}

/* Whether c is one this file knows the answer of. */
static inline PB_HD int pb_coll_expect_known(pb_coll c) { return (int)c >= 0 && (int)c < (int)PB_COLL_COUNT; }

/* The exact value of this rank's receive element j, one function per
 * collective (the table's `expected`; same signature as it). */
static inline PB_HD int pb_coll_expect_allreduce(pb_dtype_redop op, size_t count, int nranks, int rank, int root, size_t j)
{
    return pb_coll_expect_reduced(op, nranks, j);
}

static inline PB_HD int pb_coll_expect_allgather(pb_dtype_redop op, size_t count, int nranks, int rank, int root, size_t j)
{
    return pb_coll_expect_input((int)(j / (count / (size_t)nranks)), j);
}

static inline PB_HD int pb_coll_expect_reducescatter(pb_dtype_redop op, size_t count, int nranks, int rank, int root,
                                                   size_t j)
{
    return pb_coll_expect_reduced(op, nranks, (size_t)rank * (count / (size_t)nranks) + j);
}

static inline PB_HD int pb_coll_expect_broadcast(pb_dtype_redop op, size_t count, int nranks, int rank, int root, size_t j)
{
    return pb_coll_expect_input(root, j);
}

/* Defined on the root only (the table's root_only_output). */
static inline PB_HD int pb_coll_expect_reduce(pb_dtype_redop op, size_t count, int nranks, int rank, int root, size_t j)
{
    return pb_coll_expect_reduced(op, nranks, j);
}

/* Block q of my output is block `rank` of q's input. */
static inline PB_HD int pb_coll_expect_alltoall(pb_dtype_redop op, size_t count, int nranks, int rank, int root, size_t j)
{
    size_t chunk = count / (size_t)nranks;
    return pb_coll_expect_input((int)(j / chunk), (size_t)rank * chunk + j % chunk);
}

/* From rank - 1, as nccl-tests' sendrecv. */
static inline PB_HD int pb_coll_expect_sendrecv(pb_dtype_redop op, size_t count, int nranks, int rank, int root, size_t j)
{
    return pb_coll_expect_input((rank - 1 + nranks) % nranks, j);
}

/* Here `count` is this rank's receive count (PB_SPAN_SKEWED): nranks blocks
 * of count / nranks, block q from rank q. Each block starts at a multiple of
 * PB_COLL_SKEW_UNIT in q's send buffer, the period of v(q, i) in i
 * (coll_skew.h), so its element k is v(q, k). */
static inline PB_HD int pb_coll_expect_alltoallv(pb_dtype_redop op, size_t count, int nranks, int rank, int root, size_t j)
{
    size_t block = count / (size_t)nranks;
    return pb_coll_expect_input((int)(j / block), j % block);
}

/* The same by enum, for device code: a kernel cannot call the host table's
 * function pointers, so this one switch stands in for the table there. The
 * host check uses the table. A new collective adds its case here. */
static inline PB_HD int pb_coll_expect_expected(pb_coll c, pb_dtype_redop op, size_t count, int nranks, int rank, int root,
                                       size_t j)
{
    switch (c) {
    case PB_COLL_ALLGATHER: return pb_coll_expect_allgather(op, count, nranks, rank, root, j);
    case PB_COLL_REDUCESCATTER: return pb_coll_expect_reducescatter(op, count, nranks, rank, root, j);
    case PB_COLL_BROADCAST: return pb_coll_expect_broadcast(op, count, nranks, rank, root, j);
    case PB_COLL_REDUCE: return pb_coll_expect_reduce(op, count, nranks, rank, root, j);
    case PB_COLL_ALLTOALL: return pb_coll_expect_alltoall(op, count, nranks, rank, root, j);
    case PB_COLL_SENDRECV: return pb_coll_expect_sendrecv(op, count, nranks, rank, root, j);
    case PB_COLL_ALLTOALLV: return pb_coll_expect_alltoallv(op, count, nranks, rank, root, j);
    default: return pb_coll_expect_allreduce(op, count, nranks, rank, root, j);
    }
}

/* Absolute tolerance when checking a reduction over nranks in type t. Integers
 * up to 2^(mantissa bits + 1) are exact, so while every partial result
 * (|x| <= PB_CX_MAX_INPUT * nranks) stays below that there is no tolerance;
 * above it, each of the nranks - 1 roundings is off by at most eps * |x|. */
static inline PB_HD double pb_coll_expect_tolerance(pb_dtype t, int nranks)
{
    double exact_limit = t == PB_BFLOAT16 ? 256 : t == PB_FLOAT16 ? 2048 : 1 << 24;
    double eps = t == PB_BFLOAT16 ? 0x1p-8 : t == PB_FLOAT16 ? 0x1p-11 : 0x1p-24;
    double big = (double)PB_CX_MAX_INPUT * nranks;
    return big <= exact_limit ? 0.0 : nranks * eps * big;
}

/* Whether a received value is wrong; NaN always is. */
static inline PB_HD int pb_coll_expect_is_wrong(double got, double want, double tol) { return !(fabs(got - want) <= tol); }

/* The byte pattern of point-to-point validation: byte i sent by `rank`. */
static inline PB_HD unsigned char pb_coll_expect_byte(int rank, size_t i)
{
    return (unsigned char)(i * 7 + (size_t)rank * 13 + 1);
}

#endif
