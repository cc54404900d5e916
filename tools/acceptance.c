/* acceptance: evaluate a threshold file (docs/acceptance.md) against a results
 * directory written by run_all.sh, print a PASS/FAIL table, optionally write
 * a JUnit XML file for CI. Needs no MPI: it only reads CSV files.
 *
 * Exit: 0 every rule passed (or was skipped), 1 a rule failed, 2 usage error
 * or bad threshold file (the message names FILE:LINE). */
#include "core/csv.h"
#include "core/error.h"
#include "core/outpath.h"
#include "plan/thresholds.h"

#include <getopt.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

enum verdict { V_PASS, V_FAIL, V_SKIP };
static const char *const verdict_names[] = {"PASS", "FAIL", "SKIP"};

typedef struct outcome {
    enum verdict v;
    double measured;   /* worst matching value, NAN when none */
    int rows;          /* rows evaluated */
    char why[200];     /* for FAIL and SKIP */
} outcome;

static void usage_text(void)
{
    printf("Usage: acceptance --thresholds FILE --results DIR [--junit FILE] [--quiet]\n"
           "       acceptance --check FILE        (parse the threshold file only)\n"
           "Evaluate acceptance thresholds against the CSV files of a run_all.sh results directory.\n"
           "Each rule takes the worst matching row; exit 0 all pass, 1 any fails, 2 bad input.\n\nMetrics:\n");
    for (const pb_thresholds_metric *m = pb_thresholds_metrics(); m->name; m++)
        printf("  %-17s %-5s %s (%s*.csv)\n", m->name, m->unit[0] ? m->unit : "frac", m->description, m->source);
    printf("\nKeys: coll=NAME size=SIZE link=intra|inter|mixed mode=... (overlap/schedule/benchmark) m=N stages=N hidden=N\n"
           "Format and examples: docs/acceptance.md, acceptance/*.thresholds\n");
}

static int read_file(const char *path, char **text, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return pb_error_usage("--thresholds", "cannot open '%s'", path);
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

/* Does row r satisfy the rule's selectors other than size? */
static int row_selected(const pb_thresholds_rule *r, const pb_csv *t, int row)
{
    const pb_thresholds_metric *m = r->metric;
    if (m->row_filter) {
        const char *eq = strchr(m->row_filter, '=');
        char col[32];
        snprintf(col, sizeof col, "%.*s", (int)(eq - m->row_filter), m->row_filter);
        if (strcmp(pb_csv_get(t, row, col), eq + 1) != 0) return 0;
    }
    for (int k = 0; k < PB_TH_NKEYS; k++) {
        if (!(r->keys & (1u << k)) || k == PB_TH_KEY_SIZE) continue;
        if (k == PB_TH_KEY_M || k == PB_TH_KEY_STAGES || k == PB_TH_KEY_HIDDEN) {
            double v;
            if (pb_csv_num(t, row, m->key_column[k], &v) != PB_OK || v != (double)r->num[k]) return 0;
        } else if (strcmp(pb_csv_get(t, row, m->key_column[k]), r->text[k]) != 0) {
            return 0;
        }
    }
    return 1;
}

/* The size measured closest to the rule's (log distance), within a factor of 2:
 * coll_sweep rounds counts to the rank count, so "64M" may be 64M - 8 bytes. */
static double nearest_size(const pb_thresholds_rule *r, pb_csv *const *tabs, int ntab)
{
    double best = NAN, dist = INFINITY;
    const char *col = r->metric->key_column[PB_TH_KEY_SIZE];
    for (int i = 0; i < ntab; i++)
        for (int row = 0; row < tabs[i]->nrows; row++) {
            double b;
            if (!row_selected(r, tabs[i], row) || pb_csv_num(tabs[i], row, col, &b) != PB_OK || b <= 0) continue;
            double d = fabs(log2(b / (double)r->size));
            if (d < dist) dist = d, best = b;
        }
    return dist <= 1.0 ? best : NAN;
}

static int link_present(const pb_thresholds_rule *r, pb_csv *const *tabs, int ntab)
{
    for (int i = 0; i < ntab; i++)
        for (int row = 0; row < tabs[i]->nrows; row++)
            if (strcmp(pb_csv_get(tabs[i], row, "link_class"), r->text[PB_TH_KEY_LINK]) == 0) return 1;
    return 0;
}

/* Fold every selected row into the worst value; a row with wrong data fails the rule. */
static void fold_rows(const pb_thresholds_rule *r, pb_csv *const *tabs, int ntab, double size, outcome *o)
{
    const pb_thresholds_metric *m = r->metric;
    for (int i = 0; i < ntab; i++)
        for (int row = 0; row < tabs[i]->nrows; row++) {
            double v, d = 1, b, wrong;
            if (!row_selected(r, tabs[i], row)) continue;
            if ((r->keys & (1u << PB_TH_KEY_SIZE)) &&
                (pb_csv_num(tabs[i], row, m->key_column[PB_TH_KEY_SIZE], &b) != PB_OK || b != size))
                continue;
            if (pb_csv_num(tabs[i], row, m->column, &v) != PB_OK) continue;
            if (m->divisor && (pb_csv_num(tabs[i], row, m->divisor, &d) != PB_OK || d == 0)) continue;
            v = m->absolute ? fabs(v / d) : v / d;
            if (pb_csv_num(tabs[i], row, "wrong", &wrong) == PB_OK && wrong > 0 && o->v != V_FAIL) {
                o->v = V_FAIL;
                snprintf(o->why, sizeof o->why, "%g wrong values in a matching row", wrong);
            }
            int worse = isnan(o->measured) || (r->op == PB_TH_GE ? v < o->measured : v > o->measured);
            if (worse) o->measured = v;
            o->rows++;
        }
}

static outcome evaluate(const pb_thresholds_rule *r, const char *dir)
{
    outcome o = {V_PASS, NAN, 0, ""};
    char pattern[4096];
    snprintf(pattern, sizeof pattern, "%s/%s*.csv", dir, r->metric->source);
    glob_t g;
    pb_csv *tabs[16];
    int ntab = 0;
    if (glob(pattern, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc && ntab < 16; i++) {
            pb_csv *t = calloc(1, sizeof *t);
            if (t && pb_csv_read(g.gl_pathv[i], t) == PB_OK && pb_csv_col(t, r->metric->column) >= 0) tabs[ntab++] = t;
            else if (t) pb_csv_free(t), free(t);
        }
        globfree(&g);
    }
    if (ntab == 0) {
        o.v = V_FAIL;
        snprintf(o.why, sizeof o.why, "no %s*.csv with a %s column (benchmark not run?)", r->metric->source, r->metric->column);
        return o;
    }
    double size = NAN;
    if (r->keys & (1u << PB_TH_KEY_SIZE)) size = nearest_size(r, tabs, ntab);
    if (!(r->keys & (1u << PB_TH_KEY_SIZE)) || !isnan(size)) fold_rows(r, tabs, ntab, size, &o);
    if (o.rows == 0) {
        int nolink = (r->keys & (1u << PB_TH_KEY_LINK)) && !link_present(r, tabs, ntab);
        o.v = nolink ? V_SKIP : V_FAIL;
        if (nolink) snprintf(o.why, sizeof o.why, "this run has no %s rows", r->text[PB_TH_KEY_LINK]);
        else snprintf(o.why, sizeof o.why, "no matching rows in %s*.csv", r->metric->source);
    } else if (o.v == V_PASS && !pb_thresholds_passes(r, o.measured)) {
        o.v = V_FAIL;
        snprintf(o.why, sizeof o.why, "measured %.4g, required %s %.4g%s%s", o.measured, r->op == PB_TH_GE ? ">=" : "<=",
                 r->value, r->metric->unit[0] ? " " : "", r->metric->unit);
    }
    for (int i = 0; i < ntab; i++) pb_csv_free(tabs[i]), free(tabs[i]);
    return o;
}

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
               o[i].why[0] ? "  " : "", o[i].v == V_PASS ? "" : o[i].why);
        counts[o[i].v]++;
    }
    printf("acceptance: %d passed, %d failed, %d skipped of %d rules: %s\n", counts[V_PASS], counts[V_FAIL],
           counts[V_SKIP], set->n, counts[V_FAIL] ? "FAIL" : "PASS");
}

static void xml_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t') fputc(*s, f);
        }
    }
}

/* JUnit XML: one testcase per rule; the format Jenkins and GitLab read. */
static int write_junit(const char *path, const char *tfile, const pb_thresholds_set *set, const outcome *o, const int counts[3])
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return pb_error_usage("--junit", "cannot write '%s'", path);
    char stamp[32];
    time_t now = time(NULL);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", gmtime(&now));
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"parabench acceptance\" tests=\"%d\" "
               "failures=\"%d\" skipped=\"%d\">\n  <testsuite name=\"", set->n, counts[V_FAIL], counts[V_SKIP]);
    xml_escaped(f, tfile);
    fprintf(f, "\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\" timestamp=\"%s\">\n", set->n,
            counts[V_FAIL], counts[V_SKIP], stamp);
    for (int i = 0; i < set->n; i++) {
        const pb_thresholds_rule *r = &set->rules[i];
        char meas[32];
        fmt_value(r, o[i].measured, meas, sizeof meas);
        fprintf(f, "    <testcase classname=\"parabench.acceptance.%s\" name=\"line %d: ", r->metric->name, r->line);
        xml_escaped(f, r->source_text);
        fprintf(f, "\" time=\"0\">\n      <system-out>measured: %s (%d rows)</system-out>\n", meas, o[i].rows);
        if (o[i].v != V_PASS) {
            fprintf(f, "      <%s message=\"", o[i].v == V_FAIL ? "failure" : "skipped");
            xml_escaped(f, o[i].why);
            fprintf(f, o[i].v == V_FAIL ? "\" type=\"threshold\"/>\n" : "\"/>\n");
        }
        fprintf(f, "    </testcase>\n");
    }
    fprintf(f, "  </testsuite>\n</testsuites>\n");
    if (fclose(f) != 0 || rename(tmp, path) != 0) return pb_error_usage("--junit", "cannot write '%s'", path);
    return PB_OK;
}

static int load_rules(const char *path, pb_thresholds_set *set)
{
    char *text = NULL;
    size_t len = 0;
    PB_TRY(read_file(path, &text, &len));
    char err[512];
    int rc = pb_thresholds_parse(path, text, len, set, err, sizeof err);
    free(text);
    if (rc != PB_OK) fprintf(stderr, "acceptance: %s\n", err);
    return rc;
}

int main(int argc, char **argv)
{
    pb_error_set_progname(argv[0]);
    static const struct option opts[] = {{"thresholds", required_argument, NULL, 't'}, {"results", required_argument, NULL, 'r'},
                                         {"junit", required_argument, NULL, 'j'},      {"check", required_argument, NULL, 'k'},
                                         {"quiet", no_argument, NULL, 'q'},            {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *tfile = NULL, *dir = NULL, *junit = NULL, *check = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "t:r:h", opts, NULL)) != -1) {
        if (c == 't') tfile = optarg;
        else if (c == 'r') dir = optarg;
        else if (c == 'j') {
            junit = optarg;
            int st = pb_outpath_add("--junit", optarg); /* not a directory, not another output */
            if (st != PB_OK) return st;
        }
        else if (c == 'k') check = optarg;
        else if (c == 'q') (void)0;
        else if (c == 'h') return usage_text(), PB_OK;
        else return pb_error_usage("(command line)", "unknown option; see --help");
    }
    if (optind < argc) return pb_error_usage(argv[optind], "unexpected argument; see --help");
    /* The parser reports FILE:LINE itself; silence the size parser's own message. */
    pb_error_set_quiet_usage(1);
    pb_thresholds_set set;
    if (check) {
        PB_TRY(load_rules(check, &set));
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
    PB_TRY(load_rules(tfile, &set));
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
    return counts[V_FAIL] ? PB_ERR_CHECK : PB_OK;
}
