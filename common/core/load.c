#include "core/load.h"

#include "core/error.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

int pb_load_parse_stat(const char *line, long ticks, pb_load *out)
{
    unsigned long long v[8] = {0};
    memset(out, 0, sizeof *out);
    if (ticks <= 0 || strncmp(line, "cpu ", 4) != 0) return PB_ERR_USAGE;
    /* user nice system idle iowait irq softirq steal (guest time is inside user) */
    int n = sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                   &v[6], &v[7]);
    if (n < 4) return PB_ERR_USAGE;
    double t = (double)ticks, total = 0;
    for (int i = 0; i < n; i++) total += (double)v[i];
    out->total_s = total / t;
    out->steal_s = (double)v[7] / t;
    out->busy_s = (double)(v[0] + v[1] + v[2] + v[5] + v[6]) / t;
    out->ok = 1;
    return PB_OK;
}

void pb_load_sample(pb_load *out)
{
    char line[512] = "";
    FILE *f = fopen("/proc/stat", "r");
    int got = f && fgets(line, sizeof line, f) != NULL;
    if (f) fclose(f);
    if (!got || pb_load_parse_stat(line, sysconf(_SC_CLK_TCK), out) != PB_OK) memset(out, 0, sizeof *out);
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        out->ours_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
                      (double)ru.ru_stime.tv_usec * 1e-6;
}

static double share(double part, double whole)
{
    double s = part / whole;
    return s < 0 ? 0 : s > 1 ? 1 : s;
}

int pb_load_share_of(const pb_load *a, const pb_load *b, double ours_s, pb_load_share *out)
{
    memset(out, 0, sizeof *out);
    double total = b->total_s - a->total_s;
    if (!a->ok || !b->ok || !(total > 0)) return PB_ERR_USAGE;
    out->others = share(b->busy_s - a->busy_s - ours_s, total);
    out->steal = share(b->steal_s - a->steal_s, total);
    return PB_OK;
}
