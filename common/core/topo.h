/* What hwloc says about this node: cores, NUMA nodes, and where this process
 * is bound. Used for metadata and to detect oversubscription, which distorts
 * compute timings and must be reported, not hidden. */
#ifndef PB_TOPO_H
#define PB_TOPO_H

#include <stddef.h>

typedef struct pb_topo {
    int packages, cores, pus, numa_nodes;
    char binding[128]; /* e.g. "0-1" (PU indexes this process may run on), "unbound" */
    char cpu_model[96];
} pb_topo;

/* Fill `t` from hwloc. Returns PB_OK, or PB_ERR_ENV when hwloc cannot load the topology. */
int pb_topo_read(pb_topo *t);

/* Size of the largest cache hwloc reports on this node (the last level; in a
 * VM hwloc reads the guest's topology, where sysconf may report the host's);
 * 0 when hwloc reports none. Loaded once per process. */
size_t pb_topo_llc_bytes(void);

#endif
