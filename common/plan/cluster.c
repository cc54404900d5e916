#include "plan/cluster.h"

#include "core/atomic.h"
#include "core/error.h"
#include "core/lines.h"
#include "core/parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
    const char *name;
    const char *net; /* default network */
    int gpus;
    double nvlink_GBps, nvlink_us, peak_tflops, mem_GB, hbm_GBps;
} node_kind;

typedef struct {
    const char *name;
    double GBps, us;
    int links; /* links per node its GPUs share; 0: one rail per GPU */
} net_kind;

/* NVLink: per-GPU, per-direction bandwidth (half the "600/900 GB/s
 * aggregate" datasheet figure, which counts both directions). Peak is dense
 * bf16 tensor-core FLOP/s; HBM is the memory bandwidth element-wise work
 * streams at. A100 and H100 SXM 80 GB datasheets. */
static const node_kind nodes[] = {
    {"a100", "ib200", 8, 300.0, 2.0, 312.0, 80.0, 2039.0},
    {"h100", "ib400", 8, 450.0, 2.0, 989.0, 80.0, 3350.0},
};

/* One NIC rail per GPU (as in DGX A100 / H100); line rate / 8 bits. opa:
 * 4 Omni-Path 100 Gb/s links a node (Jean Zay's A100 nodes, where BLOOM
 * trained), shared by the node's GPUs. */
static const net_kind nets[] = {
    {"ib100", 12.5, 5.0, 0},
    {"ib200", 25.0, 5.0, 0},
    {"ib400", 50.0, 5.0, 0},
    {"eth100", 12.5, 15.0, 0},
    {"opa", 12.5, 5.0, 4},
};

const char *pb_cluster_preset_names(void)
{
    return "a100, h100, optionally with -ib100, -ib200, -ib400, -eth100 or -opa (e.g. a100-eth100)";
}

static const net_kind *find_net(const char *name)
{
    for (size_t i = 0; i < sizeof nets / sizeof nets[0]; i++)
        if (strcmp(nets[i].name, name) == 0) return &nets[i];
    return NULL;
}

int pb_cluster_preset(const char *name, const char *option, pb_model_cluster *out)
{
    for (size_t i = 0; name && i < sizeof nodes / sizeof nodes[0]; i++) {
        const node_kind *k = &nodes[i];
        size_t len = strlen(k->name);
        if (strncmp(name, k->name, len) != 0) continue;
        const char *suffix = name + len;
        if (*suffix != '\0' && *suffix != '-') continue;
        const net_kind *net = find_net(*suffix ? suffix + 1 : k->net);
        if (!net) break;
        memset(out, 0, sizeof *out);
        snprintf(out->name, sizeof out->name, "%s-%s", k->name, net->name);
        out->gpus_per_node = k->gpus;
        out->intra = (pb_model_link){k->nvlink_us * 1e-6, k->nvlink_GBps * 1e9};
        double per_gpu = net->links ? net->GBps * net->links / k->gpus : net->GBps;
        out->inter = (pb_model_link){net->us * 1e-6, per_gpu * 1e9};
        out->flops = k->peak_tflops * 1e12 * PB_CLUSTER_GEMM_EFFICIENCY;
        out->mem_bw = k->hbm_GBps * 1e9;
        out->mem_bytes = k->mem_GB * 1e9;
        return PB_OK;
    }
    return pb_error_usage(option, "unknown cluster '%s'; accepted: %s", name ? name : "", pb_cluster_preset_names());
}

void pb_cluster_describe(const pb_model_cluster *c, char *buf, int len)
{
    snprintf(buf, (size_t)len,
             "%s: %d GPU/node, intra %.1f GB/s %.1f us, inter %.2f GB/s %.1f us, %.4g TFLOP/s sustained GEMM, "
             "%.0f GB/s memory, %.0f GB",
             c->name, c->gpus_per_node, c->intra.bw_Bps / 1e9, c->intra.alpha_s * 1e6, c->inter.bw_Bps / 1e9,
             c->inter.alpha_s * 1e6, c->flops / 1e12, c->mem_bw / 1e9, c->mem_bytes / 1e9);
}

/* ---- cluster files: "key = value" lines ---- */

typedef struct {
    const char *key;
    double scale; /* file unit -> the model's SI unit */
    size_t offset;
    int required;
    int zero_ok; /* a latency may be 0, and memory bandwidth (0: not modeled); a rate may not */
} cluster_key;

#define FIELD(f) offsetof(pb_model_cluster, f)
static const cluster_key keys[] = {
    {"intra_alpha_us", 1e-6, FIELD(intra.alpha_s), 0, 1},
    {"intra_bw_GBps", 1e9, FIELD(intra.bw_Bps), 1, 0},
    {"inter_alpha_us", 1e-6, FIELD(inter.alpha_s), 0, 1},
    {"inter_bw_GBps", 1e9, FIELD(inter.bw_Bps), 0, 0},
    {"tflops", 1e12, FIELD(flops), 1, 0},
    {"mem_GB", 1e9, FIELD(mem_bytes), 0, 0},
    {"hbm_GBps", 1e9, FIELD(mem_bw), 0, 1},
};
#define NKEYS (sizeof keys / sizeof keys[0])

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

/* The value of `key` as a finite number in the model's unit: the one strict
 * decimal form (core/parse.h), and still finite once scaled (1e300 TFLOP/s
 * is finite, 1e312 FLOP/s is not). */
static int parse_value(const char *val, double scale, double *si)
{
    if (pb_parse_decimal_problem(val, 1)) return 0;
    errno = 0;
    double v = strtod(val, NULL);
    *si = v * scale;
    return errno == 0 && isfinite(v) && isfinite(*si);
}

/* A key given twice would leave one of its values silently unused. */
static int once(int seen[NKEYS + 2], size_t k, const char *key, const char *where, const char *option)
{
    if (seen[k]) return pb_error_usage(option, "%s: key '%s' is given twice (first on line %d); expected it once",
                                       where, key, seen[k]);
    return PB_OK;
}

/* One "key = value" line into `c`; `seen` holds the line each key was given on. */
static int parse_line(char *line, int lineno, pb_model_cluster *c, int seen[NKEYS + 2], const char *where,
                      const char *option)
{
    char *eq = strchr(line, '=');
    if (!eq) return pb_error_usage(option, "%s: expected 'key = value', got '%s'", where, line);
    *eq = '\0';
    char *key = trim(line), *val = trim(eq + 1);
    if (strcmp(key, "name") == 0) {
        PB_TRY(once(seen, NKEYS, key, where, option));
        snprintf(c->name, sizeof c->name, "%s", val);
        seen[NKEYS] = lineno;
        return PB_OK;
    }
    if (strcmp(key, "gpus_per_node") == 0) {
        double v = 0;
        int ok = parse_value(val, 1, &v);
        PB_TRY(once(seen, NKEYS + 1, key, where, option));
        if (!ok || v < 1 || v > 1024 || v != (int)v)
            return pb_error_usage(option, "%s: gpus_per_node '%s' is not an integer from 1 to 1024", where, val);
        c->gpus_per_node = (int)v;
        seen[NKEYS + 1] = lineno;
        return PB_OK;
    }
    for (size_t i = 0; i < NKEYS; i++) {
        if (strcmp(key, keys[i].key) != 0) continue;
        PB_TRY(once(seen, i, key, where, option));
        int zero_ok = keys[i].zero_ok;
        double si = 0;
        if (!parse_value(val, keys[i].scale, &si))
            return pb_error_usage(option, "%s: %s '%s' is not a decimal number that stays finite in the model's "
                                  "unit; expected a %s number", where, key, val, zero_ok ? "non-negative" : "positive");
        if (si < 0 || (si == 0 && !zero_ok))
            return pb_error_usage(option, "%s: %s '%s' is not a %s number", where, key, val,
                                  zero_ok ? "non-negative" : "positive");
        memcpy((char *)c + keys[i].offset, &si, sizeof si); /* the field at offset is a double */
        seen[i] = lineno;
        return PB_OK;
    }
    return pb_error_usage(option, "%s: unknown key '%s'; accepted: name, gpus_per_node, intra_alpha_us, intra_bw_GBps, "
                                  "inter_alpha_us, inter_bw_GBps, tflops, mem_GB, hbm_GBps", where, key);
}

int pb_cluster_file_read(const char *path, const char *option, pb_model_cluster *out)
{
    pb_lines r;
    PB_TRY(pb_lines_open(&r, path, option));
    pb_model_cluster c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "file");
    int seen[NKEYS + 2] = {0}, st = PB_OK;
    char *line = NULL, where[1200];
    while ((st = pb_lines_next(&r, &line)) == PB_OK && line) {
        snprintf(where, sizeof where, "%s:%d", path, r.lineno);
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *s = trim(line);
        if (*s) st = parse_line(s, r.lineno, &c, seen, where, option);
        if (st != PB_OK) break;
    }
    pb_lines_close(&r);
    for (size_t i = 0; st == PB_OK && i < NKEYS; i++)
        if (keys[i].required && !seen[i])
            st = pb_error_usage(option, "%s: missing key '%s'", path, keys[i].key);
    if (st != PB_OK) return st;
    if (!seen[NKEYS + 1]) c.gpus_per_node = 1;
    if (!seen[2]) c.inter.alpha_s = c.intra.alpha_s;
    if (!seen[3]) c.inter.bw_Bps = c.intra.bw_Bps;
    if (!seen[5]) c.mem_bytes = 16e9;
    *out = c;
    return PB_OK;
}

int pb_cluster_file_write(const char *path, const pb_model_cluster *c, const char *note)
{
    char tmp[4096];
    FILE *fp = pb_atomic_open(path, tmp, sizeof tmp); /* the old file stays until this one is whole */
    if (!fp) return PB_ERR_ENV;
    if (note) fprintf(fp, "# %s\n", note);
    fprintf(fp, "name = %s\ngpus_per_node = %d\n", c->name, c->gpus_per_node);
    for (size_t i = 0; i < NKEYS; i++) {
        double si;
        memcpy(&si, (const char *)c + keys[i].offset, sizeof si);
        fprintf(fp, "%s = %.6g\n", keys[i].key, si / keys[i].scale);
    }
    return pb_atomic_commit(fp, tmp, path, !ferror(fp));
}

int pb_cluster_lookup(const char *name, const char *option, pb_model_cluster *out)
{
    struct stat sb;
    if (name && stat(name, &sb) == 0 && S_ISREG(sb.st_mode)) return pb_cluster_file_read(name, option, out);
    return pb_cluster_preset(name, option, out);
}
