#include "coll/coll.h"

#include "core/error.h"

#include <string.h>

static const char *const names[PB_COLL_COUNT + 1] = {
    "allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall", "sendrecv", NULL,
};

const char *const *pb_coll_names(void) { return names; }

const char *pb_coll_name(pb_coll c)
{
    if ((int)c < 0 || c >= PB_COLL_COUNT) return NULL;
    return names[c];
}

int pb_coll_from_name(const char *name, pb_coll *out)
{
    for (int i = 0; name && i < PB_COLL_COUNT; i++) {
        if (strcmp(name, names[i]) == 0) {
            *out = (pb_coll)i;
            return PB_OK;
        }
    }
    return PB_ERR_USAGE;
}

double pb_busbw_factor(pb_coll c, int nranks)
{
    if (nranks < 1) return 0.0;
    double n = (double)nranks;
    switch (c) {
    case PB_COLL_ALLREDUCE: return 2.0 * (n - 1.0) / n;
    case PB_COLL_ALLGATHER:
    case PB_COLL_REDUCESCATTER:
    case PB_COLL_ALLTOALL: return (n - 1.0) / n;
    case PB_COLL_BROADCAST:
    case PB_COLL_REDUCE:
    case PB_COLL_SENDRECV: return 1.0;
    default: return 0.0;
    }
}
