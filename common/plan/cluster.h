/* Cluster presets for the planner: a node kind (GPUs, NVLink, compute rate,
 * memory) joined with a network between nodes, named NODE or NODE-NET:
 *   a100, h100                  (default networks: ib200, ib400)
 *   a100-ib100 ... h100-opa     (ib100, ib200, ib400, eth100: one rail a GPU;
 *                                opa: 4 x 100 Gb/s Omni-Path a node)
 * Every number is a nominal datasheet figure; docs/plan.md lists them. */
#ifndef PB_CLUSTER_H
#define PB_CLUSTER_H

#include "plan/model.h"

/* Sustained GEMM rate as a fraction of dense bf16 peak. Set, with
 * PB_MODEL_ELEMENTWISE_TRAFFIC, from the end-to-end iteration times of
 * Korthikanti et al. 2022 (table 5) and checked on the held-out runs of
 * Narayanan et al. 2021 (table 1); docs/plan.md shows both. */
#define PB_CLUSTER_GEMM_EFFICIENCY 0.73

/* Parse a preset name into `out`. PB_OK or PB_ERR_USAGE naming `option`. */
int pb_cluster_preset(const char *name, const char *option, pb_model_cluster *out);

/* "a100, h100 (optionally -ib100, -ib200, -ib400, -eth100, -opa)" for messages. */
const char *pb_cluster_preset_names(void);

/* A cluster file (plan --calibrate writes one): '#' comments, blank lines and
 * "key = value" lines. Keys: name, gpus_per_node, intra_alpha_us,
 * intra_bw_GBps, inter_alpha_us, inter_bw_GBps, tflops (sustained), mem_GB.
 * intra_bw_GBps and tflops are required; inter_* default to intra_*,
 * gpus_per_node to 1, mem_GB to 16. Returns PB_OK, PB_ERR_ENV when the file
 * cannot be read, PB_ERR_USAGE naming `option`, the file and the line. */
int pb_cluster_file_read(const char *path, const char *option, pb_model_cluster *out);

/* Write `c` in that format (a '# ' comment line `note` first when non-NULL).
 * PB_OK or PB_ERR_ENV. */
int pb_cluster_file_write(const char *path, const pb_model_cluster *c, const char *note);

/* A preset name, or a readable file (pb_cluster_file_read) when `name` is one. */
int pb_cluster_lookup(const char *name, const char *option, pb_model_cluster *out);

/* One line: "a100-ib200: 8 GPU/node, intra 300 GB/s 2.0 us, inter 25 GB/s 5.0 us, 156 TFLOP/s, 80 GB". */
void pb_cluster_describe(const pb_model_cluster *c, char *buf, int len);

#endif
