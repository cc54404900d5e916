/* p2p_sweep: latency, bandwidth and bidirectional bandwidth between a pair of
 * ranks over a size sweep, as the OSU micro-benchmarks measure them. */
#include "harness/bench.h"
#include "core/error.h"
#include "core/outpath.h"
#include "coll/p2p.h"
#include "coll/p2p_matrix.h"
#include "coll/p2p_rounds.h"
#include "core/parse.h"
#include "core/watchdog.h"

#include <stdlib.h>
#include <string.h>

#define TAG_RESULT 7702

typedef struct p2p_opts {
    pb_options common;
    int modes[PB_P2P_MODES], nmodes, modes_given;
    int pair[2];
    int rail;               /* the pair's rail (pb_p2p_matrix_rail), -1 when it is on none */
    const char *pair_text;  /* --pair, checked once the world size is known */
    int window, window_given;
    int matrix;             /* --matrix: every pair, latency at the smallest size, bw at the largest */
    int matrix_serial;      /* --matrix-serial: one pair at a time instead of concurrent rounds */
    const char *matrix_csv; /* --matrix-csv PREFIX: the matrices and the flagged pair list */
    int matrix_pairs;       /* --matrix-pairs: MP_AUTO (sampled above PB_P2P_SCHEDULE_SAMPLE_ABOVE ranks), all, sampled */
} p2p_opts;

enum { OPT_MODE, OPT_PAIR, OPT_WINDOW, OPT_MATRIX, OPT_MATRIX_SERIAL, OPT_MATRIX_CSV, OPT_MATRIX_PAIRS };
enum { MP_ALL, MP_SAMPLED, MP_AUTO };
static const char *const matrix_pairs_names[] = {"all", "sampled", NULL};

static const pb_options_opt own_opts[] = {
    {"mode", 0, "LIST", "latency, bw, bibw or all (comma-separated; default latency)", OPT_MODE},
    {"pair", 0, "A,B", "the two ranks to measure (default: on several nodes rank 0 and the first rank of the next "
                       "node, rail 0; on one node 0 and the last rank)", OPT_PAIR},
    {"window", 0, "N", "messages in flight per iteration in bw/bibw modes (default 64, as OSU)", OPT_WINDOW},
    {"matrix", 0, NULL, "measure every pair: latency at the smallest size, bw at the largest; disjoint pairs run "
                        "concurrently in about N rounds (nodes paired whole, rank k with rank k + s; then inside "
                        "every node at once)", OPT_MATRIX},
    {"matrix-serial", 0, NULL, "as --matrix, but one pair at a time (N(N-1)/2 runs): to isolate a suspect link",
     OPT_MATRIX_SERIAL},
    {"matrix-csv", 0, "PREFIX", "with --matrix, write PREFIX-latency.csv, PREFIX-bw.csv (N x N) and PREFIX-pairs.csv",
     OPT_MATRIX_CSV},
    {"matrix-pairs", 0, "WHICH", "with --matrix: all, or sampled (every node pair's rails, a few cross-rail pairs, "
                                 "every pair inside a node; default above 64 ranks, all below)", OPT_MATRIX_PAIRS},
};

/* --pair A,B: ranks of a world of `nranks`. */
static int parse_pair(p2p_opts *o, const char *option, const char *arg, int nranks)
{
    const char *comma = strchr(arg, ',');
    if (!comma || strchr(comma + 1, ','))
        return pb_error_usage(option, "'%s' is not a pair; expected two ranks as A,B in 0..%d", arg, nranks - 1);
    char first[32];
    snprintf(first, sizeof first, "%.*s", (int)(comma - arg), arg);
    if ((size_t)(comma - arg) >= sizeof first) /* longer than any rank */
        return pb_error_usage(option, "rank '%.16s...' is out of range; expected a rank in 0..%d", arg, nranks - 1);
    PB_TRY(pb_parse_rank(option, first, nranks, &o->pair[0]));
    PB_TRY(pb_parse_rank(option, comma + 1, nranks, &o->pair[1]));
    if (o->pair[0] == o->pair[1])
        return pb_error_usage(option, "'%s' names one rank twice; expected two different ranks", arg);
    return PB_OK;
}

/* Register the three files --matrix-csv PREFIX writes. */
static int matrix_paths(const char *option, const char *prefix)
{
    static const char *const suffix[] = {"-latency.csv", "-bw.csv", "-pairs.csv"};
    if (!*prefix) return pb_error_usage(option, "empty file prefix");
    for (int k = 0; k < 3; k++) {
        char path[4096], label[64];
        snprintf(path, sizeof path, "%s%s", prefix, suffix[k]);
        snprintf(label, sizeof label, "%s (%s)", option, suffix[k] + 1);
        PB_TRY(pb_outpath_add(label, path));
    }
    return PB_OK;
}

static int handle(void *ctx, int id, const char *option, const char *arg)
{
    p2p_opts *o = ctx;
    long long v;
    switch (id) {
    case OPT_MODE:
        o->modes_given = 1;
        return pb_parse_choice_list(option, arg, pb_p2p_mode_names(), 1, o->modes, &o->nmodes);
    case OPT_PAIR: o->pair_text = arg; return PB_OK;
    case OPT_WINDOW:
        PB_TRY(pb_parse_int(option, arg, 1, 4096, &v));
        o->window = (int)v, o->window_given = 1;
        return PB_OK;
    case OPT_MATRIX: o->matrix = 1; return PB_OK;
    case OPT_MATRIX_SERIAL: o->matrix = o->matrix_serial = 1; return PB_OK;
    case OPT_MATRIX_CSV: o->matrix_csv = arg; return matrix_paths(option, arg);
    case OPT_MATRIX_PAIRS: return pb_parse_choice(option, arg, matrix_pairs_names, &o->matrix_pairs);
    default: return pb_error_usage(option, "not handled");
    }
}

enum {
    COL_MODE,
    COL_BYTES,
    COL_RANK_A,
    COL_RANK_B,
    COL_HOST_A,
    COL_HOST_B,
    COL_LINK_CLASS,
    COL_ITERS,
    COL_WINDOW,
    COL_TIME_US,
    COL_TIME_US_MIN,
    COL_TIME_US_MAX,
    COL_TIME_US_MEDIAN,
    COL_TIME_US_P99,
    COL_BW_GBPS,
    COL_WRONG,
    COL_ROUND,
    COL_RAIL,
    NCOLS
};

static const pb_report_column cols[] = {
    [COL_MODE] = {"mode", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_BYTES] = {"bytes", "size", "(B)", PB_COL_INT, 12, 0, "B"},
    [COL_RANK_A] = {"rank_a", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_RANK_B] = {"rank_b", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_HOST_A] = {"host_a", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_HOST_B] = {"host_b", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_LINK_CLASS] = {"link_class", "link", "", PB_COL_STR, 6, 0, ""},
    [COL_ITERS] = {"iters", "iters", "", PB_COL_INT, 7, 0, ""},
    [COL_WINDOW] = {"window", "window", "", PB_COL_INT, 6, 0, ""},
    [COL_TIME_US] = {"time_us", "time", "(us)", PB_COL_FLOAT, 11, 2, "us"},
    [COL_TIME_US_MIN] = {"time_us_min", "min", "(us)", PB_COL_FLOAT, 10, 2, "us"},
    [COL_TIME_US_MAX] = {"time_us_max", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_TIME_US_MEDIAN] = {"time_us_median", "median", "(us)", PB_COL_FLOAT, 10, 2, "us"},
    [COL_TIME_US_P99] = {"time_us_p99", "p99", "(us)", PB_COL_FLOAT, 10, 2, "us"},
    [COL_BW_GBPS] = {"bw_GBps", "bw", "(GB/s)", PB_COL_FLOAT, 9, 3, "GB/s"},
    [COL_WRONG] = {"wrong", "#wrong", "", PB_COL_INT, 7, 0, ""},
    [COL_ROUND] = {"round", NULL, NULL, PB_COL_INT, 0, 0, ""}, /* --matrix: the round the pair ran in; -1 otherwise */
    [COL_RAIL] = {"rail", NULL, NULL, PB_COL_INT, 0, 0, ""},   /* both ranks local rank k on two nodes: k; else -1 */
};
_Static_assert(sizeof cols / sizeof cols[0] == NCOLS, "one column per COL_ index");

static int report_row(pb_bench *b, const p2p_opts *o, const int pair[2], pb_p2p_mode mode, size_t bytes,
                      const pb_p2p_result *r, int round, int rail)
{
    const pb_world *w = &b->w;
    int window = mode == PB_P2P_LATENCY ? 1 : o->window;
    pb_report_value v[NCOLS] = {
        [COL_MODE] = PB_S(pb_p2p_mode_name(mode)),
        [COL_BYTES] = PB_I(bytes),
        [COL_RANK_A] = PB_I(pair[0]),
        [COL_RANK_B] = PB_I(pair[1]),
        [COL_HOST_A] = PB_S(w->host[pair[0]]),
        [COL_HOST_B] = PB_S(w->host[pair[1]]),
        [COL_LINK_CLASS] = PB_S(pb_link_name(pb_world_link(w, pair, 2))),
        [COL_ITERS] = PB_I(r->iters),
        [COL_WINDOW] = PB_I(window),
        [COL_TIME_US] = PB_F(r->st.mean),
        [COL_TIME_US_MIN] = PB_F(r->st.min),
        [COL_TIME_US_MAX] = PB_F(r->st.max),
        [COL_TIME_US_MEDIAN] = PB_F(r->st.median),
        [COL_TIME_US_P99] = PB_F(r->st.p99),
        [COL_BW_GBPS] = PB_F(r->bw_GBps),
        [COL_WRONG] = PB_I(r->wrong),
        [COL_ROUND] = PB_I(round),
        [COL_RAIL] = PB_I(rail),
    };
    return pb_report_row(b->rep, v);
}

/* The configuration of one mode at one size: OSU's counts unless -n/-w. */
static pb_p2p_cfg mode_cfg(const p2p_opts *o, pb_p2p_mode mode, size_t bytes)
{
    pb_p2p_cfg c = {mode, 0, 0, o->window, o->common.max_seconds, o->common.check};
    pb_options_iters_for(&o->common, pb_p2p_policy(mode), bytes, &c.iters, &c.warmup);
    return c;
}

/* Measure one size on the pair and bring the result to rank 0 (in *res there). */
static int measure_on_pair(pb_bench *b, const int pair[2], pb_comm *comm, const pb_p2p_cfg *cfg, size_t bytes,
                           pb_buffers *s, pb_buffers *r, pb_p2p_result *out)
{
    int me = b->w.rank, a = pair[0], peer = me == a ? pair[1] : a;
    int in_pair = me == pair[0] || me == pair[1];
    pb_p2p_result res = {0};
    int status = PB_OK;
    pb_watchdog_what(pb_p2p_mode_name(cfg->mode), bytes);
    if (in_pair) {
        pb_buffers_fit(s, bytes);
        pb_buffers_fit(r, bytes);
        status = pb_p2p_measure(b->be, comm, b->w.comm, a, peer, bytes, cfg, s, r, &res);
    }
    if (me == a && a != 0) MPI_Send(&res, sizeof res, MPI_BYTE, 0, TAG_RESULT, b->w.comm);
    if (me == 0 && a != 0) {
        MPI_Request req;
        MPI_Irecv(&res, sizeof res, MPI_BYTE, a, TAG_RESULT, b->w.comm, &req);
        pb_p2p_sleepy_wait(&req);
    }
    *out = res;
    return status;
}

/* One size on --pair: measure, then report on rank 0. `rows` holds rank 0
 * and the pair: a row rank 0 could not write (a full disk) stops the pair
 * too, instead of leaving it measuring the next size against a rank 0 that
 * has stopped. The other ranks wait in the sleepy barrier, taking no core. */
static int one_size(pb_bench *b, const p2p_opts *o, pb_comm *comm, MPI_Comm rows, const pb_p2p_cfg *cfg,
                    size_t bytes, pb_buffers *s, pb_buffers *r, long long *wrong)
{
    pb_p2p_result res;
    int status = measure_on_pair(b, o->pair, comm, cfg, bytes, s, r, &res);
    if (b->w.rank == 0) {
        if (res.wrong > 0) *wrong += res.wrong;
        if (status == PB_OK) status = report_row(b, o, o->pair, cfg->mode, bytes, &res, -1, o->rail);
    }
    return rows == MPI_COMM_NULL ? status : pb_world_agree_at(rows, status, NULL);
}

/* ", rail K" for a pair on a rail, "" otherwise. */
static const char *rail_words(int rail, char *buf, size_t len)
{
    if (rail < 0) return "";
    snprintf(buf, len, ", rail %d", rail);
    return buf;
}

/* Rank 0: summaries per link class, slow pairs flagged (against their class and
 * their rail), matrices written. */
static int matrix_report(pb_bench *b, const p2p_opts *o, pb_p2p_matrix_pair_result *pr, int npairs)
{
    char railbuf[32];
    pb_p2p_matrix_class_summary s[3];
    int nclasses = pb_p2p_matrix_summarize(pr, npairs, s);
    int slow = pb_p2p_matrix_flag_slow(pr, npairs, s, nclasses, PB_P2P_MATRIX_SLOW_BW_FRAC,
                                       PB_P2P_MATRIX_SLOW_LAT_FACTOR);
    for (int c = 0; c < nclasses; c++)
        pb_report_note(b->rep, "%s pairs: %d; latency min/median/max %.2f/%.2f/%.2f us; bw min/median/max "
                               "%.3f/%.3f/%.3f GB/s",
                       s[c].link, s[c].pairs, s[c].lat_min, s[c].lat_median, s[c].lat_max, s[c].bw_min,
                       s[c].bw_median, s[c].bw_max);
    for (int i = 0; i < npairs; i++)
        if (pr[i].slow)
            pb_report_note(b->rep, "SLOW pair %d-%d (%s%s): %.3f GB/s, %.2f us (below %gx the median bw or above "
                                   "%gx the median latency of its %s)",
                           pr[i].a, pr[i].b, pr[i].link, rail_words(pr[i].rail, railbuf, sizeof railbuf), pr[i].bw_GBps,
                           pr[i].lat_us, PB_P2P_MATRIX_SLOW_BW_FRAC, PB_P2P_MATRIX_SLOW_LAT_FACTOR, pr[i].slow == PB_P2P_MATRIX_SLOW_CLASS ? "class"
                                         : pr[i].slow == PB_P2P_MATRIX_SLOW_RAIL ? "rail" : "class and of its rail");
    pb_report_summary(b->rep, "slow_pairs", "Slow pairs", slow, NULL);
    if (!o->matrix_csv) return PB_OK;
    char path[4096];
    snprintf(path, sizeof path, "%s-latency.csv", o->matrix_csv);
    PB_TRY(pb_p2p_matrix_write_csv(path, b->w.size, pr, npairs, 0));
    snprintf(path, sizeof path, "%s-bw.csv", o->matrix_csv);
    PB_TRY(pb_p2p_matrix_write_csv(path, b->w.size, pr, npairs, 1));
    snprintf(path, sizeof path, "%s-pairs.csv", o->matrix_csv);
    return pb_p2p_matrix_write_pairs(path, pr, npairs);
}

/* Every pair, round by round (p2p_schedule.h): latency at the smallest size,
 * bandwidth at the largest; rows are written as each round completes. */
static int run_matrix(pb_bench *b, const p2p_opts *o, pb_comm *comm, const pb_p2p_schedule *sch, const uint64_t *sizes,
                      size_t nsizes, pb_buffers *s, pb_buffers *r, long long *wrong)
{
    int status = PB_OK;
    size_t npairs = (size_t)(sch->npairs > 0 ? sch->npairs : 1);
    pb_p2p_matrix_pair_result *pr = calloc(npairs, sizeof *pr);
    pb_p2p_rounds_measure *m = calloc(npairs, sizeof *m);
    if (!pr || !m) status = pb_fail(PB_ERR_ENV, "out of memory for %d pairs", sch->npairs);
    status = pb_world_agree(&b->w, status);
    int *local = calloc((size_t)b->w.size, sizeof *local);
    if (!local) status = pb_fail(PB_ERR_ENV, "out of memory for %d ranks", b->w.size);
    else pb_p2p_matrix_local_ranks(b->w.node_of, b->w.size, local);
    status = pb_world_agree(&b->w, status);
    pb_p2p_rounds_setup su = {b->be, comm, b->w.comm, mode_cfg(o, PB_P2P_LATENCY, sizes[0]),
                         mode_cfg(o, PB_P2P_BW, sizes[nsizes - 1]), sizes[0], sizes[nsizes - 1], s, r};
    if (b->rep && status == PB_OK) pb_report_header(b->rep);
    for (int first = 0; first < sch->npairs && status == PB_OK && pr && m && local;) {
        int round = sch->pairs[first].round, count = 0;
        while (first + count < sch->npairs && sch->pairs[first + count].round == round) count++;
        status = pb_p2p_rounds_run(&su, sch, first, count, m + first);
        for (int k = first; k < first + count && b->w.rank == 0 && status == PB_OK; k++) {
            int pair[2] = {sch->pairs[k].a, sch->pairs[k].b};
            pr[k] = (pb_p2p_matrix_pair_result){pair[0], pair[1], pb_link_name(pb_world_link(&b->w, pair, 2)), m[k].lat.st.mean,
                                     m[k].bw.bw_GBps, 0, pb_p2p_matrix_rail(b->w.node_of, local, pair[0], pair[1])};
            *wrong += (m[k].lat.wrong > 0 ? m[k].lat.wrong : 0) + (m[k].bw.wrong > 0 ? m[k].bw.wrong : 0);
            status = report_row(b, o, pair, PB_P2P_LATENCY, sizes[0], &m[k].lat, round, pr[k].rail);
            if (status == PB_OK)
                status = report_row(b, o, pair, PB_P2P_BW, sizes[nsizes - 1], &m[k].bw, round, pr[k].rail);
        }
        status = pb_world_agree(&b->w, status); /* a row rank 0 could not write stops every rank */
        first += count;
    }
    if (status == PB_OK && b->rep) status = matrix_report(b, o, pr, sch->npairs);
    free(local);
    free(pr);
    free(m);
    return status;
}

/* The rail of --pair (or the default pair), for its rows and its "# pair" line. */
static int pair_rail(const pb_world *w, p2p_opts *o)
{
    int *local = calloc((size_t)w->size, sizeof *local);
    if (!local) return pb_fail(PB_ERR_ENV, "out of memory for %d ranks", w->size);
    pb_p2p_matrix_local_ranks(w->node_of, w->size, local);
    o->rail = pb_p2p_matrix_rail(w->node_of, local, o->pair[0], o->pair[1]);
    free(local);
    return PB_OK;
}

/* The matrix's plan: which pairs, how many peers a rank meets, and the NCCL
 * connection memory that is expected to hold (pb_p2p_matrix_peer_bytes). */
typedef struct matrix_plan {
    long long pairs, every;   /* measured, and all N(N-1)/2 */
    int peers;                /* most distinct peers of a rank */
    uint64_t peer_bytes, bytes;
} matrix_plan;

static matrix_plan plan_of(const pb_world *w, const pb_p2p_schedule *sch)
{
    matrix_plan m = {sch->npairs, (long long)w->size * (w->size - 1) / 2, pb_p2p_schedule_peers(sch, w->size),
                     pb_p2p_matrix_peer_bytes(), 0};
    m.bytes = m.peer_bytes * (uint64_t)m.peers;
    return m;
}

static void matrix_meta(cJSON *meta, const p2p_opts *o, const pb_world *w, const pb_p2p_schedule *sch)
{
    matrix_plan m = plan_of(w, sch);
    cJSON_AddStringToObject(meta, "matrix_mode", o->matrix_serial ? "serial" : "concurrent");
    cJSON_AddNumberToObject(meta, "matrix_rounds", sch->nrounds);
    cJSON_AddStringToObject(meta, "matrix_pairs", matrix_pairs_names[o->matrix_pairs]);
    cJSON_AddNumberToObject(meta, "matrix_pairs_measured", (double)m.pairs);
    cJSON_AddNumberToObject(meta, "matrix_pairs_every", (double)m.every);
    cJSON_AddNumberToObject(meta, "matrix_peers_per_rank", m.peers);
    cJSON_AddNumberToObject(meta, "matrix_nccl_peer_bytes_expected", (double)m.peer_bytes);
    cJSON_AddNumberToObject(meta, "matrix_nccl_bytes_expected", (double)m.bytes);
}

/* Rank 0, above the table: what the matrix measures, and what it costs a rank in NCCL connections. */
static void matrix_lines(const p2p_opts *o, const pb_world *w, const pb_p2p_schedule *sch)
{
    matrix_plan m = plan_of(w, sch);
    if (o->matrix_pairs == MP_SAMPLED)
        printf("# matrix: sampled pairs (the default above %d ranks; --matrix-pairs all for every pair): %lld of the "
               "%lld pairs in %d rounds: every node pair's rails (local rank k with k), one cross-rail shift (k with "
               "k + s) in each of the first r - 1 node rounds (s = 1, 2, ...), every pair inside a node\n",
               PB_P2P_SCHEDULE_SAMPLE_ABOVE, m.pairs, m.every, sch->nrounds);
    else
        printf("# matrix: every pair, %lld in %d rounds\n", m.pairs, sch->nrounds);
    double gib = (double)m.bytes / 1073741824.0;
    printf("# matrix: up to %d peers a rank; NCCL connection buffers expected %.*f %s a rank (%.0f MiB a peer: "
           "NCCL_BUFFSIZE x %d channels x 2 directions; an expectation, not measured)\n", m.peers, gib < 1 ? 0 : 2,
           gib < 1 ? gib * 1024 : gib, gib < 1 ? "MiB" : "GiB", (double)m.peer_bytes / 1048576.0,
           PB_P2P_MATRIX_CHANNELS_PER_PEER);
}

/* Options that would be ignored in the combination given are refused. */
static int check_combinations(const p2p_opts *o)
{
    if (o->matrix && (o->pair_text || o->modes_given))
        return pb_error_usage(o->pair_text ? "--pair" : "--mode", "does not apply to --matrix, which measures every "
                              "pair (latency at the smallest size, bw at the largest); expected one or the other");
    if (o->matrix_csv && !o->matrix)
        return pb_error_usage("--matrix-csv", "does not apply without --matrix (or --matrix-serial); expected both "
                                              "or neither");
    if (o->matrix_pairs != MP_AUTO && !o->matrix)
        return pb_error_usage("--matrix-pairs", "does not apply without --matrix; expected both or neither");
    if (o->matrix_pairs == MP_SAMPLED && o->matrix_serial)
        return pb_error_usage("--matrix-pairs", "sampled does not apply to --matrix-serial, which measures every "
                                                "pair one at a time; expected --matrix, or --matrix-pairs all");
    int windowed = o->matrix; /* the matrix measures bw */
    for (int m = 0; m < o->nmodes; m++) windowed |= o->modes[m] != PB_P2P_LATENCY;
    if (o->window_given && !windowed)
        return pb_error_usage("--window", "does not apply to --mode latency (one message in flight); expected "
                                          "--mode bw, bibw or all, or no --window");
    return PB_OK;
}

int main(int argc, char **argv)
{
    p2p_opts o = {.modes = {PB_P2P_LATENCY}, .nmodes = 1, .window = 64, .matrix_pairs = MP_AUTO};
    pb_options_defaults(&o.common);
    o.common.minbytes = 1;
    o.common.maxbytes = 4u << 20;
    o.common.max_seconds = 5;
    pb_options_group groups[] = {
        {"p2p_sweep options", own_opts, (int)(sizeof own_opts / sizeof own_opts[0]), handle, &o},
        pb_options_common_group(&o.common, PB_OPTS_SWEEP | PB_OPTS_ITERS | PB_OPTS_DATA | PB_OPTS_OUTPUT),
    };
    pb_options_add_list("modes", pb_p2p_mode_names());
    pb_bench b;
    pb_bench_start(&b, "p2p_sweep", &argc, &argv, MPI_THREAD_SINGLE,
                   "Usage: mpirun -np N p2p_sweep [options]\n"
                   "Point-to-point latency, bandwidth and bidirectional bandwidth between two ranks (OSU method).\n"
                   "Iterations per size as OSU: latency 10000 (+100 warm-up) up to 8 KiB, 1000 (+10) above; "
                   "bw and bibw 100 (+10) and 20 (+2); -n/-w set one count for all.",
                   groups, 2);
    int status = pb_options_validate(&o.common);
    if (status == PB_OK && b.w.size < 2) status = pb_fail(PB_ERR_ENV, "p2p_sweep needs at least 2 ranks, got 1");
    if (status == PB_OK) status = check_combinations(&o);
    pb_p2p_matrix_default_pair(b.w.node_of, b.w.size, o.pair);
    if (status == PB_OK && o.pair_text) status = parse_pair(&o, "--pair", o.pair_text, b.w.size);
    if (status == PB_OK) status = pair_rail(&b.w, &o);
    if (status != PB_OK) pb_bench_finish(&b, status);

    uint64_t sizes[PB_MAX_SIZES];
    size_t nsizes = pb_options_sweep_sizes(&o.common, sizes, PB_MAX_SIZES);
    status = pb_bench_select(&b, &o.common);
    pb_p2p_schedule sch = {0};
    if (o.matrix_pairs == MP_AUTO)
        o.matrix_pairs = !o.matrix_serial && b.w.size > PB_P2P_SCHEDULE_SAMPLE_ABOVE ? MP_SAMPLED : MP_ALL;
    if (status == PB_OK && o.matrix)
        status = pb_world_agree(&b.w, o.matrix_serial                ? pb_p2p_schedule_serial(b.w.size, &sch)
                                      : o.matrix_pairs == MP_SAMPLED ? pb_p2p_schedule_sampled(b.w.node_of, b.w.size, &sch)
                                                                     : pb_p2p_schedule_concurrent(b.w.node_of, b.w.size, &sch));
    cJSON *meta = cJSON_CreateObject();
    if (o.matrix) matrix_meta(meta, &o, &b.w, &sch);
    if (status == PB_OK) cJSON_AddItemToObject(meta, "buffers", pb_buffers_mode_meta(b.be, o.common.rotate));
    cJSON *iters = cJSON_AddObjectToObject(meta, "iterations");
    for (int m = 0; m < PB_P2P_MODES; m++) {
        char words[160];
        pb_options_iters_describe(&o.common, pb_p2p_policy((pb_p2p_mode)m), words, sizeof words);
        cJSON_AddStringToObject(iters, pb_p2p_mode_name((pb_p2p_mode)m), words);
    }
    if (status == PB_OK) status = pb_bench_open(&b, &o.common, cols, NCOLS, meta);
    else cJSON_Delete(meta);
    pb_comm *comm = NULL;
    if (status == PB_OK) status = b.be->comm_create(b.w.comm, &comm);
    int in_pair = o.matrix || b.w.rank == o.pair[0] || b.w.rank == o.pair[1];
    pb_buffers sbuf = {0}, rbuf = {0};
    size_t cache = o.common.rotate ? pb_buffers_cache_bytes(b.be) : 0;
    pb_mem_need need = {b.be->mem, NULL, 0, 0};
    if (in_pair) need.bytes = 2 * pb_buffers_rotation_pool(sizes[nsizes - 1], cache, o.common.rotate);
    status = pb_world_agree(&b.w, status);
    if (status == PB_OK) status = pb_bench_mem_require(&b, &need, "-e/--maxbytes (send and receive buffers)");
    if (status == PB_OK && in_pair) status = pb_buffers_alloc(b.be, sizes[nsizes - 1], o.common.rotate, &sbuf);
    if (status == PB_OK && in_pair) status = pb_buffers_alloc(b.be, sizes[nsizes - 1], o.common.rotate, &rbuf);
    status = pb_world_agree_at(b.w.comm, status, "buffers");
    long long wrong = 0;
    if (b.rep && status == PB_OK && !o.matrix) {
        char rail[64];
        printf("# pair: rank %d (%s) <-> rank %d (%s), %s-node%s", o.pair[0], b.w.host[o.pair[0]], o.pair[1],
               b.w.host[o.pair[1]], pb_link_name(pb_world_link(&b.w, o.pair, 2)), rail_words(o.rail, rail, sizeof rail));
        if (o.rail >= 0) printf(" of nodes %d and %d", b.w.node_of[o.pair[0]], b.w.node_of[o.pair[1]]);
        printf("\n");
    }
    if (b.rep && status == PB_OK && o.matrix) matrix_lines(&o, &b.w, &sch);
    if (o.matrix && status == PB_OK) status = run_matrix(&b, &o, comm, &sch, sizes, nsizes, &sbuf, &rbuf, &wrong);
    MPI_Comm rows = MPI_COMM_NULL; /* rank 0 and the pair (one_size) */
    if (!o.matrix && status == PB_OK)
        MPI_Comm_split(b.w.comm, b.w.rank == 0 || in_pair ? 0 : MPI_UNDEFINED, b.w.rank, &rows);
    pb_p2p_schedule_free(&sch);
    for (int m = 0; m < o.nmodes && status == PB_OK && !o.matrix; m++) {
        pb_p2p_mode mode = (pb_p2p_mode)o.modes[m];
        if (b.rep) {
            printf("#\n# %s\n", pb_p2p_mode_name(mode));
            pb_report_header(b.rep);
        }
        for (size_t i = 0; i < nsizes && status == PB_OK; i++) {
            pb_p2p_cfg cfg = mode_cfg(&o, mode, sizes[i]);
            status = one_size(&b, &o, comm, rows, &cfg, sizes[i], &sbuf, &rbuf, &wrong);
        }
    }
    if (rows != MPI_COMM_NULL) MPI_Comm_free(&rows);
    /* Ranks outside the pair wait here the whole run without taking a core. */
    pb_p2p_sleepy_barrier(b.w.comm);
    if (in_pair) {
        pb_buffers_free(&sbuf);
        pb_buffers_free(&rbuf);
    }
    if (comm) b.be->comm_destroy(comm);
    if (o.common.check) pb_bench_note_wrong(b.rep, wrong, NULL);
    if (status == PB_OK && wrong > 0) status = PB_ERR_CHECK;
    pb_bench_finish(&b, status);
}
