/* Judging one acceptance rule against result tables already read (see
 * thresholds_eval.h); moved out of the acceptance tool so that it can be
 * tested on tables built in memory. */
#include "plan/thresholds_eval.h"

#include "core/error.h"
#include "core/escape.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pb_thresholds_eval_start(pb_thresholds_eval_outcome *o)
{
    *o = (pb_thresholds_eval_outcome){PB_TH_PASS, NAN, -1, -1, 0, 0, 0, "", ""};
}

void pb_thresholds_eval_distrust(pb_thresholds_eval_outcome *o, const char *fmt, ...)
{
    if (o->untrusted) return;
    o->untrusted = 1;
    o->v = PB_TH_FAIL;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->why, sizeof o->why, fmt, ap);
    va_end(ap);
}

static int numeric_key(int k)
{
    return k == PB_TH_KEY_M || k == PB_TH_KEY_STAGES || k == PB_TH_KEY_HIDDEN;
}

/* Does row r match the rule's text selectors (coll, link, mode, the metric's row filter)? */
static int text_selected(const pb_thresholds_rule *r, const pb_csv *t, int row)
{
    const pb_thresholds_metric *m = r->metric;
    if (m->row_filter) {
        const char *eq = strchr(m->row_filter, '=');
        char col[32];
        snprintf(col, sizeof col, "%.*s", (int)(eq - m->row_filter), m->row_filter);
        if (strcmp(pb_csv_get(t, row, col), eq + 1) != 0) return 0;
    }
    for (int k = 0; k < PB_TH_NKEYS; k++) {
        if (!(r->keys & (1u << k)) || k == PB_TH_KEY_SIZE || numeric_key(k)) continue;
        if (strcmp(pb_csv_get(t, row, m->key_column[k]), r->text[k]) != 0) return 0;
    }
    return 1;
}

/* ...and its numeric selectors other than size (m, stages, hidden)? */
static int row_selected(const pb_thresholds_rule *r, const pb_csv *t, int row)
{
    if (!text_selected(r, t, row)) return 0;
    for (int k = 0; k < PB_TH_NKEYS; k++) {
        double v;
        if (!(r->keys & (1u << k)) || !numeric_key(k)) continue;
        if (pb_csv_num(t, row, r->metric->key_column[k], &v) != PB_OK || v != (double)r->num[k]) return 0;
    }
    return 1;
}

/* A column a matching row must hold a finite number in: anything else (empty,
 * text, nan, inf, hex) makes the rule fail naming the file and line. */
static int trusted_num(const pb_thresholds_eval_table *tb, int row, const char *col, double *v,
                       pb_thresholds_eval_outcome *o)
{
    if (pb_csv_col(&tb->csv, col) < 0) return 0;
    if (pb_csv_num(&tb->csv, row, col, v) == PB_OK) return 1;
    const char *text = pb_csv_get(&tb->csv, row, col);
    char *shown = pb_escape_csv_comment(text);
    if (*text)
        pb_thresholds_eval_distrust(o, "%s:%d: %s is '%.40s', not a finite number", tb->path, tb->csv.line[row], col,
                                    shown ? shown : "");
    else
        pb_thresholds_eval_distrust(o, "%s:%d: %s is empty (not measured)", tb->path, tb->csv.line[row], col);
    free(shown);
    return 0;
}

/* Every column the rule compares, in a row its text selectors match. */
static void check_row(const pb_thresholds_rule *r, const pb_thresholds_eval_table *tb, int row,
                      pb_thresholds_eval_outcome *o)
{
    const pb_thresholds_metric *m = r->metric;
    double v;
    for (int k = 0; k < PB_TH_NKEYS; k++)
        if ((r->keys & (1u << k)) && (k == PB_TH_KEY_SIZE || numeric_key(k)))
            trusted_num(tb, row, m->key_column[k], &v, o);
}

/* The size measured closest to the rule's (log distance), within a factor of 2:
 * coll_sweep rounds counts to the rank count, so "64M" may be 64M - 8 bytes.
 * A rule size halfway between two measured ones (2M between 1M and 4M) takes
 * the smaller, whatever the order of the rows. */
static double nearest_size(const pb_thresholds_rule *r, const pb_thresholds_eval_table *tabs, int ntab)
{
    double best = NAN, dist = INFINITY;
    const char *col = r->metric->key_column[PB_TH_KEY_SIZE];
    for (int i = 0; i < ntab; i++)
        for (int row = 0; row < tabs[i].csv.nrows; row++) {
            double b;
            if (!row_selected(r, &tabs[i].csv, row) || pb_csv_num(&tabs[i].csv, row, col, &b) != PB_OK || b <= 0)
                continue;
            double d = fabs(log2(b / (double)r->size));
            if (d < dist || (d == dist && b < best)) dist = d, best = b;
        }
    return dist <= 1.0 ? best : NAN;
}

static int link_present(const pb_thresholds_rule *r, const pb_thresholds_eval_table *tabs, int ntab)
{
    for (int i = 0; i < ntab; i++)
        for (int row = 0; row < tabs[i].csv.nrows; row++)
            if (strcmp(pb_csv_get(&tabs[i].csv, row, "link_class"), r->text[PB_TH_KEY_LINK]) == 0) return 1;
    return 0;
}

/* Whether the metric's rows carry the benchmark's own check (a `wrong`
 * column). plan --fit's table is derived from checked sweeps, and
 * compute_probe's rates are the engine's speed, not data moved: neither has one. */
static int checked_source(const pb_thresholds_metric *m)
{
    return strcmp(m->source, "plan_fit") != 0 && strcmp(m->source, "compute_probe") != 0;
}

/* Fold every selected row into the worst value; a row with wrong data fails
 * the rule, and so does one whose value, divisor or wrong count is not a
 * finite number (it was skipped once, which let a garbled file pass). */
static void fold_rows(const pb_thresholds_rule *r, const pb_thresholds_eval_table *tabs, int ntab, double size,
                      pb_thresholds_eval_outcome *o)
{
    const pb_thresholds_metric *m = r->metric;
    for (int i = 0; i < ntab; i++)
        for (int row = 0; row < tabs[i].csv.nrows; row++) {
            const pb_thresholds_eval_table *tb = &tabs[i];
            double v, d = 1, b, wrong;
            if (!text_selected(r, &tb->csv, row)) continue;
            check_row(r, tb, row, o);
            if (!row_selected(r, &tb->csv, row)) continue;
            if ((r->keys & (1u << PB_TH_KEY_SIZE)) &&
                (pb_csv_num(&tb->csv, row, m->key_column[PB_TH_KEY_SIZE], &b) != PB_OK || b != size))
                continue;
            const pb_result_notes_entry *noted = pb_result_notes_of_row(&tb->notes, &tb->csv, row);
            if (noted) { /* noise by the benchmark's own account: never a pass */
                if (!o->noted++)
                    snprintf(o->noted_why, sizeof o->noted_why, "%s:%d: %.200s", tb->path, tb->csv.line[row],
                             noted->why);
                continue;
            }
            if (!trusted_num(tb, row, m->column, &v, o)) continue;
            if (m->divisor && !trusted_num(tb, row, m->divisor, &d, o)) continue;
            if (d == 0) {
                pb_thresholds_eval_distrust(o, "%s:%d: %s is 0", tb->path, tb->csv.line[row], m->divisor);
                continue;
            }
            v = m->absolute ? fabs(v / d) : v / d;
            int checked = checked_source(m);
            if (checked && pb_csv_col(&tb->csv, "wrong") < 0)
                pb_thresholds_eval_distrust(o, "%s: no 'wrong' column, so whether its data was checked is unknown; "
                                               "expected %s's own CSV", tb->path, m->source);
            int counted = checked && trusted_num(tb, row, "wrong", &wrong, o);
            if (counted && (wrong < -1 || wrong != floor(wrong)))
                pb_thresholds_eval_distrust(
                    o, "%s:%d: wrong is %g, not a count (a count of wrong values, or -1: not checked)", tb->path,
                    tb->csv.line[row], wrong);
            else if (counted && wrong == -1)
                pb_thresholds_eval_distrust(o, "%s:%d: wrong is -1: the data was not checked (a run with -c 0); "
                                               "acceptance passes checked data only", tb->path, tb->csv.line[row]);
            else if (counted && wrong > 0 && o->v != PB_TH_FAIL) {
                o->v = PB_TH_FAIL;
                snprintf(o->why, sizeof o->why, "%g wrong values in a matching row (%s:%d)", wrong, tb->path,
                         tb->csv.line[row]);
            }
            int worse = isnan(o->measured) || (r->op == PB_TH_GE ? v < o->measured : v > o->measured);
            if (worse) {
                o->measured = v;
                o->from_table = i;
                o->from_row = row;
            }
            o->rows++;
        }
}

void pb_thresholds_eval(const pb_thresholds_rule *r, const pb_thresholds_eval_table *tabs, int ntab,
                        pb_thresholds_eval_outcome *o)
{
    if (ntab == 0) {
        if (!o->untrusted) {
            o->v = PB_TH_FAIL;
            snprintf(o->why, sizeof o->why, "no %s*.csv with a %s column (benchmark not run?)", r->metric->source,
                     r->metric->column);
        }
        return;
    }
    double size = NAN;
    if (r->keys & (1u << PB_TH_KEY_SIZE)) size = nearest_size(r, tabs, ntab);
    if (!(r->keys & (1u << PB_TH_KEY_SIZE)) || !isnan(size)) fold_rows(r, tabs, ntab, size, o);
    if (o->untrusted) {
        /* the reason is already in why */
    } else if (o->rows == 0 && o->noted) {
        o->v = PB_TH_FAIL;
        snprintf(o->why, sizeof o->why, "no trustworthy data: %d matching row%s marked untrustworthy (%s)", o->noted,
                 o->noted == 1 ? "" : "s", o->noted_why);
    } else if (o->rows == 0) {
        int nolink = (r->keys & (1u << PB_TH_KEY_LINK)) && !link_present(r, tabs, ntab);
        o->v = nolink ? PB_TH_SKIP : PB_TH_FAIL;
        if (nolink)
            snprintf(o->why, sizeof o->why, "this run has no %s rows", r->text[PB_TH_KEY_LINK]);
        else
            snprintf(o->why, sizeof o->why, "no matching rows in %s*.csv", r->metric->source);
    } else if (o->v == PB_TH_PASS && !pb_thresholds_passes(r, o->measured)) {
        o->v = PB_TH_FAIL;
        snprintf(o->why, sizeof o->why, "measured %.4g, required %s %.4g%s%s", o->measured,
                 r->op == PB_TH_GE ? ">=" : "<=", r->value, r->metric->unit[0] ? " " : "", r->metric->unit);
    }
}
