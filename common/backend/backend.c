/* Backend selection by name. The NCCL backend exists only in CUDA builds. */
#include "backend/comm.h"

#include "core/error.h"

#include <string.h>

#ifdef PB_HAVE_CUDA
const pb_comm_backend *pb_backend_nccl(void);
const pb_comm_backend *pb_backend_mpi_device(void);
#endif

int pb_comm_backend_select(const char *name, const char *mem, const pb_comm_backend **out)
{
    int device = mem && strcmp(mem, "device") == 0;
    if (strcmp(name, "mpi") == 0 && device) {
#ifdef PB_HAVE_CUDA
        *out = pb_backend_mpi_device();
        return PB_OK;
#else
        return pb_fail(PB_ERR_ENV, "--mem device: this build has no CUDA support");
#endif
    }
    if (strcmp(name, "mpi") == 0) {
        *out = pb_comm_backend_mpi();
        return PB_OK;
    }
    if (strcmp(name, "nccl") == 0 && mem && strcmp(mem, "host") == 0)
        return pb_error_usage("--mem", "host is not possible with --backend nccl (NCCL moves GPU memory); use device");
    if (strcmp(name, "nccl") == 0) {
#ifdef PB_HAVE_CUDA
        *out = pb_backend_nccl();
        return PB_OK;
#else
        return pb_fail(PB_ERR_ENV, "--backend nccl: this build has no CUDA/NCCL support (rebuild with CUDA found, "
                                   "or `make CUDA=1`)");
#endif
    }
    return pb_error_usage("--backend", "'%s' is not a backend; expected mpi or nccl", name);
}
