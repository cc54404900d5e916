/* The backend interface: a table of function pointers, one table per backend
 * (MPI in host memory, NCCL in GPU memory). Benchmarks move their measured
 * traffic only through this table, so a new backend touches one file.
 *
 * Semantics, chosen so that both a blocking library (MPI) and a stream-ordered
 * one (NCCL) fit:
 *  - every operation is *issued* by its call and is complete after sync();
 *    MPI collectives happen to complete inside the call, NCCL ones on a stream;
 *  - send/recv are always non-blocking: post them, then sync(). Between
 *    group_start() and group_end() they are posted together (NCCL needs this
 *    to pair a send with a receive; MPI ignores it);
 *  - counts are in elements, and for allgather/reducescatter/alltoall they are
 *    per-rank counts as the libraries define them; coll_exec.h maps a buffer
 *    size in bytes to them as nccl-tests does. */
#ifndef PB_COMM_H
#define PB_COMM_H

#include "core/dtype.h"
#include "core/mem.h"

#include <mpi.h>
#include <stddef.h>

typedef struct pb_comm pb_comm; /* a backend communicator over a group of ranks */

typedef struct pb_comm_backend {
    const char *name; /* as in the backend table (backend.c) */
    pb_mem_kind mem;  /* where buffers live */
    /* 1 where the library's broadcast has one buffer (MPI_Bcast): an
     * out-of-place broadcast would add a copy on the root that OSU does not
     * make, so callers issue it in place (send == recv). */
    int broadcast_in_place;
    /* 1 where each rank needs a GPU of its own (NCCL): more ranks on a node
     * than GPUs is refused before the library is called. */
    int one_gpu_per_rank;
    /* 1 where the library writes a log beside the results (NCCL_DEBUG_FILE,
     * pb_bench_nccl_log_env). */
    int library_log;
    /* 1 where the backend calls MPI from threads of its own (the NCCL
     * rehearsal's streams): MPI must be started with MPI_THREAD_MULTIPLE
     * (pb_comm_backend_thread_level). */
    int threads_call_mpi;

    /* Collective over `group`: create a communicator for the traffic. The
     * status is agreed over `group` (pb_world_agree_at, site "comm"): every rank of
     * the group gets the same one; a caller whose groups split the world
     * agrees over the world after it. */
    int (*comm_create)(MPI_Comm group, pb_comm **out);
    void (*comm_destroy)(pb_comm *c);
    int (*rank)(const pb_comm *c);
    int (*size)(const pb_comm *c);

    /* Buffers in the backend's memory, and copies to and from the host. */
    int (*alloc)(size_t bytes, void **out);
    void (*free)(void *p);
    /* Both complete on return: from_host's data has landed in device memory,
     * so an operation issued next on any stream reads it. */
    int (*to_host)(void *host_dst, const void *src, size_t bytes);
    int (*from_host)(void *dst, const void *host_src, size_t bytes);

    int (*allreduce)(pb_comm *c, const void *send, void *recv, size_t count, pb_dtype t, pb_dtype_redop op);
    int (*allgather)(pb_comm *c, const void *send, void *recv, size_t sendcount, pb_dtype t);
    int (*reducescatter)(pb_comm *c, const void *send, void *recv, size_t recvcount, pb_dtype t, pb_dtype_redop op);
    int (*broadcast)(pb_comm *c, const void *send, void *recv, size_t count, pb_dtype t, int root);
    int (*reduce)(pb_comm *c, const void *send, void *recv, size_t count, pb_dtype t, pb_dtype_redop op, int root);
    int (*alltoall)(pb_comm *c, const void *send, void *recv, size_t count_per_peer, pb_dtype t);

    int (*group_start)(pb_comm *c);
    int (*group_end)(pb_comm *c);
    int (*send)(pb_comm *c, const void *buf, size_t count, pb_dtype t, int peer);
    int (*recv)(pb_comm *c, void *buf, size_t count, pb_dtype t, int peer);

    /* Blocking point-to-point, complete on return: the calls OSU's latency
     * test uses. NULL where the library has none (NCCL); callers then post
     * with send/recv and sync. */
    int (*send_blocking)(pb_comm *c, const void *buf, size_t count, pb_dtype t, int peer);
    int (*recv_blocking)(pb_comm *c, void *buf, size_t count, pb_dtype t, int peer);

    /* Wait until everything issued on `c` has completed. */
    int (*sync)(pb_comm *c);

    /* Library name and version, for metadata ("Open MPI v4.1.4", "NCCL 2.28.3"). */
    void (*version)(char *buf, size_t len);

    /* ---- Stream-ordered backends only (NCCL). NULL in the MPI backends,
     * whose operations complete on the host inside sync(). ---- */

    /* Ordering against a compute engine's queue (pb_compute.queue, same
     * device), without blocking the host: traffic issued on c from now on
     * starts after the work already queued there (after_queue), or work
     * queued there from now on starts after the traffic issued on c so far
     * (before_queue). ordering.h decides when to use these. */
    int (*after_queue)(pb_comm *c, void *queue);
    int (*before_queue)(pb_comm *c, void *queue);

    /* Device time of traffic (CUDA events): span_begin/span_end bracket
     * operations issued on c; after sync(), span_take adds the device time
     * of the spans since the last take to *us (microseconds) and their
     * number to *count (either may be NULL). */
    int (*span_begin)(pb_comm *c);
    int (*span_end)(pb_comm *c);
    int (*span_take)(pb_comm *c, double *us, int *count);

    /* CUDA graphs: operations issued on c between capture_begin and
     * capture_end are recorded into one graph instead of running; replay
     * launches that graph (complete it with sync). A new capture replaces the
     * old graph, and freeing any buffer of the backend discards it (a graph
     * points into the buffers it captured). */
    int (*capture_begin)(pb_comm *c);
    int (*capture_end)(pb_comm *c);
    int (*replay)(pb_comm *c);
} pb_comm_backend;

/* The backends' tables, one getter each, named pb_comm_backend_<--backend>
 * with the memory when it is not the name's default. */

/* The MPI backend (host memory). */
const pb_comm_backend *pb_comm_backend_mpi(void);

/* NCCL's ordering rules rehearsed on the CPU, in host memory, over MPI:
 * for tests and rehearsals only (comm_rehearse.c, docs/gpu.md). In every
 * build. */
const pb_comm_backend *pb_comm_backend_nccl_rehearse(void);

#ifdef PB_HAVE_CUDA
/* CUDA builds only (files ending in _nccl.c or _cuda.c): the MPI backend on
 * device buffers staged through host memory (comm_mpi_cuda.c), and NCCL
 * (comm_nccl.c). */
const pb_comm_backend *pb_comm_backend_mpi_device(void);
const pb_comm_backend *pb_comm_backend_nccl(void);
#endif

/* ---- The backend table (backend.c): one row per --backend/--mem pair ---- */

/* Backend by name and memory, as given to --backend and --mem: mpi/host,
 * mpi/device (device buffers staged through host memory, so several ranks
 * can share one GPU), nccl/device, nccl-rehearse/host; mem NULL: the name's default memory.
 * PB_ERR_USAGE for an unknown name or memory, PB_ERR_ENV when the build
 * lacks it. */
int pb_comm_backend_select(const char *name, const char *mem, const pb_comm_backend **out);

/* The MPI thread level the --backend named in argv needs (MPI_THREAD_MULTIPLE
 * where it calls MPI from threads of its own), `wanted` otherwise, and for no
 * --backend, an unknown name or one this build lacks: the harness asks before
 * MPI starts, so before the options are parsed. */
int pb_comm_backend_thread_level(int argc, char **argv, int wanted);

/* Every backend name once, in table order, NULL-terminated. */
const char *const *pb_comm_backend_names(void);

/* PB_OK for a name of the table, else PB_ERR_USAGE naming `option` and the
 * names (the --backend check, pb_options_set_backends). */
int pb_comm_backend_check_name(const char *option, const char *name);

/* The --backend help: each name with its memory, and the GPU default. */
const char *pb_comm_backend_help(void);

/* The backend used without --backend: the GPU default of this build when
 * every rank sees a GPU, else the table's first. */
const char *pb_comm_backend_default(int gpus_on_every_rank);

#endif
