#include "plan/cluster.h"

#include "core/error.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    const char *net; /* default network */
    int gpus;
    double nvlink_GBps, nvlink_us, peak_tflops, mem_GB, hbm_GBps;
} node_kind;

typedef struct {
    const char *name;
    double GBps, us;
} net_kind;

/* NVLink: per-GPU, per-direction bandwidth (half the "600/900 GB/s
 * aggregate" datasheet figure, which counts both directions). Peak is dense
 * bf16 tensor-core FLOP/s; HBM is the memory bandwidth element-wise work
 * streams at. A100 and H100 SXM 80 GB datasheets. */
static const node_kind nodes[] = {
    {"a100", "ib200", 8, 300.0, 2.0, 312.0, 80.0, 2039.0},
    {"h100", "ib400", 8, 450.0, 2.0, 989.0, 80.0, 3350.0},
};

/* One NIC rail per GPU (as in DGX A100 / H100); line rate / 8 bits. */
static const net_kind nets[] = {
    {"ib100", 12.5, 5.0},
    {"ib200", 25.0, 5.0},
    {"ib400", 50.0, 5.0},
    {"eth100", 12.5, 15.0},
};

const char *pb_cluster_preset_names(void)
{
    return "a100, h100, optionally with -ib100, -ib200, -ib400 or -eth100 (e.g. a100-eth100)";
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
        out->inter = (pb_model_link){net->us * 1e-6, net->GBps * 1e9};
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
             "%s: %d GPU/node, intra %.1f GB/s %.1f us, inter %.2f GB/s %.1f us, %.0f TFLOP/s sustained GEMM, "
             "%.0f GB/s memory, %.0f GB",
             c->name, c->gpus_per_node, c->intra.bw_Bps / 1e9, c->intra.alpha_s * 1e6, c->inter.bw_Bps / 1e9,
             c->inter.alpha_s * 1e6, c->flops / 1e12, c->mem_bw / 1e9, c->mem_bytes / 1e9);
}
