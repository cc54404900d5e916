/* Rules proposed from a run's result tables, and their thresholds (see
 * thresholds_derive.h). Pure: the tables are already read. */
#include "plan/thresholds_derive.h"

#include "core/error.h"
#include "core/grow.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE {-1, -1, -1}
#define K(k) PB_TH_KEY_##k

/* What an operator reads first in a run: bandwidth at the large sizes, latency at the small ones,
 * the workloads' figures at the largest shape run, and the engine's rate. */
static const pb_thresholds_derive_headline headlines[] = {
    {"busbw", PB_TH_GE, -1, NULL, {K(COLL), K(LINK), -1}, K(SIZE), 1},
    {"coll_latency", PB_TH_LE, K(COLL), "allreduce", {K(LINK), -1, -1}, K(SIZE), 0},
    {"p2p_latency", PB_TH_LE, -1, NULL, {K(LINK), -1, -1}, K(SIZE), 0},
    {"p2p_bw", PB_TH_GE, -1, NULL, {K(LINK), -1, -1}, K(SIZE), 1},
    {"p2p_bibw", PB_TH_GE, -1, NULL, {K(LINK), -1, -1}, K(SIZE), 1},
    {"dp_overhead", PB_TH_LE, -1, NULL, {K(MODE), K(LINK), -1}, K(SIZE), 1},
    {"tp_comm_fraction", PB_TH_LE, -1, NULL, {K(MODE), K(LINK), -1}, K(HIDDEN), 1},
    {"pp_efficiency", PB_TH_GE, -1, NULL, {K(MODE), K(STAGES), K(LINK)}, K(M), 1},
    {"fsdp_overhead", PB_TH_LE, -1, NULL, {K(MODE), K(LINK), -1}, -1, 1},
    {"cp_overhead", PB_TH_LE, -1, NULL, {K(MODE), K(LINK), -1}, -1, 1},
    {"moe_a2a_share", PB_TH_LE, -1, NULL, {K(MODE), K(LINK), -1}, -1, 1},
    {"gemm_rate", PB_TH_GE, -1, NULL, NONE, K(SIZE), 1},
    {NULL, PB_TH_GE, -1, NULL, NONE, -1, 0},
};

const pb_thresholds_derive_headline *pb_thresholds_derive_headlines(void) { return headlines; }

/* The key's name in a rule; the mode key is written as the metric's own column (overlap, schedule...). */
static const char *key_name(const pb_thresholds_metric *m, int k)
{
    static const char *const names[PB_TH_NKEYS] = {"coll", "size", "link", NULL, "m", "stages", "hidden"};
    return k == PB_TH_KEY_MODE ? m->key_column[k] : names[k];
}

static const pb_thresholds_metric *metric_named(const char *name)
{
    for (const pb_thresholds_metric *m = pb_thresholds_metrics(); m->name; m++)
        if (strcmp(m->name, name) == 0) return m;
    return NULL;
}

/* A value a rule can carry as one word: not empty, no blank, no '#' (a comment), no '='. */
static int writable(const char *v)
{
    return *v && strcspn(v, " \t\r\n#=<>") == strlen(v) && strlen(v) < 32;
}

/* Does the row pass the metric's row filter and the headline's fixed selector? */
static int selected(const pb_thresholds_derive_headline *h, const pb_thresholds_metric *m, const pb_csv *t, int row)
{
    if (m->row_filter) {
        const char *eq = strchr(m->row_filter, '=');
        char col[32];
        snprintf(col, sizeof col, "%.*s", (int)(eq - m->row_filter), m->row_filter);
        if (strcmp(pb_csv_get(t, row, col), eq + 1) != 0) return 0;
    }
    return h->fixed < 0 || strcmp(pb_csv_get(t, row, m->key_column[h->fixed]), h->fixed_value) == 0;
}

typedef struct group {
    const char *val[3];
    double pick;
} group;

/* Size in bytes as a rule writes it: K, M or G (1024^n) when whole, else bytes. */
static void size_text(double b, char *buf, size_t len)
{
    unsigned long long v = (unsigned long long)b;
    static const char suffix[] = "GMK";
    for (int i = 0; i < 3; i++) {
        unsigned long long unit = 1ULL << (10 * (3 - i));
        if (v >= unit && v % unit == 0) {
            snprintf(buf, len, "%llu%c", v / unit, suffix[i]);
            return;
        }
    }
    snprintf(buf, len, "%llu", v);
}

/* The rule's selectors in the keys' order (coll, size, link, mode, m, stages, hidden), as rules are written. */
static char *rule_text(const pb_thresholds_derive_headline *h, const pb_thresholds_metric *m, const group *g)
{
    char text[PB_TH_LINE_MAX] = "";
    size_t used = (size_t)snprintf(text, sizeof text, "%s", m->name);
    for (int k = 0; k < PB_TH_NKEYS; k++) {
        char value[40] = "";
        if (k == h->fixed) snprintf(value, sizeof value, "%s", h->fixed_value);
        else if (k == h->pick && k == PB_TH_KEY_SIZE) size_text(g->pick, value, sizeof value);
        else if (k == h->pick) snprintf(value, sizeof value, "%.0f", g->pick);
        for (int i = 0; i < 3 && h->by[i] >= 0; i++)
            if (h->by[i] == k) snprintf(value, sizeof value, "%s", g->val[i]);
        if (value[0]) used += (size_t)snprintf(text + used, sizeof text - used, " %s=%s", key_name(m, k), value);
    }
    return strdup(text);
}

/* The row's group: an existing one with the same `by` values, or a new one; NULL when out of memory. */
static group *group_of(group **gs, int *n, int *cap, const pb_thresholds_derive_headline *h, const char *const val[3])
{
    for (int i = 0; i < *n; i++) {
        int same = 1;
        for (int k = 0; k < 3 && h->by[k] >= 0; k++) same = same && strcmp((*gs)[i].val[k], val[k]) == 0;
        if (same) return &(*gs)[i];
    }
    group *grown = pb_grow(*gs, cap, *n, sizeof *grown, 8);
    if (!grown) return NULL;
    *gs = grown;
    grown[*n] = (group){{val[0], val[1], val[2]}, NAN};
    return &grown[(*n)++];
}

int pb_thresholds_derive_propose(const pb_thresholds_derive_headline *h, const pb_thresholds_eval_table *tabs, int ntab,
                                 char ***out, int *n)
{
    *out = NULL;
    *n = 0;
    const pb_thresholds_metric *m = metric_named(h->metric);
    if (!m) return PB_OK;
    group *gs = NULL;
    int ng = 0, cap = 0;
    for (int i = 0; i < ntab; i++) {
        const pb_csv *t = &tabs[i].csv;
        for (int row = 0; row < t->nrows; row++) {
            const char *val[3] = {"", "", ""};
            int ok = selected(h, m, t, row);
            for (int k = 0; ok && k < 3 && h->by[k] >= 0; k++) {
                val[k] = pb_csv_get(t, row, m->key_column[h->by[k]]);
                ok = writable(val[k]);
            }
            double v = 1;
            if (ok && h->pick >= 0) ok = pb_csv_num(t, row, m->key_column[h->pick], &v) == PB_OK && v >= 1;
            if (!ok) continue;
            group *g = group_of(&gs, &ng, &cap, h, val);
            if (!g) return free(gs), PB_ERR_ENV;
            if (isnan(g->pick) || (h->largest ? v > g->pick : v < g->pick)) g->pick = v;
        }
    }
    char **rules = ng ? calloc((size_t)ng, sizeof *rules) : NULL;
    if (ng && !rules) return free(gs), PB_ERR_ENV;
    for (int i = 0; i < ng; i++) {
        rules[i] = rule_text(h, m, &gs[i]);
        if (!rules[i]) return free(gs), pb_thresholds_derive_free(rules, i), PB_ERR_ENV;
    }
    free(gs);
    *out = rules;
    *n = ng;
    return PB_OK;
}

void pb_thresholds_derive_free(char **rules, int n)
{
    for (int i = 0; i < n; i++) free(rules[i]);
    free(rules);
}

double pb_thresholds_derive_threshold(enum pb_th_op op, double measured, double margin)
{
    double v = op == PB_TH_GE ? measured - margin * fabs(measured) : measured + margin * fabs(measured);
    if (!(v > 0)) return 0; /* a threshold is never negative: 0 still holds the figure it came from */
    double scale = pow(10.0, 3 - floor(log10(v)));
    return op == PB_TH_GE ? floor(v * scale) / scale : ceil(v * scale) / scale;
}
