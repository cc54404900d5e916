/* acceptance: evaluate a threshold file (docs/acceptance.md) against a results
 * directory written by run_all.sh, print a PASS/FAIL table, optionally write
 * a JUnit XML file for CI. Needs no MPI: it only reads CSV files. Each rule
 * is judged on the files read by plan/thresholds_eval.c. With --derive RUN it
 * writes a threshold file from a golden run instead: one rule per headline
 * figure (plan/thresholds_derive.h), each judged on RUN as a check would
 * judge it, its threshold the measured value less a margin.
 *
 * Exit: 0 every rule passed (or was skipped), 1 a rule failed (or read a
 * result it cannot trust: a file cut short, a garbled row, a value that is
 * not a finite number; the reason names FILE:LINE), 2 usage error or bad
 * threshold file (the message names FILE:LINE), 3 the JUnit file cannot be
 * written. */
#include "core/csv.h"
#include "core/atomic.h"
#include "core/error.h"
#include "core/input.h"
#include "core/options.h"
#include "core/escape.h"
#include "core/grow.h"
#include "core/outpath.h"
#include "core/parse.h"
#include "core/version.h"
#include "plan/result_notes.h"
#include "plan/thresholds_derive.h"
#include "plan/thresholds_eval.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char *const verdict_names[] = {"PASS", "FAIL", "SKIP"}; /* by enum pb_th_verdict */

typedef pb_thresholds_eval_outcome outcome;

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

/* "<source>*.csv" in dir, matched literally (never a glob: the directory may
 * hold *, ? or [ in its name), sorted; NULL-terminated, malloc'ed. */
static int source_file(const char *name, const char *source)
{
    size_t n = strlen(name), k = strlen(source);
    return n >= k + 4 && strncmp(name, source, k) == 0 && strcmp(name + n - 4, ".csv") == 0;
}

/* Whether a rule may read `name` of the results directory: some metric's
 * "<source>*.csv". The output registry refuses --junit there. */
static int reads_result(const char *name)
{
    const pb_thresholds_metric *m = pb_thresholds_metrics();
    for (int i = 0; m[i].name; i++)
        if (source_file(name, m[i].source)) return 1;
    return 0;
}

/* The threshold file and the results read, so that --junit overwrites neither. */
static int register_inputs(const char *tfile, const char *dir)
{
    pb_error_set_quiet_usage(0);
    int st = pb_outpath_add_input("-t/--thresholds", tfile);
    if (st == PB_OK) st = pb_outpath_add_input_dir("-r/--results", dir, reads_result);
    pb_error_set_quiet_usage(1);
    return st;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static char **list_sources(const char *dir, const char *source, int *n, outcome *o)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        pb_thresholds_eval_distrust(o, "cannot read the results directory %s: %s", dir, strerror(errno));
        return NULL;
    }
    char **names = NULL;
    int cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!source_file(e->d_name, source)) continue;
        char **g = pb_grow(names, &cap, *n + 1, sizeof *g, 8);
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        char *path = g ? malloc(len) : NULL;
        if (g) names = g;
        if (!path) {
            pb_thresholds_eval_distrust(o, "out of memory listing %s", dir);
            break;
        }
        snprintf(path, len, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
            free(path);
            continue;
        }
        names[(*n)++] = path;
        names[*n] = NULL;
    }
    closedir(d);
    if (*n) qsort(names, (size_t)*n, sizeof *names, by_name);
    return names;
}

/* Read each of the n files with the metric's column; one cut short, garbled
 * or unreadable makes the rule untrusted (it still reads the rest, for the
 * table). Files without the column are another benchmark's shape: skipped.
 * The tables name their file by paths[i], which the caller frees. */
static pb_thresholds_eval_table *load_tables(const pb_thresholds_rule *r, char **paths, int n, int *ntab, outcome *o)
{
    pb_thresholds_eval_table *tabs = calloc((size_t)(n ? n : 1), sizeof *tabs);
    *ntab = 0;
    for (int i = 0; i < n; i++) {
        pb_thresholds_eval_table *tb = &tabs[*ntab];
        int st = tabs ? pb_csv_read(paths[i], &tb->csv) : PB_ERR_ENV;
        if (st == PB_ERR_ENV)
            pb_thresholds_eval_distrust(o, "cannot read %s: %s", paths[i], tabs ? strerror(errno) : "out of memory");
        else if (st != PB_OK && tb->csv.bad_line)
            pb_thresholds_eval_distrust(o, "%s:%d: garbled: %s", paths[i], tb->csv.bad_line, tb->csv.bad_why);
        else if (st != PB_OK)
            pb_thresholds_eval_distrust(o, "%s:1: no header line (the file is empty or was cut short)", paths[i]);
        if (st != PB_OK || pb_csv_col(&tb->csv, r->metric->column) < 0) {
            if (st == PB_OK) pb_csv_free(&tb->csv);
            continue;
        }
        if (tb->csv.bad_line)
            pb_thresholds_eval_distrust(o, "%s:%d: garbled row: %s", paths[i], tb->csv.bad_line, tb->csv.bad_why);
        else if (!tb->csv.complete)
            pb_thresholds_eval_distrust(o, "%s:%d: incomplete: no '# complete' line (the run was cut short)", paths[i],
                                        tb->csv.nlines);
        tb->path = paths[i];
        if (pb_result_notes_read(paths[i], r->metric->source, &tb->notes) != PB_OK)
            pb_thresholds_eval_distrust(o, "out of memory reading %s", paths[i]);
        (*ntab)++;
    }
    return tabs;
}

/* The files of the rule's benchmark in dir, read, then judged (plan/thresholds_eval.h);
 * with `from`, the file the measured value came from ("" when none). */
static outcome evaluate_from(const pb_thresholds_rule *r, const char *dir, char *from, size_t len)
{
    outcome o;
    pb_thresholds_eval_start(&o);
    int n = 0, ntab = 0;
    char **paths = list_sources(dir, r->metric->source, &n, &o);
    pb_thresholds_eval_table *tabs = load_tables(r, paths, n, &ntab, &o);
    pb_thresholds_eval(r, tabs, ntab, &o);
    if (from) snprintf(from, len, "%s", o.from_table >= 0 ? tabs[o.from_table].path : "");
    for (int i = 0; i < ntab; i++) pb_csv_free(&tabs[i].csv), pb_result_notes_free(&tabs[i].notes);
    for (int i = 0; i < n; i++) free(paths[i]);
    free(paths);
    free(tabs);
    return o;
}

static outcome evaluate(const pb_thresholds_rule *r, const char *dir) { return evaluate_from(r, dir, NULL, 0); }

static void fmt_value(const pb_thresholds_rule *r, double v, char *buf, size_t len)
{
    if (isnan(v)) snprintf(buf, len, "-");
    else if (r->metric->unit[0]) snprintf(buf, len, "%.4g %s", v, r->metric->unit);
    else snprintf(buf, len, "%.3f", v);
}

static void print_table(const pb_thresholds_set *set, const outcome *o, int counts[3])
{
    printf("%5s  %-58s %14s %16s  %s\n", "line", "rule", "measured", "threshold", "result");
    for (int i = 0; i < set->n; i++) {
        const pb_thresholds_rule *r = &set->rules[i];
        char meas[32], thr[40], val[32];
        fmt_value(r, o[i].measured, meas, sizeof meas);
        fmt_value(r, r->value, val, sizeof val);
        snprintf(thr, sizeof thr, "%s %s", r->op == PB_TH_GE ? ">=" : "<=", val);
        printf("%5d  %-58.58s %14s %16s  %s%s%s\n", r->line, r->source_text, meas, thr, verdict_names[o[i].v],
               o[i].why[0] ? "  " : "", o[i].v == PB_TH_PASS ? "" : o[i].why);
        counts[o[i].v]++;
    }
    printf("acceptance: %d passed, %d failed, %d skipped of %d rules: %s\n", counts[PB_TH_PASS], counts[PB_TH_FAIL],
           counts[PB_TH_SKIP], set->n, counts[PB_TH_FAIL] ? "FAIL" : "PASS");
}

/* Rules, paths and reasons may hold any bytes: core/escape keeps the XML well-formed. */
/* 0, or -1 when memory ran out escaping s (nothing written): the file is then not committed. */
static int xml_escaped(FILE *f, const char *s) { return pb_escape_fputs(f, pb_escape_xml, s); }

/* An unwritable --junit is the environment's fault (exit 3), not usage. */
static int junit_failed(const char *path)
{
    int err = errno;
    fprintf(stderr, "acceptance: --junit: cannot write '%s': %s\n", path, strerror(err));
    return PB_ERR_ENV;
}

/* JUnit XML: one testcase per rule; the format Jenkins and GitLab read. */
static int write_junit(const char *path, const char *tfile, const pb_thresholds_set *set, const outcome *o, const int counts[3])
{
    char tmp[4096];
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return errno = EISDIR, junit_failed(path);
    FILE *f = pb_atomic_open(path, tmp, sizeof tmp);
    if (!f) return PB_ERR_ENV;
    char stamp[32];
    time_t now = time(NULL);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", gmtime(&now));
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"parabench acceptance\" tests=\"%d\" "
               "failures=\"%d\" skipped=\"%d\">\n  <testsuite name=\"", set->n, counts[PB_TH_FAIL], counts[PB_TH_SKIP]);
    int escaped = xml_escaped(f, tfile) == 0;
    fprintf(f, "\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\" timestamp=\"%s\">\n", set->n,
            counts[PB_TH_FAIL], counts[PB_TH_SKIP], stamp);
    for (int i = 0; i < set->n; i++) {
        const pb_thresholds_rule *r = &set->rules[i];
        char meas[32];
        fmt_value(r, o[i].measured, meas, sizeof meas);
        fprintf(f, "    <testcase classname=\"parabench.acceptance.%s\" name=\"line %d: ", r->metric->name, r->line);
        escaped = escaped && xml_escaped(f, r->source_text) == 0;
        fprintf(f, "\" time=\"0\">\n      <system-out>measured: %s (%d rows)</system-out>\n", meas, o[i].rows);
        if (o[i].v != PB_TH_PASS) {
            fprintf(f, "      <%s message=\"", o[i].v == PB_TH_FAIL ? "failure" : "skipped");
            escaped = escaped && xml_escaped(f, o[i].why) == 0;
            fprintf(f, o[i].v == PB_TH_FAIL ? "\" type=\"threshold\"/>\n" : "\"/>\n");
        }
        fprintf(f, "    </testcase>\n");
    }
    fprintf(f, "  </testsuite>\n</testsuites>\n");
    if (!escaped) {
        pb_atomic_commit(f, tmp, path, 0);
        return pb_fail(PB_ERR_ENV, "--junit: out of memory escaping the XML; '%s' not written", path);
    }
    return pb_atomic_commit(f, tmp, path, !ferror(f));
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

/* ---- --derive: a threshold file from a golden run ---- */

/* When `path` was measured: its "# date: " line (the benchmark's header), else the file's time. */
static void measured_date(const char *path, char *buf, size_t len)
{
    snprintf(buf, len, "date unknown");
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    int found = 0;
    for (int i = 0; f && !found && i < 100 && getline(&line, &cap, f) > 0 && line[0] == '#'; i++)
        if (strncmp(line, "# date: ", 8) == 0) {
            line[strcspn(line, "\r\n")] = '\0';
            snprintf(buf, len, "%.40s", line + 8);
            found = 1;
        }
    free(line);
    if (f) fclose(f);
    struct stat st;
    if (!found && stat(path, &st) == 0) strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ (file time)", gmtime(&st.st_mtime));
    for (char *p = buf; *p; p++)
        if (!isprint((unsigned char)*p)) *p = '?';
}

typedef struct derivation {
    const char *run;
    char *shown_run; /* the run's path made one comment line */
    double margin;
    FILE *f;
    int rules, untrusted;
} derivation;

/* One proposed rule judged on the run as a check would judge it: a rule at the measured value less
 * the margin, or a comment saying why the run cannot give one. */
static void derive_rule(derivation *d, const pb_thresholds_derive_headline *h, const char *text)
{
    char line[PB_TH_LINE_MAX + 8], err[512], from[4096], date[64];
    const char *op = h->op == PB_TH_GE ? ">=" : "<=";
    snprintf(line, sizeof line, "%s %s 0", text, op);
    pb_thresholds_set set;
    if (pb_thresholds_parse("derived", line, strlen(line), &set, err, sizeof err) != PB_OK) {
        fprintf(d->f, "# untrustworthy, no rule: %.200s: cannot be written as a rule (%.300s)\n", text, err);
        d->untrusted++;
        return;
    }
    pb_thresholds_rule *r = &set.rules[0];
    r->value = h->op == PB_TH_GE ? -INFINITY : INFINITY; /* judged for its value and its trust only */
    outcome o = evaluate_from(r, d->run, from, sizeof from);
    if (o.v != PB_TH_PASS || isnan(o.measured)) {
        char *why = pb_escape_csv_comment(o.why);
        fprintf(d->f, "# untrustworthy, no rule: %.200s: %.500s\n", text, why ? why : "");
        free(why);
        d->untrusted++;
    } else {
        const char *unit = r->metric->unit, *sep = unit[0] ? " " : "";
        double thr = pb_thresholds_derive_threshold(h->op, o.measured, d->margin);
        measured_date(from, date, sizeof date);
        char rule[PB_TH_LINE_MAX];
        snprintf(rule, sizeof rule, "%s %s %.4g%s%s", text, op, thr, sep, unit);
        fprintf(d->f, "%-64s # measured %.6g%s%s in %.300s, %s\n", rule, o.measured, sep, unit, d->shown_run, date);
        d->rules++;
    }
    pb_thresholds_free(&set);
}

/* Every rule headline h proposes for the run's tables of its metric. */
static int derive_headline(derivation *d, const pb_thresholds_derive_headline *h)
{
    pb_thresholds_rule probe = {0};
    for (const pb_thresholds_metric *m = pb_thresholds_metrics(); m->name; m++)
        if (strcmp(m->name, h->metric) == 0) probe.metric = m;
    if (!probe.metric) return PB_OK;
    outcome o;
    pb_thresholds_eval_start(&o);
    int n = 0, ntab = 0, nt = 0;
    char **paths = list_sources(d->run, probe.metric->source, &n, &o), **texts = NULL;
    pb_thresholds_eval_table *tabs = load_tables(&probe, paths, n, &ntab, &o);
    int st = tabs ? pb_thresholds_derive_propose(h, tabs, ntab, &texts, &nt) : PB_ERR_ENV;
    for (int i = 0; i < ntab; i++) pb_csv_free(&tabs[i].csv), pb_result_notes_free(&tabs[i].notes);
    for (int i = 0; i < n; i++) free(paths[i]);
    free(paths);
    free(tabs);
    if (st != PB_OK) return pb_fail(PB_ERR_ENV, "out of memory deriving %s rules", h->metric);
    for (int i = 0; i < nt; i++) derive_rule(d, h, texts[i]);
    pb_thresholds_derive_free(texts, nt);
    return PB_OK;
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
    PB_TRY(pb_outpath_add_input_dir("--derive", run, reads_result)); /* a run's folder; -o is none of its files */
    char *text = NULL;
    size_t len = 0;
    derivation d = {run, pb_escape_csv_comment(run), margin, open_memstream(&text, &len), 0, 0};
    if (!d.f || !d.shown_run) return free(d.shown_run), pb_fail(PB_ERR_ENV, "out of memory");
    fprintf(d.f, "# Thresholds derived by acceptance --derive from the run %.300s (docs/acceptance.md):\n"
                 "# each headline figure it measured, less %g%% for a rate, plus %g%% for a time or a share of one.\n"
                 "# Check another run:  acceptance --thresholds THIS_FILE --results RUN\n\n",
            d.shown_run, 100 * margin, 100 * margin);
    int rc = PB_OK;
    for (const pb_thresholds_derive_headline *h = pb_thresholds_derive_headlines(); rc == PB_OK && h->metric; h++)
        rc = derive_headline(&d, h);
    fclose(d.f);
    free(d.shown_run);
    pb_thresholds_set check = {0};
    char err[512];
    if (rc == PB_OK && d.rules == 0)
        rc = pb_fail(PB_ERR_ENV, "--derive: %s holds no trustworthy headline figure (%d untrustworthy); nothing written",
                     run, d.untrusted);
    else if (rc == PB_OK && pb_thresholds_parse("derived", text, len, &check, err, sizeof err) != PB_OK)
        rc = pb_fail(PB_ERR_ENV, "--derive: the derived file does not parse (%s); nothing written", err);
    pb_thresholds_free(&check);
    if (rc == PB_OK && output) {
        char tmp[4096];
        FILE *f = pb_atomic_open(output, tmp, sizeof tmp);
        rc = f ? pb_atomic_commit(f, tmp, output, fwrite(text, 1, len, f) == len) : PB_ERR_ENV;
    } else if (rc == PB_OK) {
        fwrite(text, 1, len, stdout);
    }
    free(text);
    if (rc == PB_OK)
        fprintf(stderr, "acceptance: %d rules derived from %s with a %g%% margin, %d untrustworthy figures left as comments%s%s\n",
                d.rules, run, 100 * margin, d.untrusted, output ? "; written to " : "", output ? output : "");
    return rc;
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
    outcome *o = calloc((size_t)set.n, sizeof *o);
    if (!o) return pb_thresholds_free(&set), pb_fail(PB_ERR_ENV, "out of memory");
    for (int i = 0; i < set.n; i++) o[i] = evaluate(&set.rules[i], dir);
    int counts[3] = {0, 0, 0};
    print_table(&set, o, counts);
    pb_error_set_quiet_usage(0);
    int rc = junit ? write_junit(junit, tfile, &set, o, counts) : PB_OK;
    free(o);
    pb_thresholds_free(&set);
    if (rc != PB_OK) return rc;
    return counts[PB_TH_FAIL] ? PB_ERR_CHECK : PB_OK;
}
