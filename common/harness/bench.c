#include "harness/bench.h"

#include "core/error.h"
#include "core/faults.h"
#include "backend/gpu.h"
#include "core/watchdog.h"

#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* NCCL needs a GPU of its own per rank. Counted across the node, by PCI bus
 * id: with one GPU visible per rank (Slurm --gpus-per-task=1) every rank sees
 * a single GPU, yet the node's ranks have distinct ones. Where a bus id is
 * unknown, the count of visible GPUs decides (ranks per node <= GPUs). */
static int check_gpu_per_rank(const pb_world *w, int offset)
{
    char id[PB_GPU_ID_MAX];
    pb_gpu_identity(w->local_rank, offset, id, sizeof id);
    char *ids = calloc((size_t)w->size, PB_GPU_ID_MAX);
    if (!ids) return pb_fail(PB_ERR_ENV, "out of memory (%d GPU ids)", w->size);
    int status = MPI_Allgather(id, PB_GPU_ID_MAX, MPI_CHAR, ids, PB_GPU_ID_MAX, MPI_CHAR, w->comm) == MPI_SUCCESS
                     ? PB_OK
                     : pb_fail(PB_ERR_ENV, "MPI_Allgather of the GPU ids failed");
    int known = 1, a = 0, c = 0, n = pb_gpu_count();
    for (int r = 0; r < w->size; r++)
        if (w->node_of[r] == w->node && !ids[(size_t)r * PB_GPU_ID_MAX]) known = 0;
    if (status == PB_OK && (n <= 0 || !known)) status = pb_gpu_check_ranks(w->local_size, n, 1);
    else if (status == PB_OK && pb_gpu_shared(ids, PB_GPU_ID_MAX, w->node_of, w->size, &a, &c) && w->node_of[a] == w->node)
        status = pb_fail(PB_ERR_ENV,
                         "ranks %d and %d on %s would share one GPU (%s): NCCL needs one GPU per rank. Start at most "
                         "one rank per GPU, or use --backend mpi --mem device to share GPUs",
                         a, c, w->host[a], ids + (size_t)a * PB_GPU_ID_MAX);
    free(ids);
    return status;
}

/* --validate and --version are found before MPI starts, so that no MPI is
 * started for them. */
static int asks_for(int argc, char **argv, const char *option)
{
    size_t n = strlen(option);
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], option, n) == 0 && (argv[i][n] == '\0' || argv[i][n] == '=')) return 1;
    return 0;
}

/* The world --validate names, in place of the one-process world the parse
 * ran in. Several worlds: one child per world goes on through the
 * benchmark's checks (the fork costs nothing next to a new process, which
 * maps every library again); this process waits for each in turn and exits
 * with the first refusal's status, naming its world. */
static int validate_world(pb_bench *b, const pb_options_group *groups, int ngroups)
{
    const pb_options *o = NULL;
    for (int g = 0; g < ngroups && !o; g++) o = pb_options_common_of(&groups[g]);
    if (!o || o->validate_count == 0) return pb_error_usage("--validate", "needs N[:R] (ranks, ranks per node)");
    int ranks, rpn;
    if (o->validate_count == 1) {
        pb_options_validate_world(o, 0, &ranks, &rpn);
        return pb_world_fake(&b->w, ranks, rpn);
    }
    int first = PB_OK;
    for (int i = 0; i < o->validate_count; i++) {
        pb_options_validate_world(o, i, &ranks, &rpn);
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        if (pid < 0) return pb_fail(PB_ERR_ENV, "--validate: cannot start a process: %s", strerror(errno));
        if (pid == 0) return pb_world_fake(&b->w, ranks, rpn);
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
        int rc = WIFEXITED(st) ? WEXITSTATUS(st) : PB_ERR_ENV;
        if (rc != PB_OK) {
            fprintf(stderr, "%s: --validate %d:%d: refused (exit %d)\n", b->name, ranks, rpn, rc);
            if (first == PB_OK) first = rc;
        }
    }
    pb_world_exit(&b->w, first);
}

void pb_bench_start(pb_bench *b, const char *name, int *argc, char ***argv, int thread_level, const char *summary,
                    const pb_options_group *groups, int ngroups)
{
    memset(b, 0, sizeof *b);
    b->name = name;
    b->argc = *argc;
    b->argv = *argv;
    pb_error_set_progname(name);
    b->validating = asks_for(*argc, *argv, "--validate");
    int no_mpi = b->validating || asks_for(*argc, *argv, "--version") || asks_for(*argc, *argv, "--list");
    thread_level = pb_comm_backend_thread_level(*argc, *argv, thread_level); /* MPI starts before the parse */
    int status = no_mpi ? pb_world_fake(&b->w, 1, 1) : pb_world_init(argc, argv, thread_level, &b->w);
    if (status != PB_OK) exit(status);
    /* Only rank 0 writes to stdout (the table, --help); every rank parses. */
    if (b->w.rank != 0 && !freopen("/dev/null", "w", stdout))
        fprintf(stderr, "%s: rank %d: cannot silence stdout\n", name, b->w.rank);
    pb_options_set_backends(pb_comm_backend_check_name, pb_comm_backend_help());
    pb_options_add_list("backends", pb_comm_backend_names());
    status = pb_options_parse(*argc, *argv, summary, groups, ngroups);
    if (!no_mpi) { /* a rank that failed alone (out of memory) must not leave the others in the first collective */
        if (status == PB_OK && pb_faults_fail("options")) status = pb_fail(PB_ERR_ENV, "the options: out of memory");
        int agreed = pb_world_agree_at(b->w.comm, status == PB_HELP_SHOWN ? PB_OK : status, "options");
        if (agreed != PB_OK) status = agreed;
    }
    if (status == PB_HELP_SHOWN) pb_world_exit(&b->w, PB_OK);
    if (status == PB_OK && no_mpi && !b->validating) /* "--version" was another option's value: MPI is not started */
        status = pb_error_usage("--version", "is an option, not a value; give the other option its value");
    if (status == PB_OK && b->validating) status = validate_world(b, groups, ngroups);
    if (status != PB_OK) pb_world_exit(&b->w, b->validating ? PB_ERR_USAGE : status); /* --validate: 0 or 2 */
}

/* The default backend is NCCL when this build has it and every rank sees a GPU. */
static const char *default_backend(const pb_world *w)
{
    int gpus = pb_gpu_count();
    MPI_Allreduce(MPI_IN_PLACE, &gpus, 1, MPI_INT, MPI_MIN, w->comm);
    return pb_comm_backend_default(gpus > 0);
}

int pb_bench_select(pb_bench *b, const pb_options *o)
{
    if (b->be) return PB_OK;
    const char *name = o->backend ? o->backend : default_backend(&b->w);
    int status = pb_comm_backend_select(name, o->mem, &b->be);
    if (status == PB_OK && b->be->threads_call_mpi && b->w.thread_level < MPI_THREAD_MULTIPLE)
        status = pb_fail(PB_ERR_ENV, "--backend %s calls MPI from threads of its own and needs MPI_THREAD_MULTIPLE; "
                                     "the MPI library granted only level %d (use an MPI built with thread support)",
                         name, b->w.thread_level);
    return pb_world_agree(&b->w, status);
}

int pb_bench_open(pb_bench *b, const pb_options *o, const pb_report_column *cols, int ncols, cJSON *extra_meta)
{
    if (b->validating) { /* every check that needs no MPI has passed */
        cJSON_Delete(extra_meta);
        printf("%s: arguments accepted for %d ranks, %d per node (%d nodes)\n", b->name, b->w.size, b->w.local_size,
               b->w.nnodes);
        pb_bench_finish(b, PB_OK);
    }
    int status = pb_bench_select(b, o);
    if (status != PB_OK) {
        cJSON_Delete(extra_meta);
        return status;
    }
    char gpu[160] = "none";
    if (b->be->library_log) pb_bench_nccl_log_env(o->csv ? o->csv : o->json, b->name, b->w.rank);
    /* NCCL needs a GPU of its own per rank: more ranks on a node than GPUs is
     * an environment error here, before any NCCL call, not NCCL's "Duplicate
     * GPU" later. */
    if (status == PB_OK && b->be->one_gpu_per_rank) status = check_gpu_per_rank(&b->w, o->gpu_offset);
    if (status == PB_OK && b->be->mem == PB_MEM_DEVICE)
        status = pb_gpu_bind(b->w.local_rank, o->gpu_offset, gpu, sizeof gpu);
    else if (status == PB_OK && o->gpu_offset_given) /* every rank refuses; rank 0 says why */
        status = b->w.rank != 0 ? PB_ERR_USAGE
                                : pb_error_usage("--gpu-offset", "applies only to device memory (--backend nccl, or "
                                                 "--mem device); backend %s uses host memory", b->be->name);
    if (status == PB_OK) status = pb_watchdog_start(o->timeout, b->w.rank, b->w.host[b->w.rank], b->name);
    status = pb_world_agree(&b->w, status);
    if (status != PB_OK) {
        cJSON_Delete(extra_meta);
        return status;
    }
    status = pb_meta_collect(&b->w, b->be, b->argc, b->argv, &b->info, &b->meta);
    if (status != PB_OK) {
        cJSON_Delete(extra_meta);
        return status;
    }
    if (b->meta) cJSON_AddStringToObject(b->meta, "gpu_rank0", gpu);
    if (b->w.rank != 0) {
        cJSON_Delete(extra_meta);
        return pb_world_agree_at(b->w.comm, PB_OK, "report");
    }
    for (cJSON *e = extra_meta ? extra_meta->child : NULL; e;) {
        cJSON *next = e->next;
        cJSON_AddItemToObject(b->meta, e->string, cJSON_DetachItemViaPointer(extra_meta, e));
        e = next;
    }
    cJSON_Delete(extra_meta);
    if (!cJSON_HasObjectItem(b->meta, "iterations")) { /* a workload: one count for every configuration */
        char iters[160], capped[64] = "";
        if (o->max_seconds > 0)
            snprintf(capped, sizeof capped, "; at most %g s per configuration, warm-up included", o->max_seconds);
        snprintf(iters, sizeof iters, "%d (+%d warm-up) per configuration%s", o->iters, o->warmup, capped);
        cJSON_AddStringToObject(b->meta, "iterations", iters);
    }
    if (b->info.oversubscribed)
        fprintf(stderr, "%s: warning: %d ranks on a node with %d cores: ranks share cores, compute and "
                        "latency are distorted (recorded as oversubscribed in the metadata)\n",
                b->name, b->info.max_ranks_per_node, b->info.min_cores_per_node);
    /* Out of memory while building it leaves keys out (cJSON and the escaping
     * give up quietly): refuse rather than write results without them. */
    static const char *const needed[] = {"version", "command", "date", "hosts", "topology", "iterations"};
    for (size_t i = 0; i < sizeof needed / sizeof needed[0] && status == PB_OK; i++)
        if (!cJSON_HasObjectItem(b->meta, needed[i]))
            status = pb_fail(PB_ERR_ENV, "out of memory building the metadata (its '%s' is missing)", needed[i]);
    if (status != PB_OK) {
        cJSON_Delete(b->meta);
        b->meta = NULL;
        return pb_world_agree_at(b->w.comm, status, "report");
    }
    printf("# parabench %s\n", b->name);
    status = pb_meta_print(stdout, b->meta);
    if (status != PB_OK) {
        cJSON_Delete(b->meta);
        b->meta = NULL;
    } else if (pb_faults_fail("report")) {
        status = pb_fail(PB_ERR_ENV, "cannot open the output files");
    } else {
        status = pb_report_open(b->name, cols, ncols, b->meta, stdout, o->csv, o->json, &b->rep);
        b->meta = NULL; /* owned by the report now */
    }
    return pb_world_agree_at(b->w.comm, status, "report");
}

void pb_bench_note_load(pb_bench *b, const pb_load *start)
{
    pb_load now;
    pb_load_sample(&now);
    double mine = now.ours_s - start->ours_s, ours = 0;
    MPI_Comm node;
    MPI_Comm_split(b->w.comm, b->w.node, b->w.rank, &node);
    MPI_Reduce(&mine, &ours, 1, MPI_DOUBLE, MPI_SUM, 0, node); /* every rank of this node */
    MPI_Comm_free(&node);
    pb_load_share sh;
    double mine_worst[3] = {-1, -1, 0}, worst[3] = {0}; /* others, steal, a node could not say */
    if (b->w.local_rank == 0) {
        if (pb_load_share_of(start, &now, ours, &sh) == PB_OK) mine_worst[0] = sh.others, mine_worst[1] = sh.steal;
        else mine_worst[2] = 1;
    }
    MPI_Reduce(mine_worst, worst, 3, MPI_DOUBLE, MPI_MAX, 0, b->w.comm);
    if (!b->rep) return;
    if (worst[2] > 0 || worst[0] < 0)
        pb_report_note(b->rep, "load: unknown (no /proc/stat on a node)");
    else
        pb_report_note(b->rep, "load: other processes used %.0f%% of the busiest node's CPU time during the run, "
                               "steal %.0f%% (/proc/stat against the ranks' own CPU time)",
                       100 * worst[0], 100 * worst[1]);
}

_Noreturn void pb_bench_finish(pb_bench *b, int status)
{
    if (b->rep) {
        int s = pb_report_close(b->rep, status == PB_OK);
        if (status == PB_OK) status = s;
        b->rep = NULL;
    }
    cJSON_Delete(b->meta);
    /* --validate answers "would these arguments be accepted": 0 or 2, whatever made them fail */
    if (b->validating && status != PB_OK) status = PB_ERR_USAGE;
    if (!b->validating) status = pb_world_agree(&b->w, status);
    pb_watchdog_stop();
    pb_world_exit(&b->w, status);
}

void pb_bench_note_wrong(pb_report *rep, long long wrong, const char *detail)
{
    if (!rep) return;
    const char *verdict = wrong ? "FAILED" : "OK";
    if (detail) pb_report_note(rep, "wrong values: %lld %s (%s)", wrong, verdict, detail);
    else pb_report_note(rep, "wrong values: %lld %s", wrong, verdict);
}

void pb_bench_nccl_log_path(const char *out_file, const char *bench, int rank, char *buf, size_t len)
{
    const char *slash = out_file ? strrchr(out_file, '/') : NULL;
    if (slash) snprintf(buf, len, "%.*snccl-%s-rank%d.log", (int)(slash - out_file + 1), out_file, bench, rank);
    else snprintf(buf, len, "nccl-%s-rank%d.log", bench, rank);
}

void pb_bench_nccl_log_env(const char *out_file, const char *bench, int rank)
{
    char path[4096];
    pb_bench_nccl_log_path(out_file, bench, rank, path, sizeof path);
    setenv("NCCL_DEBUG_FILE", path, 0); /* 0: the user's own setting wins */
    setenv("NCCL_DEBUG", "WARN", 0);
}

int pb_bench_mem_require(pb_bench *b, const pb_mem_need *need, const char *what)
{
    /* The node's host memory is checked once, by its first rank; device memory by every rank. */
    pb_mem_need mine = *need;
    if (b->w.local_rank != 0) {
        if (mine.where == PB_MEM_HOST) mine.bytes = 0;
        mine.host_bytes = 0;
    }
    return pb_world_agree(&b->w, pb_mem_require(&mine, b->w.local_size, what));
}
