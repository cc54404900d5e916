#include "core/topo.h"

#include "core/error.h"

#include <hwloc.h>
#include <string.h>

static int count(hwloc_topology_t topo, hwloc_obj_type_t type)
{
    int n = hwloc_get_nbobjs_by_type(topo, type);
    return n > 0 ? n : 0;
}

static void read_binding(hwloc_topology_t topo, pb_topo *t)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    strcpy(t->binding, "unknown");
    if (set && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
        hwloc_const_bitmap_t all = hwloc_topology_get_topology_cpuset(topo);
        if (hwloc_bitmap_isincluded(all, set)) strcpy(t->binding, "unbound");
        else hwloc_bitmap_list_snprintf(t->binding, sizeof t->binding, set);
    }
    hwloc_bitmap_free(set);
}

int pb_topo_read(pb_topo *t)
{
    memset(t, 0, sizeof *t);
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0)
        return pb_fail(PB_ERR_ENV, "hwloc could not load this node's topology");
    t->packages = count(topo, HWLOC_OBJ_PACKAGE);
    t->cores = count(topo, HWLOC_OBJ_CORE);
    t->pus = count(topo, HWLOC_OBJ_PU);
    t->numa_nodes = count(topo, HWLOC_OBJ_NUMANODE);
    if (t->cores == 0) t->cores = t->pus; /* some VMs expose no core level */
    hwloc_obj_t pkg = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, 0);
    const char *model = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : NULL;
    snprintf(t->cpu_model, sizeof t->cpu_model, "%s", model ? model : "unknown");
    read_binding(topo, t);
    hwloc_topology_destroy(topo);
    return PB_OK;
}

size_t pb_topo_llc_bytes(void)
{
    static size_t cached;
    static int loaded;
    if (loaded) return cached;
    loaded = 1;
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0) return 0;
    if (hwloc_topology_load(topo) == 0) {
        const hwloc_obj_type_t levels[] = {HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L1CACHE};
        for (size_t i = 0; i < sizeof levels / sizeof levels[0] && cached == 0; i++) {
            hwloc_obj_t c = hwloc_get_obj_by_type(topo, levels[i], 0);
            if (c && c->attr) cached = (size_t)c->attr->cache.size;
        }
    }
    hwloc_topology_destroy(topo);
    return cached;
}
