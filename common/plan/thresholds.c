/* Threshold-file parser (see thresholds.h and docs/acceptance.md). Pure: no
 * file I/O (the text is read as a stream in memory), no MPI, messages go to
 * the caller's buffer, so libFuzzer can drive it. */
#include "plan/thresholds.h"

#include "core/error.h"
#include "core/escape.h"
#include "core/grow.h"
#include "core/lines.h"
#include "core/link.h"
#include "core/parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define K_COLL (1u << PB_TH_KEY_COLL)
#define K_SIZE (1u << PB_TH_KEY_SIZE)

/* Columns per key, in enum order: coll, size, link, mode, m, stages, hidden. */
static const pb_thresholds_metric metrics[] = {
    {"busbw", "coll_sweep", "busbw_GBps", NULL, 0, "GB/s",
     {"collective", "bytes", "link_class", NULL, NULL, NULL, NULL}, K_COLL | K_SIZE, NULL,
     "collective bus bandwidth at a size (nccl-tests busbw)"},
    {"algbw", "coll_sweep", "algbw_GBps", NULL, 0, "GB/s",
     {"collective", "bytes", "link_class", NULL, NULL, NULL, NULL}, K_COLL | K_SIZE, NULL,
     "collective algorithm bandwidth at a size"},
    {"coll_latency", "coll_sweep", "time_us", NULL, 0, "us",
     {"collective", "bytes", "link_class", NULL, NULL, NULL, NULL}, K_COLL | K_SIZE, NULL,
     "collective time at a size (mean over ranks)"},
    {"p2p_latency", "p2p_sweep", "time_us", NULL, 0, "us",
     {NULL, "bytes", "link_class", NULL, NULL, NULL, NULL}, K_SIZE, "mode=latency",
     "point-to-point ping-pong latency (half round trip) at a size"},
    {"p2p_bw", "p2p_sweep", "bw_GBps", NULL, 0, "GB/s",
     {NULL, "bytes", "link_class", NULL, NULL, NULL, NULL}, K_SIZE, "mode=bw",
     "point-to-point unidirectional bandwidth at a size"},
    {"p2p_bibw", "p2p_sweep", "bw_GBps", NULL, 0, "GB/s",
     {NULL, "bytes", "link_class", NULL, NULL, NULL, NULL}, K_SIZE, "mode=bibw",
     "point-to-point bidirectional bandwidth at a size"},
    {"dp_overhead", "dp_allreduce", "overhead", NULL, 0, "",
     {NULL, "grad_bytes", "link_class", "overlap", NULL, NULL, NULL}, 0, NULL,
     "data-parallel exposed communication / compute"},
    {"tp_comm_fraction", "tp_layer", "comm_fraction", NULL, 0, "",
     {NULL, NULL, "link_class", "mode", NULL, NULL, "hidden"}, 0, NULL,
     "tensor-parallel communication share of the layer step"},
    {"pp_efficiency", "pp_pipeline", "efficiency", "efficiency_theory", 0, "",
     {NULL, NULL, "link_class", "schedule", "micro_batches", "stages", NULL}, 0, NULL,
     "pipeline efficiency as a fraction of the theory m/(m+p-1)"},
    {"fsdp_overhead", "fsdp_step", "overhead", NULL, 0, "",
     {NULL, NULL, "link_class", "prefetch", NULL, NULL, NULL}, 0, NULL,
     "sharded data-parallel (FSDP) exposed communication / compute"},
    {"cp_overhead", "cp_attention", "overhead", NULL, 0, "",
     {NULL, NULL, "link_class", "overlap", NULL, NULL, NULL}, 0, NULL,
     "context-parallel (ring attention) exposed communication / compute"},
    {"moe_a2a_share", "moe_layer", "a2a_share", NULL, 0, "",
     {NULL, NULL, "link_class", "skew", NULL, NULL, NULL}, 0, NULL,
     "mixture-of-experts dispatch and combine share of the layer step"},
    {"fit_error", "plan_fit", "rel_error", NULL, 1, "",
     {NULL, NULL, NULL, "benchmark", NULL, NULL, NULL}, 0, NULL,
     "|relative error| of plan --fit's prediction"},
    {"gemm_rate", "compute_probe", "rate", NULL, 0, "GFLOP/s",
     {NULL, "size", NULL, NULL, NULL, NULL, NULL}, 0, "test=gemm",
     "the compute engine's GEMM rate at a matrix size (compute_probe)"},
    {NULL, NULL, NULL, NULL, 0, NULL, {NULL}, 0, NULL, NULL},
};

static const char *const key_names[PB_TH_NKEYS] = {"coll", "size", "link", "mode", "m", "stages", "hidden"};
/* Friendlier spellings of `mode` for the metrics where it means something else. */
static const struct {
    const char *alias;
    int key;
} key_aliases[] = {{"overlap", PB_TH_KEY_MODE}, {"schedule", PB_TH_KEY_MODE}, {"benchmark", PB_TH_KEY_MODE},
                   {"prefetch", PB_TH_KEY_MODE}, {"skew", PB_TH_KEY_MODE},
                   {"collective", PB_TH_KEY_COLL}, {"micro_batches", PB_TH_KEY_M}};
/* coll_sweep's collectives (coll/coll_table.c), spelled out so that the parser stays free of MPI
 * for the fuzzer; test_thresholds holds the list to the table. */
static const char *const collectives[] = {"allreduce", "allgather", "reducescatter", "broadcast",
                                          "reduce", "alltoall", "sendrecv", "alltoallv", NULL};
/* The values the mode key can take, per metric: the benchmark's own modes (a rule for a mode
 * it never writes could only ever fail as "no matching rows"). */
static const struct {
    const char *metric;
    const char *const values[4];
    const char *accepted;
} mode_values[] = {{"dp_overhead", {"none", "bucket", NULL}, "none or bucket"},
                   {"tp_comm_fraction", {"allreduce", "sp", NULL}, "allreduce or sp"},
                   {"pp_efficiency", {"gpipe", "1f1b", "interleaved", NULL}, "gpipe, 1f1b or interleaved"},
                   {"fsdp_overhead", {"off", "on", NULL}, "off or on"},
                   {"cp_overhead", {"off", "on", NULL}, "off or on"}};


const pb_thresholds_metric *pb_thresholds_metrics(void) { return metrics; }

void pb_thresholds_value_text(const pb_thresholds_rule *rule, double v, char *buf, size_t len)
{
    if (isnan(v)) snprintf(buf, len, "-");
    else if (rule->metric->unit[0]) snprintf(buf, len, "%.4g %s", v, rule->metric->unit);
    else snprintf(buf, len, "%.3f", v);
}

int pb_thresholds_passes(const pb_thresholds_rule *rule, double measured)
{
    if (!isfinite(measured)) return 0;
    return rule->op == PB_TH_GE ? measured >= rule->value : measured <= rule->value;
}

/* Error context: every message starts "NAME:LINE: ". */
typedef struct ctx {
    const char *name;
    int line;
    char *err;
    size_t errlen;
} ctx;

static int bad(const ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(const ctx *c, const char *fmt, ...)
{
    if (c->err && c->errlen) {
        int n = snprintf(c->err, c->errlen, "%s:%d: ", c->name, c->line);
        if (n >= 0 && (size_t)n < c->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return PB_ERR_USAGE;
}

static const pb_thresholds_metric *find_metric(const char *name)
{
    for (const pb_thresholds_metric *m = metrics; m->name; m++)
        if (strcmp(m->name, name) == 0) return m;
    return NULL;
}

static int find_key(const char *name)
{
    for (int k = 0; k < PB_TH_NKEYS; k++)
        if (strcmp(key_names[k], name) == 0) return k;
    for (size_t i = 0; i < sizeof key_aliases / sizeof key_aliases[0]; i++)
        if (strcmp(key_aliases[i].alias, name) == 0) return key_aliases[i].key;
    return -1;
}

static int in_list(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(*list, s) == 0) return 1;
    return 0;
}

/* Why `val` cannot be metric m's mode, or NULL (also for a metric whose modes are open). */
static const char *mode_refusal(const pb_thresholds_metric *m, const char *val)
{
    for (size_t i = 0; i < sizeof mode_values / sizeof mode_values[0]; i++)
        if (strcmp(mode_values[i].metric, m->name) == 0)
            return in_list(val, mode_values[i].values) ? NULL : mode_values[i].accepted;
    return NULL;
}

/* "coll, size, link" for the keys a metric accepts. */
static void accepted_keys(const pb_thresholds_metric *m, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int k = 0; k < PB_TH_NKEYS; k++) {
        if (!m->key_column[k]) continue;
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s", used ? ", " : "", k == PB_TH_KEY_MODE ? m->key_column[k] : key_names[k]);
    }
}

static int parse_key_value(const ctx *c, pb_thresholds_rule *r, const char *tok)
{
    const char *eq = strchr(tok, '=');
    char key[32];
    size_t klen = (size_t)(eq - tok);
    if (klen == 0 || klen >= sizeof key) return bad(c, "'%s' is not a key=value selector; expected KEY=VALUE, then >= or <= and a number", tok);
    memcpy(key, tok, klen);
    key[klen] = '\0';
    const char *val = eq + 1;
    char acc[128];
    accepted_keys(r->metric, acc, sizeof acc);
    int k = find_key(key);
    if (k < 0 || !r->metric->key_column[k])
        return bad(c, "key '%s' does not apply to %s; accepted: %s", key, r->metric->name, acc[0] ? acc : "none");
    if (r->keys & (1u << k)) return bad(c, "key '%s' given twice", key);
    if (*val == '\0') return bad(c, "key '%s' has an empty value", key);
    if (strlen(val) >= sizeof r->text[k]) return bad(c, "value of '%s' is too long (at most %zu characters)", key, sizeof r->text[k] - 1);
    if (k == PB_TH_KEY_COLL && !in_list(val, collectives))
        return bad(c, "coll '%s' is not a collective; accepted: allreduce, allgather, reducescatter, broadcast, "
                      "reduce, alltoall, sendrecv, alltoallv", val);
    const char *modes = k == PB_TH_KEY_MODE ? mode_refusal(r->metric, val) : NULL;
    if (modes) return bad(c, "%s '%s' is not accepted for %s; expected %s", key, val, r->metric->name, modes);
    if (k == PB_TH_KEY_LINK && pb_link_parse(val) < 0)
        return bad(c, "link '%s' is not accepted; expected intra, inter or mixed", val);
    if (k == PB_TH_KEY_SIZE && pb_parse_size("size", val, PB_SIZE_MAX, &r->size) != PB_OK)
        return bad(c, "size '%s' is not a size; expected bytes with an optional K, M or G suffix (1024^n), at most 64G", val);
    if ((k == PB_TH_KEY_M || k == PB_TH_KEY_STAGES || k == PB_TH_KEY_HIDDEN) &&
        pb_parse_int(key, val, 1, 1LL << 40, &r->num[k]) != PB_OK)
        return bad(c, "%s '%s' is not accepted; expected a positive integer", key, val);
    memcpy(r->text[k], val, strlen(val) + 1);
    r->keys |= 1u << k;
    return PB_OK;
}

/* Length of the decimal number at s: digits, an optional fraction, an
 * optional exponent; 0 when s does not start with a digit. No hex, no inf or
 * nan, no sign (a threshold is never negative). */
static size_t decimal_len(const char *s)
{
    size_t n = strspn(s, "0123456789");
    if (n == 0) return 0;
    if (s[n] == '.') n += 1 + strspn(s + n + 1, "0123456789");
    if (s[n] == 'e' || s[n] == 'E') {
        size_t k = n + 1 + (s[n + 1] == '+' || s[n + 1] == '-');
        size_t digits = strspn(s + k, "0123456789");
        if (digits) n = k + digits;
    }
    return n;
}

static int parse_value(const ctx *c, pb_thresholds_rule *r, const char *num, const char *unit)
{
    size_t n = decimal_len(num);
    const char *glued = num + n; /* a unit written without a space: "2.5GB/s", "80%" */
    int unit_glued = n > 0 && *glued && !unit && (strcmp(glued, "GB/s") == 0 || strcmp(glued, "us") == 0 ||
                                                  strcmp(glued, "%") == 0);
    if (n == 0 || (*glued && !unit_glued))
        return bad(c, "threshold '%.40s' is not a number; expected a non-negative decimal number (no hex, inf or nan)", num);
    char digits[64];
    if (n >= sizeof digits) return bad(c, "threshold '%.40s' is too long", num);
    memcpy(digits, num, n);
    digits[n] = '\0';
    errno = 0;
    double v = strtod(digits, NULL);
    if (errno == ERANGE || !isfinite(v)) return bad(c, "threshold '%.40s' is out of range", num);
    if (unit_glued) unit = glued;
    const char *want = r->metric->unit;
    if (unit) {
        int fraction = want[0] == '\0';
        if (fraction && strcmp(unit, "%") == 0) v /= 100.0;
        else if (fraction || strcmp(unit, want) != 0)
            return bad(c, "unit '%s' is not accepted for %s; expected %s", unit, r->metric->name,
                       fraction ? "no unit (a fraction) or %" : want);
    }
    r->value = v;
    return PB_OK;
}

/* ">=" and "<=" made words of their own, so "size=1M>=2.5" reads as
 * "size=1M >= 2.5"; out holds at least 3 * strlen(in) + 1 bytes. */
static void space_operators(const char *in, char *out)
{
    for (; *in; in++) {
        if ((in[0] == '>' || in[0] == '<') && in[1] == '=') {
            *out++ = ' ';
            *out++ = *in++;
            *out++ = '=';
            *out++ = ' ';
        } else {
            *out++ = *in;
        }
    }
    *out = '\0';
}

/* One rule: METRIC key=value... OP NUMBER [UNIT]. Tokens are in-place in `line`. */
static int parse_rule(const ctx *c, char *line, pb_thresholds_rule *r)
{
    char *tok[24];
    int nt = 0;
    for (char *p = strtok(line, " \t\r"); p; p = strtok(NULL, " \t\r")) {
        if (nt == (int)(sizeof tok / sizeof tok[0])) return bad(c, "too many words (at most 24)");
        tok[nt++] = p;
    }
    /* parse_all skips blank lines; a direct caller might not */
    if (nt == 0) return bad(c, "empty rule; expected 'METRIC KEY=VALUE... >= NUMBER' or '<= NUMBER'");
    memset(r, 0, sizeof *r);
    r->line = c->line;
    r->metric = find_metric(tok[0]);
    if (!r->metric) {
        char *shown = pb_escape_ascii(tok[0]); /* a stray byte-order mark or control byte, made visible */
        char names[256] = "";
        for (const pb_thresholds_metric *m = metrics; m->name; m++) /* the table's names: never a stale list */
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", m == metrics ? "" : ", ", m->name);
        int rc = bad(c, "'%.60s' is not a metric; accepted: %s", shown ? shown : tok[0], names);
        free(shown);
        return rc;
    }
    int i = 1;
    for (; i < nt && strchr(tok[i], '='); i++) {
        if (strcmp(tok[i], ">=") == 0 || strcmp(tok[i], "<=") == 0) break;
        PB_TRY(parse_key_value(c, r, tok[i]));
    }
    if (i >= nt) return bad(c, "missing comparison; expected '%s KEY=VALUE... >= NUMBER' or '<= NUMBER'", r->metric->name);
    if (strcmp(tok[i], ">=") == 0) r->op = PB_TH_GE;
    else if (strcmp(tok[i], "<=") == 0) r->op = PB_TH_LE;
    else return bad(c, "'%.40s' is neither a key=value selector nor a comparison; expected >= or <=", tok[i]);
    if (i + 1 >= nt) return bad(c, "missing threshold after '%s'", tok[i]);
    if (i + 3 < nt) return bad(c, "unexpected '%.40s' after the threshold", tok[i + 3]);
    PB_TRY(parse_value(c, r, tok[i + 1], i + 2 < nt ? tok[i + 2] : NULL));
    unsigned missing = r->metric->required & ~r->keys;
    for (int k = 0; k < PB_TH_NKEYS; k++)
        if (missing & (1u << k)) return bad(c, "%s needs %s=...", r->metric->name, key_names[k]);
    return PB_OK;
}

/* Copy `line` without its comment, trimmed, into buf. */
static void clean_line(const char *line, char *buf)
{
    const char *s = line, *e = line + strcspn(line, "#");
    while (s < e && isspace((unsigned char)*s)) s++;
    while (e > s && isspace((unsigned char)e[-1])) e--;
    memcpy(buf, s, (size_t)(e - s));
    buf[e - s] = '\0';
}

/* The rule as written, runs of blanks made one space (for aligned tables). */
static void collapse_blanks(const char *in, char *out, size_t len)
{
    size_t k = 0;
    for (; *in && k + 1 < len; in++) {
        int blank = *in == ' ' || *in == '\t' || *in == '\r';
        if (blank && k > 0 && out[k - 1] == ' ') continue;
        out[k++] = blank ? ' ' : *in;
    }
    out[k] = '\0';
}

static int add_rule(pb_thresholds_set *set, int *cap, const pb_thresholds_rule *r)
{
    pb_thresholds_rule *nr = pb_grow(set->rules, cap, set->n, sizeof *nr, 16);
    if (!nr) return PB_ERR_ENV;
    set->rules = nr;
    set->rules[set->n++] = *r;
    return PB_OK;
}

/* One line of the file: blank, a comment, or a rule added to out. */
static int parse_line(const ctx *c, const char *line, pb_thresholds_set *out, int *cap)
{
    char buf[PB_TH_LINE_MAX + 1];
    if (strlen(line) > PB_TH_LINE_MAX) return bad(c, "line is longer than %d characters", PB_TH_LINE_MAX);
    clean_line(line, buf);
    if (buf[0] == '\0') return PB_OK;
    if (out->n == PB_TH_RULES_MAX) return bad(c, "too many rules (at most %d)", PB_TH_RULES_MAX);
    pb_thresholds_rule r;
    char copy[3 * sizeof buf];
    space_operators(buf, copy);
    PB_TRY(parse_rule(c, copy, &r));
    collapse_blanks(buf, r.source_text, sizeof r.source_text);
    return add_rule(out, cap, &r);
}

/* Lines come from core/lines (a leading BOM skipped, CRLF read as LF; NUL
 * bytes, CR-only line ends and a BOM inside refused), read from memory so
 * that the parser stays free of file I/O. */
static int parse_all(const char *name, const char *text, size_t len, pb_thresholds_set *out, char *err, size_t errlen)
{
    ctx c = {name ? name : "thresholds", 0, err, errlen};
    int cap = 0, st = PB_OK;
    FILE *fp = len ? fmemopen((void *)text, len, "r") /* read only */ : NULL;
    if (len && !fp) return PB_ERR_ENV;
    if (fp) {
        pb_lines r;
        char *line;
        pb_lines_from(&r, fp, c.name, "-t/--thresholds", 1);
        while ((st = pb_lines_next(&r, &line)) == PB_OK && line) {
            c.line = r.lineno;
            st = parse_line(&c, line, out, &cap);
            if (st != PB_OK) break;
        }
        if (st == PB_ERR_USAGE && r.why) {
            c.line = r.lineno;
            st = bad(&c, "line %s", r.why);
        }
        c.line = r.lineno;
        pb_lines_close(&r);
        fclose(fp);
    }
    if (st == PB_OK && out->n == 0) {
        c.line = c.line ? c.line : 1;
        return bad(&c, "no rules; expected lines like 'busbw coll=allreduce size=64M >= 10 GB/s'");
    }
    return st;
}

int pb_thresholds_parse(const char *name, const char *text, size_t len, pb_thresholds_set *out, char *err, size_t errlen)
{
    out->n = 0;
    out->rules = NULL;
    if (err && errlen) err[0] = '\0';
    int rc = parse_all(name, text, len, out, err, errlen);
    if (rc == PB_ERR_ENV && err && errlen) snprintf(err, errlen, "%s: out of memory", name ? name : "thresholds");
    if (rc != PB_OK) pb_thresholds_free(out);
    return rc;
}

void pb_thresholds_free(pb_thresholds_set *set)
{
    free(set->rules);
    set->rules = NULL;
    set->n = 0;
}
