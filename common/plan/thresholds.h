/* Acceptance thresholds: a small text format, one rule per line, parsed here
 * without MPI or I/O (the parser is fuzzed) and judged against result tables
 * by plan/thresholds_eval.h, for the `acceptance` binary. The format is
 * documented in docs/acceptance.md:
 *
 *   # comment
 *   busbw        coll=allreduce size=64M link=intra  >= 2.5 GB/s
 *   p2p_latency  size=8 link=intra                   <= 5 us
 *   dp_overhead  overlap=none                        <= 0.5
 *   pp_efficiency schedule=1f1b                      >= 80 %
 */
#ifndef PB_THRESHOLDS_H
#define PB_THRESHOLDS_H

#include <stddef.h>
#include <stdint.h>

/* Selector keys a rule may carry; a metric accepts a subset of them. */
enum pb_th_key {
    PB_TH_KEY_COLL,    /* collective name */
    PB_TH_KEY_SIZE,    /* message / gradient size (bytes, K/M/G) */
    PB_TH_KEY_LINK,    /* intra, inter or mixed */
    PB_TH_KEY_MODE,    /* p2p mode, tp mode, dp overlap, pp schedule, fit benchmark */
    PB_TH_KEY_M,       /* pipeline micro-batches */
    PB_TH_KEY_STAGES,  /* pipeline stages */
    PB_TH_KEY_HIDDEN,  /* tensor-parallel hidden size */
    PB_TH_NKEYS
};

/* What a metric reads: the CSV files `<source>*.csv`, the value column, the
 * column each key filters on (NULL: key not accepted), an optional divisor
 * column (value / divisor), and whether the absolute value is compared. */
typedef struct pb_thresholds_metric {
    const char *name;
    const char *source;
    const char *column;
    const char *divisor;
    int absolute;
    const char *unit;        /* "GB/s", "us", or "" for a fraction (then '%' is accepted) */
    const char *key_column[PB_TH_NKEYS];
    unsigned required;       /* bit per key that must be given */
    const char *row_filter;  /* "column=value" every row must match (p2p latency rows), or NULL */
    const char *description;
} pb_thresholds_metric;

enum pb_th_op { PB_TH_GE, PB_TH_LE };

typedef struct pb_thresholds_rule {
    int line;
    const pb_thresholds_metric *metric;
    unsigned keys;           /* bit per key given */
    char text[PB_TH_NKEYS][32];  /* each given key's value as written */
    uint64_t size;           /* PB_TH_KEY_SIZE, parsed */
    long long num[PB_TH_NKEYS];  /* integer keys (m, stages, hidden), parsed */
    enum pb_th_op op;
    double value;            /* threshold in the metric's unit; fractions as fractions */
    char source_text[160];   /* the rule as written, trimmed (for tables and reports) */
} pb_thresholds_rule;

typedef struct pb_thresholds_set {
    int n;
    pb_thresholds_rule *rules;
} pb_thresholds_set;

/* Longest accepted line and most rules per file. */
#define PB_TH_LINE_MAX 1024
#define PB_TH_RULES_MAX 4096

/* Parse `len` bytes of `text`. `name` labels messages ("FILE:LINE: ...").
 * PB_OK with *out filled (free with pb_thresholds_free), or PB_ERR_USAGE with a
 * one-line message in err (no trailing newline) and *out empty; PB_ERR_ENV
 * when memory runs out. A file without any rule is a usage error. */
int pb_thresholds_parse(const char *name, const char *text, size_t len, pb_thresholds_set *out, char *err, size_t errlen);

void pb_thresholds_free(pb_thresholds_set *set);

/* The metric table (for --help and docs), terminated by a NULL name. */
const pb_thresholds_metric *pb_thresholds_metrics(void);

/* A value of the rule's metric as tables show it: "2.5 GB/s", "0.250" for a
 * fraction, "-" for NAN. */
void pb_thresholds_value_text(const pb_thresholds_rule *rule, double v, char *buf, size_t len);

/* The comparison: does `measured` satisfy the rule? */
int pb_thresholds_passes(const pb_thresholds_rule *rule, double measured);

#endif
