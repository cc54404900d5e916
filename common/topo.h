/* What hwloc says about this node: cores, NUMA nodes, and where this process
 * is bound. Used for metadata and to detect oversubscription, which distorts
 * compute timings and must be reported, not hidden. */
#ifndef PB_TOPO_H
#define PB_TOPO_H

typedef struct pb_topo {
    int packages, cores, pus, numa_nodes;
    char binding[128]; /* e.g. "0-1" (PU indexes this process may run on), "unbound" */
    char cpu_model[96];
} pb_topo;

/* Fill `t` from hwloc. Returns PB_OK, or PB_ERR_ENV when hwloc cannot load the topology. */
int pb_topo_read(pb_topo *t);

#endif
