#include "coll/coll_skew.h"

#include <math.h>

int pb_coll_skew_valid(double skew, int nranks) { return nranks >= 1 && skew >= 1.0 && skew <= (double)nranks; }

/* Units to the hot destination: round(F * m), at least m, at most everything. */
static size_t hot_units(size_t units, int nranks, double skew)
{
    size_t mean = units / (size_t)nranks;
    double want = floor(skew * (double)mean + 0.5);
    size_t hot = want >= (double)units ? units : (size_t)want;
    return hot < mean ? mean : hot;
}

size_t pb_coll_skew_split(size_t units, int parts, double skew, int d)
{
    size_t hot = hot_units(units, parts, skew);
    if (d == 0) return hot;
    size_t others = (size_t)parts - 1, rest = units - hot;
    return rest / others + ((size_t)(d - 1) < rest % others ? 1 : 0);
}

size_t pb_coll_skew_count_to(size_t count, int nranks, double skew, int d)
{
    return pb_coll_skew_split(count / PB_COLL_SKEW_UNIT, nranks, skew, d) * PB_COLL_SKEW_UNIT;
}

size_t pb_coll_skew_recv_count(size_t count, int nranks, double skew, int d)
{
    return (size_t)nranks * pb_coll_skew_count_to(count, nranks, skew, d);
}

double pb_coll_skew_imbalance(size_t count, int nranks, double skew)
{
    return count ? (double)pb_coll_skew_recv_count(count, nranks, skew, 0) / (double)count : 1.0;
}
