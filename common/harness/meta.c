#include "harness/meta.h"

#include "backend/gpu.h"
#include "core/error.h"
#include "core/escape.h"
#include "core/progress.h"
#include "core/topo.h"
#include "core/version.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>


/* The command as a shell would read it back: each argument quoted where it
 * needs to be, control characters and invalid UTF-8 as $'\xNN'. */
static void add_command(cJSON *meta, int argc, char **argv)
{
    char *cmd = pb_escape_argv(argc, argv);
    if (!cmd) return;
    cJSON_AddStringToObject(meta, "command", cmd);
    free(cmd);
}

static void add_date(cJSON *meta)
{
    char date[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    cJSON_AddStringToObject(meta, "date", date);
}

/* hosts: [{name, ranks:[...]}] in node order, plus "ranks_per_node" as text. */
static void add_hosts(cJSON *meta, const pb_world *w)
{
    cJSON *hosts = cJSON_AddArrayToObject(meta, "hosts");
    cJSON *node_of = cJSON_AddArrayToObject(meta, "rank_node");
    char per_node[256] = "";
    for (int node = 0; node < w->nnodes; node++) {
        cJSON *h = cJSON_CreateObject(), *ranks = cJSON_CreateArray();
        int count = 0;
        for (int r = 0; r < w->size; r++) {
            if (w->node_of[r] != node) continue;
            if (count++ == 0) cJSON_AddStringToObject(h, "name", w->host[r]);
            cJSON_AddItemToArray(ranks, cJSON_CreateNumber(r));
        }
        cJSON_AddItemToObject(h, "ranks", ranks);
        cJSON_AddItemToArray(hosts, h);
        size_t used = strlen(per_node);
        snprintf(per_node + used, sizeof per_node - used, "%s%d", node ? "," : "", count);
    }
    for (int r = 0; r < w->size; r++) cJSON_AddItemToArray(node_of, cJSON_CreateNumber(w->node_of[r]));
    cJSON_AddStringToObject(meta, "ranks_per_node", per_node);
}

int pb_meta_collect(const pb_world *w, const pb_comm_backend *b, int argc, char **argv, pb_meta_info *info,
                    cJSON **out)
{
    *out = NULL;
    pb_topo topo;
    if (pb_topo_read(&topo) != 0) memset(&topo, 0, sizeof topo);
    /* Each rank reports its binding and its node's core count. */
    char(*bind)[128] = calloc((size_t)w->size, 128);
    int *cores = calloc((size_t)w->size, sizeof(int));
    int status = bind && cores ? PB_OK : pb_fail(PB_ERR_ENV, "out of memory for the metadata of %d ranks", w->size);
    status = pb_world_agree(w, status); /* before the gathers: no rank may wait in them for one that gave up */
    if (status != PB_OK || !bind || !cores) { /* agreed: a local failure is everyone's */
        free(bind);
        free(cores);
        return status;
    }
    MPI_Gather(topo.binding, 128, MPI_CHAR, bind, 128, MPI_CHAR, 0, w->comm);
    MPI_Allgather(&topo.cores, 1, MPI_INT, cores, 1, MPI_INT, w->comm);

    memset(info, 0, sizeof *info);
    info->min_cores_per_node = cores[0];
    for (int r = 0; r < w->size; r++) {
        int on_node = 0;
        for (int q = 0; q < w->size; q++) on_node += w->node_of[q] == w->node_of[r];
        if (on_node > info->max_ranks_per_node) info->max_ranks_per_node = on_node;
        if (cores[r] < info->min_cores_per_node) info->min_cores_per_node = cores[r];
        if (on_node > cores[r]) info->oversubscribed = 1;
    }
    cJSON *meta = NULL;
    if (w->rank == 0) {
        char lib[256] = "unknown";
        meta = cJSON_CreateObject();
        cJSON_AddStringToObject(meta, "version", pb_version_string());
        cJSON_AddStringToObject(meta, "parabench_version", pb_version_number());
        cJSON_AddStringToObject(meta, "git_revision", pb_version_git_rev());
        add_command(meta, argc, argv);
        add_date(meta);
        cJSON_AddStringToObject(meta, "backend", b ? b->name : "none");
        if (b) b->version(lib, sizeof lib);
        cJSON_AddStringToObject(meta, "backend_library", lib);
        /* NVLS (NVSwitch multicast) takes objects a switch has few of per communicator (comm_count.h) */
        const char *nvls = getenv("NCCL_NVLS_ENABLE");
        cJSON_AddStringToObject(meta, "nccl_nvls_enable", nvls ? nvls : "unset");
        cJSON_AddStringToObject(meta, "mpi_yield_when_idle", pb_progress_yield());
        cJSON_AddNumberToObject(meta, "nranks", w->size);
        cJSON_AddNumberToObject(meta, "nnodes", w->nnodes);
        add_hosts(meta, w);
        cJSON *binding = cJSON_AddArrayToObject(meta, "binding");
        for (int r = 0; r < w->size; r++) cJSON_AddItemToArray(binding, cJSON_CreateString(bind[r]));
        cJSON *t = cJSON_AddObjectToObject(meta, "topology");
        cJSON_AddStringToObject(t, "cpu_model", topo.cpu_model);
        cJSON_AddNumberToObject(t, "packages", topo.packages);
        cJSON_AddNumberToObject(t, "cores", topo.cores);
        cJSON_AddNumberToObject(t, "pus", topo.pus);
        cJSON_AddNumberToObject(t, "numa_nodes", topo.numa_nodes);
        cJSON_AddNumberToObject(t, "gpus", pb_gpu_count());
        cJSON_AddBoolToObject(meta, "oversubscribed", info->oversubscribed);
    }
    free(bind);
    free(cores);
    *out = meta;
    return PB_OK;
}

int pb_meta_print(FILE *f, const cJSON *meta)
{
    int lost = 0; /* lines that out of memory cut short */
    for (const cJSON *m = meta ? meta->child : NULL; m; m = m->next) {
        if (cJSON_IsString(m)) {
            /* one table line per key, whatever a hostname or path holds */
            fprintf(f, "# %-18s ", m->string);
            lost += pb_escape_fputs(f, pb_escape_csv_comment, m->valuestring) != 0;
            fputc('\n', f);
        } else if (cJSON_IsNumber(m)) {
            fprintf(f, "# %-18s %g\n", m->string, m->valuedouble);
        } else {
            char *t = cJSON_PrintUnformatted(m);
            if (t) fprintf(f, "# %-18s %s\n", m->string, t);
            lost += !t;
            free(t);
        }
    }
    return lost ? pb_fail(PB_ERR_ENV, "out of memory printing the metadata (%d lines cut short)", lost) : PB_OK;
}
