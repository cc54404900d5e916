/* Point-to-point measurements between one pair of ranks, the OSU way:
 *  - latency: ping-pong with blocking calls where the backend has them, half
 *    the round trip, timed on the initiator;
 *  - bw: a window of non-blocking sends, then a small ack from the receiver;
 *  - bibw: both ranks send a window to each other at once.
 * The pair agrees on the warm-up and timed counts from the first warm-up
 * iteration's time, so that a time cap (max_seconds) bounds the whole size,
 * warm-up included, without a per-iteration collective in the measured loop.
 * Ranks outside the pair do not take part and should wait with pb_p2p_sleepy_wait so they leave the cores to the pair. */
#ifndef PB_P2P_H
#define PB_P2P_H

#include "backend/buffers.h"
#include "backend/comm.h"
#include "core/options.h"
#include "core/stats.h"

typedef enum { PB_P2P_LATENCY, PB_P2P_BW, PB_P2P_BIBW, PB_P2P_MODES } pb_p2p_mode;

/* Latency up to 8 KiB is timed per batch of this many round trips: the
 * statistics (min, median, p99) are over batch means; the mean is OSU's. */
#define PB_P2P_LATENCY_BATCH 16

/* Under a time cap, the fewest timed iterations (-n permitting): two samples
 * give a figure a spread that a comparison of runs can weigh. */
#define PB_P2P_MIN_TIMED 2

typedef struct pb_p2p_cfg {
    pb_p2p_mode mode;
    int iters, warmup, window;
    double max_seconds;
    int check;
} pb_p2p_cfg;

typedef struct pb_p2p_result {
    pb_stats st;     /* per iteration (latency up to 8 KiB: per batch of PB_P2P_LATENCY_BATCH): half round
                      * trip (latency) or window time (bw, bibw) */
    double bw_GBps;  /* bytes moved per second, 1e9 B/s (latency mode: size / half round trip) */
    int iters;
    long long wrong; /* -1 when not checked */
} pb_p2p_result;

const char *pb_p2p_mode_name(pb_p2p_mode m);
const char *const *pb_p2p_mode_names(void); /* NULL-terminated, in enum order */

/* OSU's counts per mode: latency 10000 (+100 warm-up) up to 8 KiB and 1000
 * (+10) above; bw and bibw 100 (+10) and 20 (+2), with a window of 64. */
const pb_options_iter_policy *pb_p2p_policy(pb_p2p_mode m);

/* The pair's counts under a time cap of cap_us (0: none), decided by the
 * initiator from times it measured: the warm-up iterations to run after the
 * first one (which took first_us), those that fit in PB_WARMUP_SHARE of the
 * cap, at most warmup - 1; then the timed iterations that fit in what the
 * `warm` warm-up iterations (spent_us in all) left of the cap, at their rate:
 * PB_P2P_MIN_TIMED (iters, if fewer) to iters. */
int pb_p2p_warmup_more(double cap_us, double first_us, int warmup);
int pb_p2p_timed_iters(double cap_us, double spent_us, int warm, int iters);

/* Run by both ranks of the pair; `initiator` is the rank that times. comm is a
 * backend communicator containing both (ranks given in it); ctrl an MPI
 * communicator with the same ranks for the small control messages. The
 * result is valid on the initiator. Buffers must hold `bytes` per slot. */
int pb_p2p_measure(const pb_comm_backend *be, pb_comm *comm, MPI_Comm ctrl, int initiator, int peer, size_t bytes,
                   const pb_p2p_cfg *cfg, const pb_buffers *sbuf, const pb_buffers *rbuf, pb_p2p_result *out);

/* Complete `req` without spinning: test, then sleep 100 us, and again. */
void pb_p2p_sleepy_wait(MPI_Request *req);

/* A barrier on comm that idle ranks can sit in without taking a core. */
void pb_p2p_sleepy_barrier(MPI_Comm comm);

#endif
