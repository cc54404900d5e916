/* The communicators of this process (one rank), as the backends create and
 * destroy them: how many are live, the most that were live at once, how many
 * were created in all, and the GPU memory NCCL took to set them up.
 *
 * Every NCCL communicator holds GPU buffers of its own for each channel and
 * peer, and with NVLink SHARP (NVLS) NVSwitch multicast objects, of which a
 * switch has a fixed number (128, as NVIDIA/nccl issue #2077 reports: NCCL
 * 2.29.7 then fails fatally unless NCCL_NVLS_ENABLE=0; an expectation, not
 * measured here). So a rank may hold at most PB_COMM_COUNT_MAX communicators
 * at once (PARABENCH_MAX_COMMS lowers or raises it): the workloads create
 * theirs once per group and free them between placements, 6 at most
 * (docs/gpu.md, "Communicators"). A creation beyond it is refused (exit 3).
 *
 * The MPI and NCCL backends count; the MPI backend with device buffers and
 * the NCCL rehearsal each hold one MPI communicator per communicator of
 * theirs, which counts it. Creation and destruction are on the thread that
 * owns the communicators. */
#ifndef PB_COMM_COUNT_H
#define PB_COMM_COUNT_H

#include <stdint.h>

/* The documented maximum of live communicators per rank. */
#define PB_COMM_COUNT_MAX 8

typedef struct pb_comm_count {
    int live, peak, created;
    uint64_t held_bytes, held_peak; /* GPU memory NCCL took at set-up, of the live ones and at most */
    int held_measured;              /* 1 once a creation measured it (cudaMemGetInfo), else 0 */
} pb_comm_count;

/* PB_COMM_COUNT_MAX, or PARABENCH_MAX_COMMS when set (1 to 1024). *max gets
 * it; PB_ERR_USAGE, naming the variable, for another value. */
int pb_comm_count_max(int *max);

/* Before a creation (each backend's comm_create, before its agreement): PB_OK,
 * or PB_ERR_ENV when this rank already holds the maximum. */
int pb_comm_count_admit(void);

/* A communicator created; held_bytes the GPU memory its set-up took where
 * measured (measured != 0), else 0. */
void pb_comm_count_add(uint64_t held_bytes, int measured);
/* A communicator destroyed, with the held_bytes it was added with. */
void pb_comm_count_remove(uint64_t held_bytes);

pb_comm_count pb_comm_count_get(void);

/* A design's check before anything is created: PB_OK when `need`
 * communicators per rank fit the maximum, else PB_ERR_ENV with a message
 * naming `what` (the configuration) and PARABENCH_MAX_COMMS. */
int pb_comm_count_fits(int need, const char *what);

#endif
