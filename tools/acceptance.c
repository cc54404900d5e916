/* acceptance: evaluate a threshold file (docs/acceptance.md) against a results
 * directory written by run_all.sh, print a PASS/FAIL table, optionally write
 * a JUnit XML file for CI (plan/thresholds_junit.h). Needs no MPI: it only
 * reads CSV files. Each rule is judged on the run's files by
 * plan/thresholds_run.h. With --derive RUN it writes a threshold file from a
 * golden run instead (plan/thresholds_derive_file.h): one rule per headline
 * figure, each judged on RUN as a check would judge it, its threshold the
 * measured value less a margin.
 *
 * Exit: 0 every rule passed (or was skipped), 1 a rule failed (or read a
 * result it cannot trust: a file cut short, a garbled row, a value that is
 * not a finite number; the reason names FILE:LINE), 2 usage error or bad
 * threshold file (the message names FILE:LINE), 3 the JUnit file cannot be
 * written. */
#include "core/error.h"
#include "core/input.h"
#include "core/options.h"
#include "core/outpath.h"
#include "core/parse.h"
#include "core/version.h"
#include "plan/thresholds_derive_file.h"
#include "plan/thresholds_junit.h"
#include "plan/thresholds_run.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const verdict_names[] = {"PASS", "FAIL", "SKIP"}; /* by enum pb_th_verdict */

static void usage_text(void)
{
    printf("Usage: acceptance --thresholds FILE --results DIR [--junit FILE] [--quiet]\n"
           "       acceptance --check FILE        (parse the threshold file only)\n"
           "       acceptance --derive RUN [--margin PCT%%] [-o FILE]   (thresholds from a golden run)\n"
           "       acceptance --version\n"
           "Evaluate acceptance thresholds against the CSV files of a run_all.sh results directory.\n"
           "Each rule takes the worst matching row; exit 0 all pass, 1 any fails, 2 bad input.\n"
           "--derive writes one rule per headline figure RUN measured, at the measured value less PCT%%\n"
           "(default 10%%) for a rate, plus it for a time; to FILE, else to stdout.\n\nMetrics:\n");
    for (const pb_thresholds_metric *m = pb_thresholds_metrics(); m->name; m++)
        printf("  %-17s %-5s %s (%s*.csv)\n", m->name, m->unit[0] ? m->unit : "frac", m->description, m->source);
    printf("\nKeys: coll=NAME size=SIZE link=intra|inter|mixed mode=... (overlap/schedule/benchmark) m=N stages=N hidden=N\n"
           "Format and examples: docs/acceptance.md, acceptance/*.thresholds\n");
}

static int read_file(const char *option, const char *path, char **text, size_t *len)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return pb_error_usage(option, "'%s' is a directory; expected a threshold file", path);
    FILE *f = pb_input_open(path); /* a FIFO with no writer: refused after a wait, not waited on forever */
    if (!f) return pb_error_usage(option, "cannot open '%s': %s", path, pb_input_why(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    fclose(f);
    if (!buf) return pb_fail(PB_ERR_ENV, "out of memory reading %s", path);
    *text = buf;
    *len = n;
    return PB_OK;
}

/* The threshold file and the results read, so that --junit overwrites neither. */
static int register_inputs(const char *tfile, const char *dir)
{
    pb_error_set_quiet_usage(0);
    int st = pb_outpath_add_input("-t/--thresholds", tfile);
    if (st == PB_OK) st = pb_outpath_add_input_dir("-r/--results", dir, pb_thresholds_run_reads);
    pb_error_set_quiet_usage(1);
    return st;
}

static void print_table(const pb_thresholds_set *set, const pb_thresholds_eval_outcome *o, int counts[3])
{
    printf("%5s  %-58s %14s %16s  %s\n", "line", "rule", "measured", "threshold", "result");
    for (int i = 0; i < set->n; i++) {
        const pb_thresholds_rule *r = &set->rules[i];
        char meas[32], thr[40], val[32];
        pb_thresholds_value_text(r, o[i].measured, meas, sizeof meas);
        pb_thresholds_value_text(r, r->value, val, sizeof val);
        snprintf(thr, sizeof thr, "%s %s", r->op == PB_TH_GE ? ">=" : "<=", val);
        printf("%5d  %-58.58s %14s %16s  %s%s%s\n", r->line, r->source_text, meas, thr, verdict_names[o[i].v],
               o[i].why[0] ? "  " : "", o[i].v == PB_TH_PASS ? "" : o[i].why);
        counts[o[i].v]++;
    }
    printf("acceptance: %d passed, %d failed, %d skipped of %d rules: %s\n", counts[PB_TH_PASS], counts[PB_TH_FAIL],
           counts[PB_TH_SKIP], set->n, counts[PB_TH_FAIL] ? "FAIL" : "PASS");
}

static int load_rules(const char *option, const char *path, pb_thresholds_set *set)
{
    char *text = NULL;
    size_t len = 0;
    pb_error_set_quiet_usage(0); /* quiet is for the size parser inside the rules, not for the file */
    int st = read_file(option, path, &text, &len);
    pb_error_set_quiet_usage(1);
    if (st != PB_OK) return st;
    char err[512];
    int rc = pb_thresholds_parse(path, text, len, set, err, sizeof err);
    free(text);
    if (rc != PB_OK) fprintf(stderr, "acceptance: %s\n", err);
    return rc;
}

/* "10%" -> 0.10: a percentage from 0 to 99. */
static int parse_margin(const char *text, double *out)
{
    size_t n = strlen(text);
    char num[32] = "";
    if (n >= 2 && n < sizeof num && text[n - 1] == '%') memcpy(num, text, n - 1);
    double v = pb_parse_decimal_problem(num, 1) ? NAN : strtod(num, NULL);
    if (!(v >= 0 && v < 100))
        return pb_error_usage("--margin", "'%s' is not a percentage; expected a number from 0 to 99 followed by %%, e.g. 10%%",
                              text);
    *out = v / 100;
    return PB_OK;
}

/* acceptance --derive RUN: the rules written to `output` (stdout when NULL), whole or not at all. */
static int derive(const char *run, const char *margin_text, const char *output)
{
    double margin = 0.10;
    if (margin_text) PB_TRY(parse_margin(margin_text, &margin));
    struct stat st;
    if (stat(run, &st) != 0 || !S_ISDIR(st.st_mode))
        return pb_error_usage("--derive", "'%s' is not a directory; give a run_all.sh results directory", run);
    PB_TRY(pb_outpath_add_input_dir("--derive", run, pb_thresholds_run_reads)); /* a run's folder; -o is none of its files */
    return pb_thresholds_derive_file_write(run, margin, output);
}

static const char *option_name(int c)
{
    switch (c) {
    case 't': return "-t/--thresholds";
    case 'r': return "-r/--results";
    case 'j': return "--junit";
    case 'k': return "--check";
    case 'd': return "--derive";
    case 'm': return "--margin";
    case 'o': return "-o/--output";
    case 'q': return "--quiet";
    case 'h': return "-h/--help";
    case 'V': return "--version";
    default: {
        static char name[8];
        snprintf(name, sizeof name, isprint(c) ? "-%c" : "-?", c);
        return name;
    }
    }
}

int main(int argc, char **argv)
{
    pb_error_set_progname(argv[0]);
    static const struct option opts[] = {{"thresholds", required_argument, NULL, 't'}, {"results", required_argument, NULL, 'r'},
                                         {"junit", required_argument, NULL, 'j'},      {"check", required_argument, NULL, 'k'},
                                         {"quiet", no_argument, NULL, 'q'},            {"help", no_argument, NULL, 'h'},
                                         {"version", no_argument, NULL, 'V'},          {"derive", required_argument, NULL, 'd'},
                                         {"margin", required_argument, NULL, 'm'},     {"output", required_argument, NULL, 'o'},
                                         {NULL, 0, NULL, 0}};
    const char *tfile = NULL, *dir = NULL, *junit = NULL, *check = NULL, *run = NULL, *margin = NULL, *output = NULL;
    int c;
    opterr = 0; /* one message of ours, naming the option, instead of getopt's and ours */
    unsigned char seen[128] = {0};
    while ((c = getopt_long(argc, argv, ":t:r:o:h", opts, NULL)) != -1) {
        if (c > 0 && c != '?' && c != ':') {
            int st = pb_options_once(opts, seen, sizeof seen, c);
            if (st != PB_OK) return st;
        }
        if (c == 't') tfile = optarg;
        else if (c == 'r') dir = optarg;
        else if (c == 'j') {
            junit = optarg;
            int st = pb_outpath_add("--junit", optarg); /* not a directory, not another output */
            if (st != PB_OK) return st;
        }
        else if (c == 'k') check = optarg;
        else if (c == 'd') run = optarg;
        else if (c == 'm') margin = optarg;
        else if (c == 'o') {
            output = optarg;
            int st = pb_outpath_add("-o/--output", optarg); /* not a directory, not a file of a run */
            if (st != PB_OK) return st;
        }
        else if (c == 'q') (void)0;
        else if (c == 'h') return usage_text(), PB_OK;
        else if (c == 'V') return printf("%s\n", pb_version_string()), PB_OK;
        else if (c == ':') return pb_error_usage(option_name(optopt), "needs a value; see --help");
        else if (optopt == 'q' || optopt == 'h' || optopt == 'V') return pb_error_usage(option_name(optopt), "takes no value");
        else if (optopt) return pb_error_usage(option_name(optopt), "unknown option; see --help");
        else return pb_error_usage(argv[optind - 1], "unknown option; see --help");
    }
    if (optind < argc) return pb_error_usage(argv[optind], "unexpected argument; see --help");
    if (run && (tfile || dir || junit || check))
        return pb_error_usage("--derive", "writes a threshold file; it takes no --thresholds, --results, --junit or --check");
    if (!run && (margin || output))
        return pb_error_usage(margin ? "--margin" : "-o/--output", "goes with --derive RUN; see --help");
    if (run) return derive(run, margin, output);
    /* The parser reports FILE:LINE itself; silence the size parser's own message. */
    pb_error_set_quiet_usage(1);
    pb_thresholds_set set;
    if (check) {
        PB_TRY(load_rules("--check", check, &set));
        printf("%s: %d rules, valid\n", check, set.n);
        pb_thresholds_free(&set);
        return PB_OK;
    }
    pb_error_set_quiet_usage(0);
    if (!tfile) return pb_error_usage("--thresholds", "missing; give the threshold file (see docs/acceptance.md)");
    struct stat st;
    if (!dir || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return pb_error_usage("--results", "'%s' is not a directory; give a run_all.sh results directory", dir ? dir : "");
    pb_error_set_quiet_usage(1);
    PB_TRY(load_rules("-t/--thresholds", tfile, &set));
    int in = register_inputs(tfile, dir);
    if (in != PB_OK) return pb_thresholds_free(&set), in;
    pb_thresholds_eval_outcome *o = calloc((size_t)set.n, sizeof *o);
    if (!o) return pb_thresholds_free(&set), pb_fail(PB_ERR_ENV, "out of memory");
    for (int i = 0; i < set.n; i++) o[i] = pb_thresholds_run_judge(&set.rules[i], dir, NULL, 0);
    int counts[3] = {0, 0, 0};
    print_table(&set, o, counts);
    pb_error_set_quiet_usage(0);
    int rc = junit ? pb_thresholds_junit_write(junit, tfile, &set, o, counts) : PB_OK;
    free(o);
    pb_thresholds_free(&set);
    if (rc != PB_OK) return rc;
    return counts[PB_TH_FAIL] ? PB_ERR_CHECK : PB_OK;
}
