#include "core/faults.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

int pb_faults_rank(const char *variable)
{
    const char *v = getenv(variable);
    if (!v || !*v) return -1;
    char *end;
    long r = strtol(v, &end, 10);
    return *end == '\0' && r >= 0 ? (int)r : -1;
}

/* 1 when `variable` is SITE:RANK with this site and this process's world rank. */
static int names_me(const char *variable, const char *site)
{
    const char *v = getenv(variable);
    const char *colon = v ? strrchr(v, ':') : NULL;
    if (!colon || (size_t)(colon - v) != strlen(site) || strncmp(v, site, strlen(site)) != 0) return 0;
    char *end;
    long r = strtol(colon + 1, &end, 10);
    int me = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    return colon[1] != '\0' && *end == '\0' && r == me;
}

int pb_faults_fail(const char *site) { return names_me("PARABENCH_TEST_FAIL", site); }

int pb_faults_hang(const char *site) { return names_me("PARABENCH_TEST_HANG", site); }
