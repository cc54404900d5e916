#include "plan/run_estimate.h"

#include "coll/p2p_schedule.h"

#include <stdio.h>
#include <stdlib.h>

int pb_run_estimate_sizes(const pb_run_estimate_sweep *s)
{
    int n = 0;
    if (s->factor < 2 || s->minbytes == 0) return s->minbytes <= s->maxbytes ? 1 : 0;
    for (uint64_t b = s->minbytes; b <= s->maxbytes; b *= s->factor) {
        n++;
        if (b > UINT64_MAX / s->factor) break;
    }
    return n;
}

static int nodes_of(int nranks, int ranks_per_node)
{
    return (nranks + ranks_per_node - 1) / ranks_per_node;
}

int pb_run_estimate_matrix_rounds(int nranks, int ranks_per_node)
{
    int *node_of = malloc(sizeof(int) * (size_t)nranks);
    if (!node_of) return -1;
    for (int i = 0; i < nranks; i++) node_of[i] = i / ranks_per_node;
    pb_p2p_schedule s = {0};
    int rounds = pb_p2p_schedule_concurrent(node_of, nranks, &s) == 0 ? s.nrounds : -1;
    pb_p2p_schedule_free(&s);
    free(node_of);
    return rounds;
}

double pb_run_estimate_launch_default(int nranks, int ranks_per_node)
{
    return 2.0 + 0.05 * nodes_of(nranks, ranks_per_node);
}

/* One launched step: launch + measured bound, at most the step limit. */
static void launched(pb_run_estimate_step *st, const pb_run_estimate_in *in, const char *name, double bound, const char *what)
{
    st->name = name;
    double t = in->launch_s + bound;
    if (t > in->step_limit_s) {
        st->seconds = in->step_limit_s;
        snprintf(st->why, sizeof st->why, "the step limit (%s would be %.0f s)", what, t);
    } else {
        st->seconds = t;
        snprintf(st->why, sizeof st->why, "%s + %.1f s launch", what, in->launch_s);
    }
}

static void skipped(pb_run_estimate_step *st, const char *name, const char *why)
{
    st->name = name;
    st->seconds = 0;
    snprintf(st->why, sizeof st->why, "skipped: %s", why);
}

static void fixed(pb_run_estimate_step *st, const char *name, double s, const char *why)
{
    st->name = name;
    st->seconds = s;
    snprintf(st->why, sizeof st->why, "%s", why);
}

static void sweep_step(pb_run_estimate_step *st, const pb_run_estimate_in *in, const char *name, const pb_run_estimate_sweep *sw,
                       int items, const char *item_words)
{
    char what[128];
    int sizes = pb_run_estimate_sizes(sw);
    snprintf(what, sizeof what, "%d %s x %d sizes x %g s cap", items, item_words, sizes, sw->cap_s);
    launched(st, in, name, items * sizes * sw->cap_s, what);
}

int pb_run_estimate_steps(const pb_run_estimate_in *in, pb_run_estimate_step out[PB_RUN_ESTIMATE_MAX_STEPS], double *total)
{
    int n = 0, rpn = in->ranks_per_node > 0 ? in->ranks_per_node : in->nranks;
    int nodes = nodes_of(in->nranks, rpn), two = in->nranks >= 2;
    char what[128];
    sweep_step(&out[n++], in, "coll_sweep", &in->coll, in->ncolls, "collectives");
    if (nodes > 1 && rpn > 1) sweep_step(&out[n++], in, "coll_sweep_intra", &in->coll, in->ncolls, "collectives");
    else skipped(&out[n++], "coll_sweep_intra", "one node, or one rank per node");
    if (two) sweep_step(&out[n++], in, "p2p_sweep", &in->p2p, 3, "modes");
    else skipped(&out[n++], "p2p_sweep", "one rank");
    if (two) {
        int rounds = pb_run_estimate_matrix_rounds(in->nranks, rpn);
        if (rounds < 0) return -1;
        snprintf(what, sizeof what, "%d rounds x 2 sizes x %g s cap", rounds, in->matrix_cap_s);
        launched(&out[n++], in, "p2p_matrix", rounds * 2 * in->matrix_cap_s, what);
    } else {
        skipped(&out[n++], "p2p_matrix", "one rank");
    }
    const char *workloads[] = {"dp_allreduce", "tp_layer", "pp_pipeline"};
    for (int i = 0; i < 3; i++) fixed(&out[n++], workloads[i], in->step_limit_s, "the step limit (no per-size cap)");
    if (in->hybrid) fixed(&out[n++], "hybrid_3d", in->step_limit_s, "the step limit (no per-size cap)");
    else skipped(&out[n++], "hybrid_3d", "world size not a multiple of 4");
    fixed(&out[n++], "compute_probe", in->tool_s, "a fixed allowance (no MPI)");
    if (two) fixed(&out[n++], "plan_fit", in->tool_s, "a fixed allowance (no MPI)");
    else skipped(&out[n++], "plan_fit", "one rank");
    if (two) fixed(&out[n++], "calibrate", in->tool_s, "a fixed allowance (no MPI)");
    else skipped(&out[n++], "calibrate", "one rank");
    if (in->reproduce) {
        /* run_all.sh's repro_busbw: allreduce, 1M to 64M by 2, 0.5 s a size */
        pb_run_estimate_sweep ar = {1 << 20, 64 << 20, 2, 0.5};
        sweep_step(&out[n++], in, "repro_busbw", &ar, 1, "collective");
        fixed(&out[n++], "repro_setup", in->tool_s, "a fixed allowance (reproduce.py)");
        const char *repro[] = {"repro_dp", "repro_pp", "repro_tp"};
        for (int i = 0; i < 3; i++) fixed(&out[n++], repro[i], in->step_limit_s, "the step limit (no per-size cap)");
        fixed(&out[n++], "repro_write", in->tool_s, "a fixed allowance (reproduce.py)");
    }
    if (in->acceptance) fixed(&out[n++], "acceptance", in->tool_s, "a fixed allowance (no MPI)");
    fixed(&out[n++], "report", in->tool_s, "a fixed allowance (gnuplot, report.py)");
    *total = 0;
    for (int i = 0; i < n; i++) *total += out[i].seconds;
    return n;
}
