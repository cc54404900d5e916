/* The backend table: which --backend/--mem pairs exist and where their
 * pb_comm_backend tables come from. Everything that chooses a backend by name
 * (option checks, help, defaults, selection) reads this table, so a new
 * backend is its own file plus one row here (docs/ARCHITECTURE.md). */
#include "backend/comm.h"

#include "core/error.h"
#include "core/parse.h"

#include <stdio.h>
#include <string.h>

/* Files ending in _nccl.c or _cuda.c exist only in CUDA builds: their rows
 * hold NULL elsewhere. */
#ifdef PB_HAVE_CUDA
#define CUDA_ONLY(getter) getter
#else
#define CUDA_ONLY(getter) NULL
#endif

typedef struct backend_row {
    const char *name;  /* --backend NAME */
    const char *about; /* the --backend help, on a name's first row */
    const pb_comm_backend *(*get)(void); /* NULL: not in this build */
    pb_mem_kind mem;   /* --mem; a name's first row is its default memory */
    int gpu_default;   /* the default backend where every rank sees a GPU */
} backend_row;         /* pointers first: no padding between the fields */

static const backend_row rows[] = {
    {"mpi", "host memory", pb_comm_backend_mpi, PB_MEM_HOST, 0},
    {"mpi", NULL, CUDA_ONLY(pb_comm_backend_mpi_device), PB_MEM_DEVICE, 0},
    {"nccl", "GPU memory", CUDA_ONLY(pb_comm_backend_nccl), PB_MEM_DEVICE, 1},
    {"nccl-rehearse", "NCCL's ordering rules on the CPU, tests only", pb_comm_backend_nccl_rehearse, PB_MEM_HOST, 0},
};
#define NROWS (sizeof rows / sizeof rows[0])

const char *const *pb_comm_backend_names(void)
{
    static const char *names[NROWS + 1];
    int n = 0;
    for (size_t i = 0; i < NROWS; i++)
        if (n == 0 || strcmp(names[n - 1], rows[i].name) != 0) names[n++] = rows[i].name;
    names[n] = NULL;
    return names;
}

/* A name's first row (its default memory), or NULL. */
static const backend_row *first_row(const char *name)
{
    for (size_t i = 0; i < NROWS; i++)
        if (strcmp(name, rows[i].name) == 0) return &rows[i];
    return NULL;
}

int pb_comm_backend_check_name(const char *option, const char *name)
{
    if (first_row(name)) return PB_OK;
    char list[256];
    return pb_error_usage(option, "'%s' is not a backend; expected %s", name,
                          pb_parse_join_names(pb_comm_backend_names(), list, sizeof list));
}

const char *pb_comm_backend_help(void)
{
    static char help[512];
    const char *const *names = pb_comm_backend_names();
    const char *gpu = names[0];
    size_t used = 0;
    for (int i = 0; names[i]; i++) {
        const backend_row *r = first_row(names[i]);
        const char *sep = i == 0 ? "" : names[i + 1] ? ", " : " or ";
        used += (size_t)snprintf(help + used, sizeof help - used, "%s%s (%s)", sep, r->name, r->about);
        if (r->gpu_default) gpu = r->name;
    }
    snprintf(help + used, sizeof help - used, "; default %s where GPUs are visible", gpu);
    return help;
}

const char *pb_comm_backend_default(int gpus_on_every_rank)
{
    for (size_t i = 0; i < NROWS && gpus_on_every_rank; i++)
        if (rows[i].gpu_default && rows[i].get) return rows[i].name;
    return rows[0].name;
}

int pb_comm_backend_thread_level(int argc, char **argv, int wanted)
{
    const char *name = NULL; /* the last --backend wins, as in the parse */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) name = argv[++i];
        else if (strncmp(argv[i], "--backend=", 10) == 0) name = argv[i] + 10;
    }
    for (size_t i = 0; name && i < NROWS; i++)
        if (strcmp(name, rows[i].name) == 0 && rows[i].get && rows[i].get()->threads_call_mpi &&
            wanted < MPI_THREAD_MULTIPLE)
            return MPI_THREAD_MULTIPLE;
    return wanted;
}

int pb_comm_backend_select(const char *name, const char *mem, const pb_comm_backend **out)
{
    const backend_row *first = first_row(name), *row = NULL;
    if (!first) return pb_comm_backend_check_name("--backend", name);
    for (size_t i = 0; i < NROWS && !row; i++)
        if (strcmp(name, rows[i].name) == 0 && (!mem || strcmp(mem, pb_mem_kind_name(rows[i].mem)) == 0))
            row = &rows[i];
    if (!row)
        return pb_error_usage("--mem", "%s is not possible with --backend %s (%s only); use %s", mem, name,
                              first->about, pb_mem_kind_name(first->mem));
    if (!row->get) {
        char what[64];
        if (row == first) snprintf(what, sizeof what, "--backend %s", name);
        else snprintf(what, sizeof what, "--mem %s", mem);
        return pb_fail(PB_ERR_ENV, "%s: this build has no CUDA/NCCL support (rebuild with CUDA found, or "
                                   "`make CUDA=1`)", what);
    }
    *out = row->get();
    return PB_OK;
}
