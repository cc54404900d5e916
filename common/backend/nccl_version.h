/* NCCL version codes, as ncclGetVersion() returns them, and what they allow.
 * Pure functions, built in every build, so CPU-only tests cover them. */
#ifndef PB_NCCL_VERSION_H
#define PB_NCCL_VERSION_H

#include <stddef.h>

/* The first NCCL with ncclAlltoAll: 2.28.3. */
#define PB_NCCL_VERSION_ALLTOALL 22803

/* major*10000 + minor*100 + patch, the code of NCCL >= 2.9 (NCCL_VERSION()). */
int pb_nccl_version_code(int major, int minor, int patch);

/* "2.28.3" from a code of either encoding: NCCL < 2.9 used
 * major*1000 + minor*100 + patch (2.8.4 is 2804). */
void pb_nccl_version_text(int code, char *buf, size_t len);

/* How alltoall is issued. */
typedef enum pb_nccl_version_alltoall {
    PB_NCCL_ALLTOALL_GROUPED = 0, /* ncclGroupStart, a ncclSend and a ncclRecv per peer, ncclGroupEnd */
    PB_NCCL_ALLTOALL_NATIVE = 1,  /* ncclAlltoAll */
} pb_nccl_version_alltoall;

/* NATIVE only when the loaded library's version (its code) is 2.28.3 or
 * later *and* the symbol was found in it (have_symbol); GROUPED otherwise,
 * which is what nccl-tests does on every version. */
pb_nccl_version_alltoall pb_nccl_version_alltoall_choice(int code, int have_symbol);

#endif
