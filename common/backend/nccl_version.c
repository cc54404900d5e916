#include "backend/nccl_version.h"

#include <stdio.h>

int pb_nccl_version_code(int major, int minor, int patch) { return major * 10000 + minor * 100 + patch; }

void pb_nccl_version_text(int code, char *buf, size_t len)
{
    if (code >= 10000) snprintf(buf, len, "%d.%d.%d", code / 10000, code / 100 % 100, code % 100);
    else if (code > 0) snprintf(buf, len, "%d.%d.%d", code / 1000, code / 100 % 10, code % 100);
    else snprintf(buf, len, "unknown");
}

pb_nccl_version_alltoall pb_nccl_version_alltoall_choice(int code, int have_symbol)
{
    /* Old-encoding codes (< 10000) are all below 2.28.3. */
    return code >= PB_NCCL_VERSION_ALLTOALL && have_symbol ? PB_NCCL_ALLTOALL_NATIVE : PB_NCCL_ALLTOALL_GROUPED;
}
