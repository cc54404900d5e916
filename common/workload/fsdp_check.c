/* Validation of an FSDP step (fsdp.h): every gathered layer against the
 * layer's own weights, bit for bit, at the moment its compute reads it; and
 * every reduced gradient shard against the sum over the world of every
 * rank's full gradient, formed on the control plane in double. */
#include "workload/fsdp_impl.h"

#include "core/error.h"
#include "workload/dp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK ((uint64_t)1 << 20) /* gradient elements per control-plane allreduce */

/* full[buf] holds layer's gathered weights: compare them with its own. */
static int check_gathered(pb_fsdp *f, int64_t layer, int buf)
{
    const pb_compute *E = f->cfg.eng;
    if (f->order == PB_ORDERING_STREAM) PB_TRY(f->cfg.be->sync(f->cfg.shard_comm)); /* the host reads it */
    size_t n = (size_t)f->sh.params, bytes = n * f->pes;
    PB_TRY(E->to_host(f->host_a, f->full[buf], bytes));
    PB_TRY(E->to_host(f->host_b, f->own[layer], bytes));
    const char *a = f->host_a, *b = f->host_b;
    for (size_t j = 0; j < n; j++) f->wrong_params += memcmp(a + j * f->pes, b + j * f->pes, f->pes) != 0;
    return PB_OK;
}

/* Layer i's elements [c, c + n): the world's sums (and sums of magnitudes)
 * in sums[0..n) and sums[n..2n), then this rank's shard where it overlaps. */
static int check_chunk(pb_fsdp *f, MPI_Comm world, int64_t i, uint64_t c, size_t n, const char *mine_shard,
                       char *local, double *sums, double tol, int *corrupt, long long *wrong)
{
    pb_dtype gt = f->cfg.grad_dtype;
    int status = f->cfg.eng->to_host(local, (char *)f->grads + ((uint64_t)i * f->sh.params + c) * f->ges, n * f->ges);
    for (size_t j = 0; j < n; j++) {
        double v = status == PB_OK ? pb_dtype_get(gt, local, j) : 0;
        sums[j] = v;
        sums[n + j] = fabs(v);
    }
    MPI_Allreduce(MPI_IN_PLACE, sums, (int)(2 * n), MPI_DOUBLE, MPI_SUM, world); /* every rank, every chunk */
    uint64_t lo = (uint64_t)f->index * f->sh.per_rank, hi = lo + pb_fsdp_shard_valid(&f->sh, f->index);
    uint64_t from = lo > c ? lo : c, to = hi < c + n ? hi : c + n;
    for (uint64_t e = from; e < to && status == PB_OK; e++) {
        double got = pb_dtype_get(gt, mine_shard, (size_t)(e - lo));
        if (*corrupt) got += 12345.0, *corrupt = 0;
        double want = sums[e - c], scale = sums[n + (e - c)];
        if (!isfinite(got) || fabs(got - want) > tol * scale + 1e-30) (*wrong)++;
    }
    return status;
}

static int check_grads(pb_fsdp *f, MPI_Comm world, int corrupt, long long *wrong)
{
    int nworld = 1;
    MPI_Comm_size(world, &nworld);
    double tol = pb_dp_tolerance(f->cfg.grad_dtype, nworld);
    uint64_t S = f->sh.per_rank;
    char *shard = malloc((size_t)(S * f->ges) + 1), *local = malloc((size_t)CHUNK * f->ges);
    double *sums = malloc(sizeof(double) * 2 * (size_t)CHUNK);
    int have = shard && local && sums;
    int status = have ? PB_OK : pb_fail(PB_ERR_ENV, "fsdp validation: out of host memory");
    MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, world); /* before the chunks' collectives */
    for (int64_t i = 0; i < f->cfg.nlayers && status == PB_OK && have; i++) {
        int s = f->cfg.eng->to_host(shard, (char *)f->gshard + (uint64_t)i * S * f->ges, (size_t)(S * f->ges));
        for (uint64_t c = 0; c < f->sh.params; c += CHUNK) {
            size_t n = (size_t)(f->sh.params - c < CHUNK ? f->sh.params - c : CHUNK);
            int t = check_chunk(f, world, i, c, n, shard, local, sums, tol, &corrupt, wrong);
            if (s == PB_OK) s = t;
        }
        if (status == PB_OK) status = s;
    }
    free(shard);
    free(local);
    free(sums);
    return status;
}

int pb_fsdp_validate(pb_fsdp *f, MPI_Comm world, int corrupt, long long *wrong_params, long long *wrong_grads)
{
    *wrong_params = *wrong_grads = 0;
    size_t bytes = (size_t)(f->sh.params * f->pes);
    if (!f->host_a) f->host_a = malloc(bytes + 1);
    if (!f->host_b) f->host_b = malloc(bytes + 1);
    int status = f->host_a && f->host_b ? PB_OK : pb_fail(PB_ERR_ENV, "fsdp validation: out of host memory");
    MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, world);
    PB_TRY(status);
    f->wrong_params = 0;
    f->check = check_gathered;
    status = pb_fsdp_step(f);
    f->check = NULL;
    *wrong_params = f->wrong_params;
    /* Agree before the collectives below: a local failure must not leave the others waiting in them. */
    MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, world);
    PB_TRY(status);
    return check_grads(f, world, corrupt, wrong_grads);
}
