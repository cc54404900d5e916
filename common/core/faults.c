#include "core/faults.h"

#include <stdlib.h>

int pb_fault_rank(const char *variable)
{
    const char *v = getenv(variable);
    if (!v || !*v) return -1;
    char *end;
    long r = strtol(v, &end, 10);
    return *end == '\0' && r >= 0 ? (int)r : -1;
}
