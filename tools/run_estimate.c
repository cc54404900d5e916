/* run_estimate: an upper bound on the duration of run_all.sh's steps for a
 * given world and profile (plan/run_estimate.h), printed one step a line with
 * what bounds it, then the total. run_all.sh --dry-run calls it; it needs no
 * MPI and runs nothing.
 *
 *   run_estimate --np N [--ranks-per-node R] --step-limit S --sweep B,E,F,CAP
 *                --p2p B,E,F,CAP --matrix-cap C [--hybrid] [--acceptance] [--reproduce]
 *                [--launch-seconds L] [--tool-seconds T]
 *
 * Exit: 0 ok, 2 usage (the message names the option), 3 out of memory. */
#include "coll/coll.h"
#include "core/error.h"
#include "core/parse.h"
#include "plan/run_estimate.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "B,E,F,CAP": -b, -e and -f of a sweep and its --max-seconds-per-size. */
static int parse_sweep(const char *option, const char *text, pb_run_estimate_sweep *out)
{
    char buf[128], *parts[4], *save = NULL;
    int n = 0;
    snprintf(buf, sizeof buf, "%s", text);
    for (char *p = strtok_r(buf, ",", &save); p && n < 4; p = strtok_r(NULL, ",", &save)) parts[n++] = p;
    if (n != 4 || strtok_r(NULL, ",", &save))
        return pb_error_usage(option, "'%s' is not B,E,F,CAP; expected e.g. 8,1M,8,0.25 (-b, -e, -f, --max-seconds-per-size)", text);
    long long f;
    PB_TRY(pb_parse_size(option, parts[0], PB_SIZE_MAX, &out->minbytes));
    PB_TRY(pb_parse_size(option, parts[1], PB_SIZE_MAX, &out->maxbytes));
    PB_TRY(pb_parse_int(option, parts[2], 2, 1024, &f));
    out->factor = (uint64_t)f;
    return pb_parse_double(option, parts[3], 0.001, 86400, &out->cap_s);
}

static int parse_args(int argc, char **argv, pb_run_estimate_in *in)
{
    static const struct option opts[] = {
        {"np", required_argument, 0, 'n'},          {"ranks-per-node", required_argument, 0, 'r'},
        {"step-limit", required_argument, 0, 'l'},  {"sweep", required_argument, 0, 's'},
        {"p2p", required_argument, 0, 'p'},         {"matrix-cap", required_argument, 0, 'm'},
        {"hybrid", no_argument, 0, 'h'},            {"acceptance", no_argument, 0, 'a'},
        {"reproduce", no_argument, 0, 'R'},
        {"launch-seconds", required_argument, 0, 'L'}, {"tool-seconds", required_argument, 0, 'T'},
        {0, 0, 0, 0},
    };
    long long v;
    int c, status = PB_OK, launch_given = 0;
    opterr = 0;
    while (status == PB_OK && (c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'n': status = pb_parse_int("--np", optarg, 1, 1 << 20, &v); in->nranks = (int)v; break;
        case 'r': status = pb_parse_int("--ranks-per-node", optarg, 1, 1 << 20, &v); in->ranks_per_node = (int)v; break;
        case 'l': status = pb_parse_double("--step-limit", optarg, 1, 1e6, &in->step_limit_s); break;
        case 's': status = parse_sweep("--sweep", optarg, &in->coll); break;
        case 'p': status = parse_sweep("--p2p", optarg, &in->p2p); break;
        case 'm': status = pb_parse_double("--matrix-cap", optarg, 0.001, 86400, &in->matrix_cap_s); break;
        case 'h': in->hybrid = 1; break;
        case 'a': in->acceptance = 1; break;
        case 'R': in->reproduce = 1; break;
        case 'L': status = pb_parse_double("--launch-seconds", optarg, 0, 3600, &in->launch_s); launch_given = 1; break;
        case 'T': status = pb_parse_double("--tool-seconds", optarg, 0, 3600, &in->tool_s); break;
        default: status = pb_error_usage(argv[optind - 1], "unknown option or missing value; see the comment at the top of tools/run_estimate.c");
        }
    }
    if (status == PB_OK && optind < argc) status = pb_error_usage(argv[optind], "unexpected argument");
    if (status == PB_OK && in->nranks == 0) status = pb_error_usage("--np", "is required");
    if (status == PB_OK && (in->step_limit_s == 0 || in->coll.cap_s == 0 || in->p2p.cap_s == 0 || in->matrix_cap_s == 0))
        status = pb_error_usage(in->step_limit_s == 0 ? "--step-limit" : in->coll.cap_s == 0 ? "--sweep"
                                : in->p2p.cap_s == 0 ? "--p2p" : "--matrix-cap", "is required");
    if (status == PB_OK && in->ranks_per_node > in->nranks)
        status = pb_error_usage("--ranks-per-node", "%d is more than --np %d", in->ranks_per_node, in->nranks);
    if (in->ranks_per_node == 0) in->ranks_per_node = in->nranks;
    if (!launch_given) in->launch_s = pb_run_estimate_launch_default(in->nranks, in->ranks_per_node);
    return status;
}

int main(int argc, char **argv)
{
    pb_run_estimate_in in = {.tool_s = 10, .ncolls = PB_COLL_COUNT};
    int status = parse_args(argc, argv, &in);
    if (status != PB_OK) return status;
    pb_run_estimate_step st[PB_RUN_ESTIMATE_MAX_STEPS];
    double total;
    int n = pb_run_estimate_steps(&in, st, &total);
    if (n < 0) return pb_fail(PB_ERR_ENV, "out of memory for the schedule of %d ranks", in.nranks);
    int rpn = in.ranks_per_node > 0 ? in.ranks_per_node : in.nranks; /* one node unless told */
    int nodes = rpn > 0 ? (in.nranks + rpn - 1) / rpn : 1;
    printf("# upper bound on each step's duration: %d ranks on %d node(s) of %d; every size at its cap,\n"
           "# workloads at the step limit (%.0f s); launch %.1f s per step (assumed, not measured)\n",
           in.nranks, nodes, rpn, in.step_limit_s, in.launch_s);
    for (int i = 0; i < n; i++) printf("%-18s %8.0f s  %s\n", st[i].name, st[i].seconds, st[i].why);
    printf("%-18s %8.0f s  (%.1f h) at most\n", "total", total, total / 3600);
    return PB_OK;
}
