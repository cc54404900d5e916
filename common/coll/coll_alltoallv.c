#include "coll/coll_alltoallv.h"

#include "core/error.h"

int pb_coll_alltoallv(const pb_comm_backend *b, pb_comm *comm, const void *send, void *recv, pb_dtype t,
                      pb_coll_alltoallv_counts to, const void *ctx, int reverse)
{
    int me = b->rank(comm), n = b->size(comm);
    size_t es = pb_dtype_size(t), off = 0, mine = to(ctx, me);
    PB_TRY(b->group_start(comm));
    int status = PB_OK;
    for (int p = 0; p < n && status == PB_OK; p++) {
        size_t theirs = to(ctx, p);
        char *block = (char *)(reverse ? send : recv) + (size_t)p * mine * es;
        char *spread = (char *)(reverse ? recv : send) + off * es;
        if (!reverse) {
            if (theirs) status = b->send(comm, spread, theirs, t, p);
            if (status == PB_OK && mine) status = b->recv(comm, block, mine, t, p);
        } else {
            if (mine) status = b->send(comm, block, mine, t, p);
            if (status == PB_OK && theirs) status = b->recv(comm, spread, theirs, t, p);
        }
        off += theirs;
    }
    int end = b->group_end(comm); /* always close the group */
    return status != PB_OK ? status : end;
}
