/* The engine table. The GEMM helpers the engines share are compute_gemm.c's,
 * apart from it: this table names the engines and the engines use the
 * helpers, so no two files use each other. */
#include "compute/compute.h"

#include "core/error.h"
#include "core/parse.h"

#include <string.h>

/* The engine table: everything that chooses an engine by name (option
 * checks, help, defaults, selection) reads it, so a new engine is its own
 * file plus one row here (docs/ARCHITECTURE.md). Files ending in _cublas.c or
 * _cuda.c exist only in CUDA builds: their rows hold NULL elsewhere. */
#ifdef PB_HAVE_CUDA
const pb_compute *pb_compute_cublas(void);
#define CUDA_ONLY(getter) getter
#else
#define CUDA_ONLY(getter) NULL
#endif

typedef struct engine_row {
    const char *name; /* --engine NAME, as the engine's table names itself */
    pb_mem_kind mem;  /* where its buffers live; the first row of a kind is that memory's default */
    const pb_compute *(*get)(void); /* NULL: not in this build */
} engine_row;

static const engine_row engines[] = {
    {"blas", PB_MEM_HOST, pb_compute_blas},
    {"cublas", PB_MEM_DEVICE, CUDA_ONLY(pb_compute_cublas)},
};
#define NENGINES (sizeof engines / sizeof engines[0])

const char *const *pb_compute_names(void)
{
    static const char *names[NENGINES + 1];
    for (size_t i = 0; i < NENGINES; i++) names[i] = engines[i].name;
    return names;
}

static const engine_row *row_of(const char *name)
{
    for (size_t i = 0; name && i < NENGINES; i++)
        if (strcmp(name, engines[i].name) == 0) return &engines[i];
    return NULL;
}

int pb_compute_check_name(const char *option, const char *name)
{
    if (row_of(name)) return PB_OK;
    char list[256];
    return pb_error_usage(option, "'%s' is not an engine; expected %s", name,
                          pb_parse_join_names(pb_compute_names(), list, sizeof list));
}

const char *pb_compute_default(pb_mem_kind mem)
{
    for (size_t i = 0; i < NENGINES; i++)
        if (engines[i].mem == mem) return engines[i].name;
    return engines[0].name;
}

int pb_compute_select(const char *option, const char *name, const pb_compute **out)
{
    const engine_row *r = row_of(name);
    if (!r) {
        char list[256];
        return pb_error_usage(option, "unknown compute engine '%s'; accepted: %s", name,
                              pb_parse_join_names(pb_compute_names(), list, sizeof list));
    }
    if (!r->get)
        return pb_fail(PB_ERR_ENV, "compute engine %s: this build has no CUDA support (rebuild where nvcc, "
                                   "cuBLAS and NCCL are found, or with `make CUDA=1`)", name);
    *out = r->get();
    return PB_OK;
}
