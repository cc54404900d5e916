/* Command-line parsing: each binary combines option groups (its own, the
 * common sweep group, ...) into one getopt_long table, and help text is
 * generated from the same tables, so an option is declared in one place. */
#ifndef PB_OPTIONS_H
#define PB_OPTIONS_H

#include "core/dtype.h"

#include <stddef.h>
#include <stdint.h>

#define PB_HELP_SHOWN (-1) /* pb_options_parse printed --help or --version: exit 0 */

typedef struct pb_options_opt {
    const char *name;  /* long name, without "--" */
    int short_name;    /* a letter, or 0 */
    const char *arg;   /* argument name for the help, or NULL for a flag */
    const char *help;
    int id;            /* handed to the group's handler */
} pb_options_opt;

/* `option` is the name to use in messages, e.g. "-e/--maxbytes". */
typedef int (*pb_options_handler)(void *ctx, int id, const char *option, const char *arg);

typedef struct pb_options_group {
    const char *title;
    const pb_options_opt *opts;
    int nopts;
    pb_options_handler handle;
    void *ctx;
} pb_options_group;

/* Parse argv against the groups. Returns PB_OK, PB_ERR_USAGE (message printed)
 * or PB_HELP_SHOWN (--help, or --version: core/version.h's string). `summary`
 * is the first lines of --help. */
int pb_options_parse(int argc, char **argv, const char *summary, const pb_options_group *groups, int ngroups);

/* For the tools that call getopt_long themselves (plan, acceptance): refuse an option
 * given twice, as pb_options_parse does. `value` is getopt_long's return, `seen` one
 * flag per value (nseen of them, zeroed by the caller); the message names the long
 * option of `opts` whose val it is. */
struct option;
int pb_options_once(const struct option *opts, unsigned char *seen, size_t nseen, int value);

/* ---- the common group shared by the sweeps and the workload benchmarks ---- */

/* --backend's names live in the backend table (backend/comm.h), a layer
 * above this one: the harness hands over the table's check of a name and its
 * help text before parsing. Until then any --backend name passes here and
 * the backend selection refuses it. */
typedef int (*pb_options_name_check)(const char *option, const char *name);
void pb_options_set_backends(pb_options_name_check check, const char *help);

/* --list WHAT prints the names of one of the tables a program chooses from
 * (collectives, backends, engines, modes), one a line, and exits 0: tests and
 * the suite read them rather than repeat the tables. A program registers each
 * table (NULL-terminated names) before the parse; registering WHAT again
 * replaces it. --help lists the registered WHATs. */
#define PB_OPTIONS_LISTS 8
void pb_options_add_list(const char *what, const char *const *names);


/* The most sizes one sweep measures (-b..-e by -f or -i, or --sizes); a
 * sweep with more is refused, naming the count, never cut short. */
#define PB_MAX_SIZES 4096
#define PB_VALIDATE_MAX 1024 /* worlds in one --validate */

typedef struct pb_options {
    uint64_t minbytes, maxbytes;   /* -b, -e */
    long long stepfactor;          /* -f */
    uint64_t stepbytes;            /* -i: additive steps instead of -f */
    uint64_t sizes[PB_MAX_SIZES];  /* --sizes: explicit list (overrides -b/-e) */
    size_t nsizes;
    int iters, warmup;             /* -n, -w */
    int iters_given, warmup_given; /* set by -n / -w: one count for every size */
    int check;                     /* -c */
    pb_dtype dtype;                /* -d */
    pb_dtype_redop op;                   /* -o */
    int root;                      /* -r: see root_text */
    const char *root_text;         /* -r as given: the binary checks it with pb_parse_rank once it knows the ranks */
    int op_given;                  /* -o was set */
    double max_seconds;            /* --max-seconds-per-size; 0 = no cap */
    double timeout;                /* --timeout: hang watchdog, seconds; 0 = off */
    int rotate;                    /* --rotate 1: cold-cache buffers (buffers.h); default 0, fixed buffers */
    const char *backend;           /* --backend: "mpi", "nccl", or NULL (nccl where GPUs are visible) */
    int gpu_offset;                /* --gpu-offset: GPU = (local rank + offset) mod GPUs */
    const char *mem;               /* --mem host|device; NULL: host for mpi, device for nccl */
    const char *csv, *json;        /* --csv, --json */
    int sizes_given;               /* which of -b/-e/--sizes/-f/-i the user set: PB_GIVEN_* */
    int gpu_offset_given;          /* --gpu-offset was set */
    const char *validate;          /* --validate N[:R][,N[:R]...]: the worlds to check the arguments for, and exit */
    int validate_count;            /* how many worlds it names (R defaults to N: one node); 0 = not asked */
} pb_options;

/* The i-th world of --validate (0 <= i < validate_count): N ranks, R per node. */
void pb_options_validate_world(const pb_options *o, int i, int *ranks, int *ranks_per_node);

enum { PB_GIVEN_MINB = 1, PB_GIVEN_MAXB = 2, PB_GIVEN_SIZES = 4, PB_GIVEN_FACTOR = 8, PB_GIVEN_STEP = 16 };

/* Defaults a benchmark may adjust before parsing. */
void pb_options_defaults(pb_options *o);

/* The common option group (ctx = the pb_options). `which` is a mask of
 * PB_OPTS_* selecting the options that make sense for the binary. */
enum {
    PB_OPTS_SWEEP = 1,   /* -b -e -f -i --sizes */
    PB_OPTS_ITERS = 2,   /* -n -w --max-seconds-per-size --timeout */
    PB_OPTS_REDUCE = 4,  /* -d -o -r */
    PB_OPTS_DATA = 8,    /* -c --rotate */
    PB_OPTS_OUTPUT = 16, /* --csv --json --backend --mem --gpu-offset */
    PB_OPTS_ALL = 31,
    PB_OPTS_VALIDATE = 32, /* --validate: a binary whose checks all run before pb_bench_open */
};
pb_options_group pb_options_common_group(pb_options *o, int which);

/* The pb_options behind a group made by pb_options_common_group, or NULL
 * for another group (the harness reads --validate through it). */
pb_options *pb_options_common_of(const pb_options_group *g);

/* After parsing: check combinations (-b <= -e, --sizes not with -b/-e/-f/-i,
 * -f not with -i, at most PB_MAX_SIZES sizes). */
int pb_options_validate(const pb_options *o);

/* Iteration counts per message size for the sweeps, in OSU's style: many
 * iterations for small messages, fewer for large ones. */
typedef struct pb_options_iter_policy {
    int small_iters, small_warmup; /* messages up to large_from - 1 bytes */
    int large_iters, large_warmup;
    size_t large_from;
} pb_options_iter_policy;

/* --max-seconds-per-size bounds a size's warm-up and timed iterations
 * together: warm-up ends after this share of the cap (at least one warm-up
 * iteration runs when any was asked for), and timed iterations stop when the
 * next one would end past the cap (at least one runs). */
#define PB_WARMUP_SHARE 0.25

#define PB_LARGE_MESSAGE 8192 /* OSU's split: sizes above 8 KiB are "large" */

/* OSU's collective counts: 1000 (+100 warm-up) up to 8 KiB, 100 (+10) above. */
extern const pb_options_iter_policy pb_policy_collective;

/* The counts for one size: -n and -w when given (for every size, as OSU's
 * -i and -x), else the policy's. */
void pb_options_iters_for(const pb_options *o, const pb_options_iter_policy *p, size_t bytes, int *iters, int *warmup);

/* The counts in words, for the metadata ("1000 (+100 warm-up) up to 8192 B, ..."). */
void pb_options_iters_describe(const pb_options *o, const pb_options_iter_policy *p, char *buf, size_t len);

/* The largest iteration count any size can get (for sample buffers). */
int pb_options_iters_max(const pb_options *o, const pb_options_iter_policy *p);

/* The number of sizes -b..-e by -f or -i gives (not capped), or --sizes's count. */
uint64_t pb_options_sweep_count(const pb_options *o);

/* The list of sizes to run: --sizes, or -b..-e by factor or by steps.
 * pb_options_validate has checked that they fit in PB_MAX_SIZES. */
size_t pb_options_sweep_sizes(const pb_options *o, uint64_t *out, size_t cap);

#endif
