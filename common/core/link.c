#include "core/link.h"

#include <string.h>

static const char *const names[PB_LINK_NCLASS] = {"intra", "inter", "mixed"};

const char *pb_link_name(pb_link_class k) { return k >= 0 && k < PB_LINK_NCLASS ? names[k] : "?"; }

int pb_link_parse(const char *name)
{
    for (int k = 0; name && k < PB_LINK_NCLASS; k++)
        if (strcmp(name, names[k]) == 0) return k;
    return -1;
}

pb_link_class pb_link_join(pb_link_class a, pb_link_class b) { return a == b ? a : PB_LINK_MIXED; }
