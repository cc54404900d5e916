/* Metadata every output carries: command line, date, hosts and ranks per host,
 * rank -> node map and binding, backend and library versions, hwloc summary,
 * git revision, and whether any node runs more ranks than it has cores. */
#ifndef PB_META_H
#define PB_META_H

#include "backend/comm.h"
#include "core/world.h"

#include <cjson/cJSON.h>
#include <stdio.h>

typedef struct pb_meta_info {
    int oversubscribed; /* some node has more ranks than cores */
    int max_ranks_per_node, min_cores_per_node;
} pb_meta_info;

/* Collective over the world. Sets *out to the metadata object on rank 0 (NULL
 * on other ranks; the caller owns it) and fills `info` on every rank. Returns
 * a status agreed by every rank (out of memory on one: PB_ERR_ENV on all). */
int pb_meta_collect(const pb_world *w, const pb_comm_backend *b, int argc, char **argv, pb_meta_info *info,
                    cJSON **out);

/* Print the metadata as "# key: value" lines (the table preamble). PB_ERR_ENV
 * (said) when out of memory cut a line short, PB_OK otherwise. */
int pb_meta_print(FILE *f, const cJSON *meta);

#endif
