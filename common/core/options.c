#include "core/options.h"

#include "core/error.h"
#include "core/outpath.h"
#include "core/parse.h"
#include "core/version.h"
#include "core/watchdog.h"

#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPTS 96
#define VERSION_ID 999 /* getopt's value for --version: no option letter */
#define LIST_ID 998    /* and for --list */

/* The tables --list prints (pb_options_add_list). */
static struct {
    const char *what;
    const char *const *names;
} lists[PB_OPTIONS_LISTS];
static int nlists;

void pb_options_add_list(const char *what, const char *const *names)
{
    int i = 0;
    while (i < nlists && strcmp(lists[i].what, what) != 0) i++;
    if (i == PB_OPTIONS_LISTS) return; /* a program has a few tables; more is a programming error caught by tests */
    lists[i].what = what;
    lists[i].names = names;
    if (i == nlists) nlists++;
}

/* The registered WHATs as prose ("backends or collectives") into buf. */
static const char *list_whats(char *buf, size_t len)
{
    const char *whats[PB_OPTIONS_LISTS + 1];
    for (int i = 0; i < nlists; i++) whats[i] = lists[i].what;
    whats[nlists] = NULL;
    return pb_parse_join_names(whats, buf, len);
}

static int print_list(const char *what)
{
    for (int i = 0; i < nlists; i++) {
        if (strcmp(lists[i].what, what) != 0) continue;
        for (const char *const *n = lists[i].names; *n; n++) printf("%s\n", *n);
        return PB_HELP_SHOWN;
    }
    char whats[128];
    return pb_error_usage("--list", "'%s' is not a list of this program; expected %s", what,
                          nlists ? list_whats(whats, sizeof whats) : "none (it chooses from no table)");
}

static void option_label(const pb_options_opt *o, char *buf, size_t len)
{
    if (o->short_name) snprintf(buf, len, "-%c/--%s", o->short_name, o->name);
    else snprintf(buf, len, "--%s", o->name);
}

static void print_help(const char *summary, const pb_options_group *groups, int ngroups)
{
    printf("%s\n", summary);
    for (int g = 0; g < ngroups; g++) {
        printf("\n%s:\n", groups[g].title);
        for (int i = 0; i < groups[g].nopts; i++) {
            const pb_options_opt *o = &groups[g].opts[i];
            char left[64];
            option_label(o, left, sizeof left);
            if (o->arg) {
                size_t n = strlen(left);
                snprintf(left + n, sizeof left - n, " %s", o->arg);
            }
            printf("  %-30s %s\n", left, o->help);
        }
    }
    if (nlists) {
        char whats[128], help[192];
        snprintf(help, sizeof help, "print the names of WHAT, one a line, and exit: %s", list_whats(whats, sizeof whats));
        printf("  %-30s %s\n", "--list WHAT", help);
    }
    printf("  %-30s %s\n", "-h/--help", "this help");
    printf("  %-30s %s\n", "--version", "print the version and exit");
}

int pb_options_parse(int argc, char **argv, const char *summary, const pb_options_group *groups, int ngroups)
{
    struct option longs[MAX_OPTS + 4] = {{0}}; /* zeroed: getopt_long reads up to the all-zero entry */
    const pb_options_opt *by_index[MAX_OPTS];
    const pb_options_group *group_of[MAX_OPTS];
    char shorts[3 * MAX_OPTS + 4] = ":h";
    int n = 0;
    for (int g = 0; g < ngroups; g++) {
        for (int i = 0; i < groups[g].nopts && n < MAX_OPTS; i++, n++) {
            const pb_options_opt *o = &groups[g].opts[i];
            longs[n] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL, 1000 + n};
            by_index[n] = o;
            group_of[n] = &groups[g];
            /* A table's defect, refused before any parse: getopt would take "-\x01" or a letter
             * claimed twice (-h is the help's) without a word, and the second option would never be reached. */
            int letter = o->short_name;
            if (letter && (letter < 0 || letter > 127 || !isalpha(letter) || strchr(shorts, letter)))
                return pb_fail(PB_ERR_USAGE, "option table: --%s's short name %d is not a letter, or is taken "
                               "already", o->name, o->short_name);
            if (o->short_name) {
                size_t len = strlen(shorts);
                shorts[len] = (char)o->short_name;
                shorts[len + 1] = '\0';
                if (o->arg) strcat(shorts, ":");
            }
        }
    }
    longs[n] = (struct option){"help", no_argument, NULL, 'h'};
    longs[n + 1] = (struct option){"version", no_argument, NULL, VERSION_ID};
    longs[n + 2] = (struct option){"list", required_argument, NULL, LIST_ID};
    longs[n + 3] = (struct option){0, 0, 0, 0};

    pb_outpath_reset();
    opterr = 0;
    optind = 0; /* 0, not 1: glibc then also resets its internal state from an earlier parse */
    int c, longindex;
    unsigned char given[MAX_OPTS] = {0};
    while ((c = getopt_long(argc, argv, shorts, longs, &longindex)) != -1) {
        if (c == 'h') {
            print_help(summary, groups, ngroups);
            return PB_HELP_SHOWN;
        }
        if (c == VERSION_ID) {
            printf("%s\n", pb_version_string());
            return PB_HELP_SHOWN;
        }
        if (c == LIST_ID) return print_list(optarg);
        if (c == '?' || c == ':') {
            const char *bad = argv[optind - 1];
            if (c == ':') return pb_error_usage(bad, "needs a value; see --help");
            return pb_error_usage(bad, "unknown option; see --help for the accepted ones");
        }
        int k = -1;
        if (c >= 1000) k = c - 1000;
        else
            for (int i = 0; i < n && k < 0; i++)
                if (by_index[i]->short_name == c) k = i;
        if (k < 0) return pb_error_usage(argv[optind - 1], "unknown option; see --help");
        char label[64];
        option_label(by_index[k], label, sizeof label);
        /* One way everywhere: a second value would silently override or merge with the first. */
        if (given[k]) return pb_error_usage(label, "is given twice; give it once");
        given[k] = 1;
        PB_TRY(group_of[k]->handle(group_of[k]->ctx, by_index[k]->id, label, optarg));
    }
    if (optind < argc) return pb_error_usage(argv[optind], "unexpected argument; options start with '-', see --help");
    return PB_OK;
}

int pb_options_once(const struct option *opts, unsigned char *seen, size_t nseen, int value)
{
    if (value < 0 || (size_t)value >= nseen) return PB_OK;
    if (!seen[value]) {
        seen[value] = 1;
        return PB_OK;
    }
    const char *name = "?";
    for (const struct option *o = opts; o->name; o++)
        if (o->val == value) {
            name = o->name;
            break;
        }
    char label[80];
    snprintf(label, sizeof label, "--%s", name);
    return pb_error_usage(label, "is given twice; give it once");
}

/* ---- common options ---- */

enum { O_MINB, O_MAXB, O_FACTOR, O_STEP, O_SIZES, O_ITERS, O_WARMUP, O_CAP, O_TIMEOUT, O_DTYPE, O_OP, O_ROOT, O_CHECK,
       O_ROTATE, O_CSV, O_JSON, O_BACKEND, O_MEM, O_GPU_OFFSET, O_VALIDATE };

/* Filled from the backend table (pb_options_set_backends). */
static char backend_help[512] = "the communication backend";
static pb_options_name_check backend_check;

void pb_options_set_backends(pb_options_name_check check, const char *help)
{
    backend_check = check;
    snprintf(backend_help, sizeof backend_help, "%s", help);
}

static const pb_options_opt common_opts[] = {
    {"minbytes", 'b', "SIZE", "smallest message size in bytes (K/M/G suffixes)", O_MINB},
    {"maxbytes", 'e', "SIZE", "largest message size in bytes", O_MAXB},
    {"stepfactor", 'f', "N", "multiply the size by N between steps (default 2)", O_FACTOR},
    {"stepbytes", 'i', "SIZE", "add SIZE between steps instead of multiplying", O_STEP},
    {"sizes", 0, "LIST", "explicit comma-separated sizes, e.g. 1K,12M (overrides -b/-e)", O_SIZES},
    {"iters", 'n', "N", "timed iterations per size (the same N for every size)", O_ITERS},
    {"warmup_iters", 'w', "N", "untimed warm-up iterations per size (the same N for every size)", O_WARMUP},
    {"max-seconds-per-size", 0, "SECS", "time cap on one size, warm-up included: warm-up stops after a quarter of "
                                        "it, timed iterations before the cap (0: no cap)", O_CAP},
    {"timeout", 0, "SECS", "abort with exit 4 when one operation hangs this long (default 300; 0: off)", O_TIMEOUT},
    {"datatype", 'd', "TYPE", "float, bfloat16, half or int32", O_DTYPE},
    {"op", 'o', "OP", "reduction: sum, max or min", O_OP},
    {"root", 'r', "RANK", "root rank of broadcast and reduce", O_ROOT},
    {"check", 'c', "0|1", "validate results (1) or not (0)", O_CHECK},
    {"rotate", 0, "0|1", "1: cold-cache mode, a new message-sized slot of a pool twice the cache at every iteration; "
                               "0 (default): the same buffers every time, as OSU and nccl-tests", O_ROTATE},
    {"csv", 0, "FILE", "write results as CSV", O_CSV},
    {"json", 0, "FILE", "write results and metadata as JSON", O_JSON},
    {"backend", 0, "NAME", backend_help, O_BACKEND},
    {"mem", 0, "WHERE", "host or device buffers; --backend mpi --mem device stages GPU buffers through the host, "
                        "so several ranks can share a GPU", O_MEM},
    {"gpu-offset", 0, "N", "use GPU (local rank + N) mod GPUs (default 0)", O_GPU_OFFSET},
    {"validate", 0, "N[:R][,...]", "check the arguments for a job of N ranks, R per node (default N), without MPI and "
                                   "without launching it: exit 0 when they would be accepted, else 2 with the message; "
                                   "several worlds, comma-separated, are checked one after another",
     O_VALIDATE},
};

static int group_of_opt(int id)
{
    if (id == O_VALIDATE) return PB_OPTS_VALIDATE;
    if (id <= O_SIZES) return PB_OPTS_SWEEP;
    if (id <= O_TIMEOUT) return PB_OPTS_ITERS;
    if (id <= O_ROOT) return PB_OPTS_REDUCE;
    if (id <= O_ROTATE) return PB_OPTS_DATA;
    return PB_OPTS_OUTPUT;
}

void pb_options_defaults(pb_options *o)
{
    memset(o, 0, sizeof *o);
    o->minbytes = 8;
    o->maxbytes = 64u << 20;
    o->stepfactor = 2;
    o->iters = 100;
    o->warmup = 10;
    o->check = 1;
    o->dtype = PB_FLOAT32;
    o->op = PB_SUM;
    o->max_seconds = 10;
    o->timeout = PB_DEFAULT_TIMEOUT_S;
    o->rotate = 0;
    o->backend = NULL;
}

/* One world of --validate, "N" or "N:R" (R ranks per node, the last node
 * holding what is left), from ITEM of length LEN. */
static int parse_world(const char *option, const char *item, size_t len, int *ranks_out, int *rpn_out)
{
    char n[32], r[32];
    const char *colon = memchr(item, ':', len);
    size_t nlen = colon ? (size_t)(colon - item) : len, rlen = colon ? len - nlen - 1 : 0;
    if (nlen >= sizeof n || rlen >= sizeof r)
        return pb_error_usage(option, "'%.*s' is not N or N:R (ranks, ranks per node)", (int)len, item);
    memcpy(n, item, nlen);
    n[nlen] = '\0';
    long long ranks, rpn;
    PB_TRY(pb_parse_int(option, n, 1, 1 << 20, &ranks));
    rpn = ranks;
    if (colon) {
        memcpy(r, colon + 1, rlen);
        r[rlen] = '\0';
        PB_TRY(pb_parse_int(option, r, 1, 1 << 20, &rpn));
    }
    *ranks_out = (int)ranks;
    *rpn_out = (int)(rpn < ranks ? rpn : ranks);
    return PB_OK;
}

/* The I-th comma-separated world of LIST; counts them in *count when I < 0. */
static int walk_worlds(const char *option, const char *list, int i, int *count, int *ranks, int *rpn)
{
    int k = 0;
    for (const char *p = list;; k++) {
        size_t len = strcspn(p, ",");
        int n = 0, r = 0;
        PB_TRY(parse_world(option, p, len, &n, &r));
        if (k == i) return *ranks = n, *rpn = r, PB_OK;
        if (p[len] == '\0') break;
        p += len + 1;
    }
    if (count) *count = k + 1;
    return PB_OK;
}

/* --validate N[:R][,N[:R]...]: every world is checked here, so that the
 * benchmark's later walk through them cannot fail. */
static int parse_validate(pb_options *o, const char *option, const char *arg)
{
    int count = 0, unused;
    PB_TRY(walk_worlds(option, arg, -1, &count, &unused, &unused));
    if (count > PB_VALIDATE_MAX)
        return pb_error_usage(option, "%d worlds; at most %d in one call", count, PB_VALIDATE_MAX);
    o->validate = arg;
    o->validate_count = count;
    return PB_OK;
}

void pb_options_validate_world(const pb_options *o, int i, int *ranks, int *ranks_per_node)
{
    walk_worlds("--validate", o->validate, i, NULL, ranks, ranks_per_node);
}

static int handle_common(void *ctx, int id, const char *option, const char *arg)
{
    pb_options *o = ctx;
    long long v;
    switch (id) {
    case O_MINB: o->sizes_given |= PB_GIVEN_MINB; return pb_parse_size(option, arg, PB_SIZE_MAX, &o->minbytes);
    case O_MAXB: o->sizes_given |= PB_GIVEN_MAXB; return pb_parse_size(option, arg, PB_SIZE_MAX, &o->maxbytes);
    case O_FACTOR: o->sizes_given |= PB_GIVEN_FACTOR; return pb_parse_int(option, arg, 2, 1024, &o->stepfactor);
    case O_STEP: o->sizes_given |= PB_GIVEN_STEP; return pb_parse_size(option, arg, PB_SIZE_MAX, &o->stepbytes);
    case O_SIZES:
        o->sizes_given |= PB_GIVEN_SIZES;
        return pb_parse_size_list(option, arg, PB_SIZE_MAX, o->sizes, PB_MAX_SIZES, &o->nsizes);
    case O_ITERS: PB_TRY(pb_parse_int(option, arg, 1, 100000000, &v)); o->iters = (int)v, o->iters_given = 1; return PB_OK;
    case O_WARMUP:
        PB_TRY(pb_parse_int(option, arg, 0, 100000000, &v));
        o->warmup = (int)v, o->warmup_given = 1;
        return PB_OK;
    case O_CAP: return pb_parse_double(option, arg, 0, 1e7, &o->max_seconds);
    case O_TIMEOUT: return pb_parse_double(option, arg, 0, 1e7, &o->timeout);
    case O_DTYPE: return pb_dtype_parse(option, arg, &o->dtype);
    case O_OP: o->op_given = 1; return pb_dtype_redop_parse(option, arg, &o->op);
    case O_ROOT: {
        const char *problem = pb_parse_decimal_problem(arg, 0);
        if (problem) return pb_error_usage(option, "'%s' %s; expected a rank (a decimal integer from 0)", arg, problem);
        o->root_text = arg;
        return PB_OK;
    }
    case O_CHECK: PB_TRY(pb_parse_int(option, arg, 0, 1, &v)); o->check = (int)v; return PB_OK;
    case O_ROTATE: PB_TRY(pb_parse_int(option, arg, 0, 1, &v)); o->rotate = (int)v; return PB_OK;
    case O_CSV: o->csv = arg; return pb_outpath_add(option, arg);
    case O_JSON: o->json = arg; return pb_outpath_add(option, arg);
    case O_BACKEND:
        if (backend_check) PB_TRY(backend_check(option, arg));
        o->backend = arg;
        return PB_OK;
    case O_MEM:
        if (strcmp(arg, "host") != 0 && strcmp(arg, "device") != 0)
            return pb_error_usage(option, "'%s' is not accepted; expected host or device", arg);
        o->mem = arg;
        return PB_OK;
    case O_GPU_OFFSET:
        PB_TRY(pb_parse_int(option, arg, 0, 1 << 16, &v));
        o->gpu_offset = (int)v, o->gpu_offset_given = 1;
        return PB_OK;
    case O_VALIDATE: return parse_validate(o, option, arg);
    default: return pb_error_usage(option, "not handled");
    }
}

pb_options_group pb_options_common_group(pb_options *o, int which)
{
    /* The selected options, in a static table per mask (binaries use one mask each). */
    static pb_options_opt selected[2 * PB_OPTS_VALIDATE][sizeof common_opts / sizeof common_opts[0]];
    static int counts[2 * PB_OPTS_VALIDATE];
    int mask = which & (PB_OPTS_ALL | PB_OPTS_VALIDATE);
    if (counts[mask] == 0)
        for (size_t i = 0; i < sizeof common_opts / sizeof common_opts[0]; i++)
            if (group_of_opt(common_opts[i].id) & mask) selected[mask][counts[mask]++] = common_opts[i];
    return (pb_options_group){"Common options", selected[mask], counts[mask], handle_common, o};
}

/* --sizes replaces the -b..-e sweep: an option of that sweep would be ignored. */
static const char *sweep_option_given(int given)
{
    if (given & PB_GIVEN_MINB) return "-b/--minbytes";
    if (given & PB_GIVEN_MAXB) return "-e/--maxbytes";
    if (given & PB_GIVEN_FACTOR) return "-f/--stepfactor";
    if (given & PB_GIVEN_STEP) return "-i/--stepbytes";
    return NULL;
}

int pb_options_validate(const pb_options *o)
{
    const char *ignored = sweep_option_given(o->sizes_given);
    if ((o->sizes_given & PB_GIVEN_SIZES) && ignored)
        return pb_error_usage(ignored, "does not apply with --sizes, which lists every size; expected one or the other");
    if ((o->sizes_given & PB_GIVEN_FACTOR) && (o->sizes_given & PB_GIVEN_STEP))
        return pb_error_usage("-f/--stepfactor", "does not apply with -i/--stepbytes (additive steps); expected one "
                                                 "or the other");
    if (o->nsizes == 0 && o->minbytes > o->maxbytes)
        return pb_error_usage("-b/--minbytes", "%llu is larger than -e/--maxbytes %llu", (unsigned long long)o->minbytes,
                        (unsigned long long)o->maxbytes);
    uint64_t n = pb_options_sweep_count(o);
    if (n > PB_MAX_SIZES)
        return pb_error_usage(o->stepbytes ? "-i/--stepbytes" : "-f/--stepfactor",
                              "-b %llu to -e %llu gives %llu sizes; at most %d are measured in one run; expected a "
                              "larger step or a narrower range", (unsigned long long)o->minbytes,
                              (unsigned long long)o->maxbytes, (unsigned long long)n, PB_MAX_SIZES);
    return PB_OK;
}

const pb_options_iter_policy pb_policy_collective = {1000, 100, 100, 10, PB_LARGE_MESSAGE + 1};

void pb_options_iters_for(const pb_options *o, const pb_options_iter_policy *p, size_t bytes, int *iters, int *warmup)
{
    int large = bytes >= p->large_from;
    *iters = o->iters_given ? o->iters : large ? p->large_iters : p->small_iters;
    *warmup = o->warmup_given ? o->warmup : large ? p->large_warmup : p->small_warmup;
}

void pb_options_iters_describe(const pb_options *o, const pb_options_iter_policy *p, char *buf, size_t len)
{
    int small_n, small_w, large_n, large_w;
    pb_options_iters_for(o, p, 0, &small_n, &small_w);
    pb_options_iters_for(o, p, p->large_from, &large_n, &large_w);
    double cap = o->max_seconds;
    char capped[64] = "";
    if (cap > 0) snprintf(capped, sizeof capped, "; at most %g s per size, warm-up included", cap);
    if (small_n == large_n && small_w == large_w)
        snprintf(buf, len, "%d (+%d warm-up) at every size%s", small_n, small_w, capped);
    else
        snprintf(buf, len, "%d (+%d warm-up) up to %zu B, %d (+%d warm-up) above%s", small_n, small_w,
                 p->large_from - 1, large_n, large_w, capped);
}

int pb_options_iters_max(const pb_options *o, const pb_options_iter_policy *p)
{
    if (o->iters_given) return o->iters;
    return p->small_iters > p->large_iters ? p->small_iters : p->large_iters;
}

uint64_t pb_options_sweep_count(const pb_options *o)
{
    if (o->nsizes) return o->nsizes;
    if (o->minbytes > o->maxbytes) return 0;
    if (o->stepbytes) return (o->maxbytes - o->minbytes) / o->stepbytes + 1;
    uint64_t n = 0;
    for (uint64_t s = o->minbytes; s <= o->maxbytes; s *= (uint64_t)o->stepfactor) {
        n++;
        if (s > o->maxbytes / (uint64_t)o->stepfactor) break; /* the next would pass -e (or overflow) */
    }
    return n;
}

size_t pb_options_sweep_sizes(const pb_options *o, uint64_t *out, size_t cap)
{
    if (o->nsizes) {
        memcpy(out, o->sizes, sizeof(uint64_t) * (o->nsizes < cap ? o->nsizes : cap));
        return o->nsizes < cap ? o->nsizes : cap;
    }
    size_t n = 0;
    for (uint64_t s = o->minbytes; s <= o->maxbytes && n < cap;) {
        out[n++] = s;
        uint64_t next = o->stepbytes ? s + o->stepbytes : s * (uint64_t)o->stepfactor;
        if (next <= s) break; /* overflow guard */
        s = next;
    }
    return n;
}

pb_options *pb_options_common_of(const pb_options_group *g)
{
    return g->handle == handle_common ? g->ctx : NULL;
}
