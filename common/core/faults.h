/* Test-only fault injection, driven by the environment so that no option a
 * user sees can produce wrong results (docs/reliability.md):
 *   PARABENCH_TEST_CORRUPT=RANK  that rank corrupts one element it validates
 *                                (pp_pipeline: one in each of its five checks);
 *   PARABENCH_TEST_SKIP=RANK     that rank skips the measured operations, so
 *                                its peers hang and the watchdog must fire;
 *   PARABENCH_TEST_SKIP_VALIDATE=RANK  the same in the validation exchange
 *                                only (p2p's, after the measured loop, and a
 *                                collective's; RANK in the pair or group);
 *   PARABENCH_TEST_SLOW=RANK     that rank sleeps PB_FAULTS_SLOW_US before each
 *                                p2p iteration it takes part in, in each
 *                                sharded tp_layer iteration, and in each wait
 *                                for coll_sweep's collectives, and before each of
 *                                fsdp_step's collectives, and before each of
 *                                cp_attention's ring exchanges: its pairs, its TP group,
 *                                its waits, its FSDP collectives, its exchanges are slow,
 *                                deterministically (the slow-pair verdict,
 *                                tp_layer's slowest group, coll_sweep's one wait
 *                                per whole loop, what fsdp_step's prefetch and cp_attention's
 *                                overlap hide);
 *   PARABENCH_TEST_MISCOUNT=RANK  under --backend nccl-rehearse, that rank
 *                                announces one element more than it moves in
 *                                every operation, so its peers see mismatched
 *                                counts (comm_rehearse.c's misuse check);
 *   PARABENCH_TEST_FAIL=SITE:RANK that world rank fails locally at SITE with
 *                                the status the real failure has (exit 3 for
 *                                all of these), before the collective that
 *                                follows, which must agree (world.h pb_world_agree_at).
 *                                Sites:
 *     comm          a backend's comm_create (comm_mpi.c, and so
 *                   comm_mpi_cuda.c), on every communicator it makes
 *     buffers       coll_sweep's and p2p_sweep's buffer allocation
 *     samples       a p2p measurement's samples (p2p.c), agreed by the pair
 *                   alone before its timed loop: the peer must not enter it
 *     gather        runner.c's gather of timings (rank 0's room for every
 *                   rank's samples, another rank's copy of its own)
 *     options       the options, parsed on every rank (bench.c)
 *     step          the first timed iteration of runner.c's loop: that rank
 *                   skips it and fails, its peers wait inside it for its
 *                   messages, and it must end the job itself (world.h
 *                   pb_world_wait_after_step: exit 3 on every rank, not 4)
 *     engine        a workload's compute engine creation (workload_opts.c)
 *     report        opening the CSV/JSON output on rank 0 (bench.c)
 *     nccl-stream   stream and event creation before ncclCommInitRank
 *                   (comm_nccl.c; GPU only)
 *   PARABENCH_TEST_RANKS_PER_NODE=R  the world's nodes are R consecutive
 *                                ranks each, named nodeK (world.c), on one
 *                                machine: schedules and link classes of
 *                                several nodes (p2p_sweep --matrix sampled)
 *                                without a cluster;
 *   PARABENCH_TEST_HANG=SITE:RANK under --backend nccl-rehearse, that world
 *                                rank hangs for good at SITE, as a GPU can,
 *                                so that the watchdog must end the job
 *                                (exit 4, naming the phase). Sites:
 *     sync          its stream never completes its first operation (a kernel
 *                   that never ends): its syncs wait, and its peers
 *     comm          its communicator creation never returns (ncclCommInitRank
 *                   waiting for a peer): its peers wait in theirs */
#ifndef PB_FAULTS_H
#define PB_FAULTS_H

/* The rank named by the variable, or -1 when it is unset. */
int pb_faults_rank(const char *variable);

static inline int pb_faults_corrupt_rank(void) { return pb_faults_rank("PARABENCH_TEST_CORRUPT"); }
/* 1 when PARABENCH_TEST_FAIL names `site` and this process's world rank. */
int pb_faults_fail(const char *site);
/* 1 when PARABENCH_TEST_HANG names `site` and this process's world rank. */
int pb_faults_hang(const char *site);

static inline int pb_faults_skip_rank(void) { return pb_faults_rank("PARABENCH_TEST_SKIP"); }
static inline int pb_faults_slow_rank(void) { return pb_faults_rank("PARABENCH_TEST_SLOW"); }
#define PB_FAULTS_SLOW_US 20000 /* far above the noise of a loaded, oversubscribed machine (2.6 ms of latency seen) */
static inline int pb_faults_miscount_rank(void) { return pb_faults_rank("PARABENCH_TEST_MISCOUNT"); }
static inline int pb_faults_skip_validate_rank(void) { return pb_faults_rank("PARABENCH_TEST_SKIP_VALIDATE"); }

#endif
