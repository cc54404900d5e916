/* acceptance --derive's output (plan/thresholds_derive_file.h). */
#include "plan/thresholds_derive_file.h"

#include "core/atomic.h"
#include "core/error.h"
#include "core/escape.h"
#include "plan/thresholds_derive.h"
#include "plan/thresholds_run.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

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
    pb_thresholds_eval_outcome o = pb_thresholds_run_judge(r, d->run, from, sizeof from);
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
    const pb_thresholds_metric *metric = NULL;
    for (const pb_thresholds_metric *m = pb_thresholds_metrics(); m->name; m++)
        if (strcmp(m->name, h->metric) == 0) metric = m;
    if (!metric) return PB_OK;
    pb_thresholds_eval_outcome o;
    pb_thresholds_eval_start(&o);
    pb_thresholds_run t;
    pb_thresholds_run_load(&t, metric, d->run, &o);
    char **texts = NULL;
    int nt = 0;
    int st = t.tabs ? pb_thresholds_derive_propose(h, t.tabs, t.ntab, &texts, &nt) : PB_ERR_ENV;
    pb_thresholds_run_free(&t);
    if (st != PB_OK) return pb_fail(PB_ERR_ENV, "out of memory deriving %s rules", h->metric);
    for (int i = 0; i < nt; i++) derive_rule(d, h, texts[i]);
    pb_thresholds_derive_free(texts, nt);
    return PB_OK;
}

/* The file's text, every headline's rules, in `*text` (malloc'ed); PB_OK or PB_ERR_ENV. */
static int derive_text(derivation *d, char **text, size_t *len)
{
    d->f = open_memstream(text, len);
    if (!d->f) return pb_fail(PB_ERR_ENV, "out of memory");
    fprintf(d->f, "# Thresholds derived by acceptance --derive from the run %.300s (docs/acceptance.md):\n"
                  "# each headline figure it measured, less %g%% for a rate, plus %g%% for a time or a share of one.\n"
                  "# Check another run:  acceptance --thresholds THIS_FILE --results RUN\n\n",
            d->shown_run, 100 * d->margin, 100 * d->margin);
    int rc = PB_OK;
    for (const pb_thresholds_derive_headline *h = pb_thresholds_derive_headlines(); rc == PB_OK && h->metric; h++)
        rc = derive_headline(d, h);
    fclose(d->f);
    if (rc != PB_OK) return rc;
    if (d->rules == 0)
        return pb_fail(PB_ERR_ENV, "--derive: %s holds no trustworthy headline figure (%d untrustworthy); nothing written",
                       d->run, d->untrusted);
    pb_thresholds_set check = {0};
    char err[512];
    if (pb_thresholds_parse("derived", *text, *len, &check, err, sizeof err) != PB_OK)
        rc = pb_fail(PB_ERR_ENV, "--derive: the derived file does not parse (%s); nothing written", err);
    pb_thresholds_free(&check);
    return rc;
}

int pb_thresholds_derive_file_write(const char *run, double margin, const char *output)
{
    derivation d = {run, pb_escape_csv_comment(run), margin, NULL, 0, 0};
    if (!d.shown_run) return pb_fail(PB_ERR_ENV, "out of memory");
    char *text = NULL;
    size_t len = 0;
    int rc = derive_text(&d, &text, &len);
    free(d.shown_run);
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
