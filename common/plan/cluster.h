/* Cluster presets for the planner: a node kind (GPUs, NVLink, compute rate,
 * memory) joined with a network between nodes, named NODE or NODE-NET:
 *   a100, h100                  (default networks: ib200, ib400)
 *   a100-ib100 ... h100-eth100  (ib100, ib200, ib400, eth100)
 * Every number is a nominal datasheet figure; docs/plan.md lists them. */
#ifndef PB_CLUSTER_H
#define PB_CLUSTER_H

#include "plan/model.h"

/* Sustained GEMM rate as a fraction of dense bf16 peak. Set, with
 * PB_MODEL_ELEMENTWISE_TRAFFIC, from the end-to-end iteration times of
 * Korthikanti et al. 2022 (table 5) and checked on the held-out runs of
 * Narayanan et al. 2021 (table 1); docs/plan.md shows both. */
#define PB_CLUSTER_GEMM_EFFICIENCY 0.71

/* Parse a preset name into `out`. PB_OK or PB_ERR_USAGE naming `option`. */
int pb_cluster_preset(const char *name, const char *option, pb_model_cluster *out);

/* "a100, h100 (optionally -ib100, -ib200, -ib400, -eth100)" for messages. */
const char *pb_cluster_preset_names(void);

/* One line: "a100-ib200: 8 GPU/node, intra 300 GB/s 2.0 us, inter 25 GB/s 5.0 us, 156 TFLOP/s, 80 GB". */
void pb_cluster_describe(const pb_model_cluster *c, char *buf, int len);

#endif
