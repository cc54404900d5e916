/* libFuzzer target: the cluster-file reader (plan --cluster FILE) on any bytes,
 * read through an in-memory file: it either refuses them as a usage error
 * (exit 2, naming FILE:LINE) or returns a cluster every field of which the
 * model can use (positive rates and link bandwidths, non-negative latencies). */
#include "core/error.h"
#include "plan/cluster.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) pb_error_set_quiet_usage(quiet = 1);
    int fd = memfd_create("cluster", 0);
    if (fd < 0) return 0;
    if (size && write(fd, data, size) != (ssize_t)size) return close(fd), 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    pb_model_cluster c;
    int rc = pb_cluster_file_read(path, "--cluster", &c);
    close(fd);
    if (rc == PB_OK) {
        if (!(c.intra.bw_Bps > 0) || !(c.inter.bw_Bps > 0) || !(c.flops > 0) || !isfinite(c.flops)) abort();
        if (!(c.intra.alpha_s >= 0) || !(c.inter.alpha_s >= 0) || !isfinite(c.intra.alpha_s)) abort();
        if (c.gpus_per_node < 1) abort();
    } else if (rc != PB_ERR_USAGE) {
        abort();
    }
    return 0;
}
