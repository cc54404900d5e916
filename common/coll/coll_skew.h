/* The per-destination counts of the uneven all-to-all (alltoallv), as a
 * mixture-of-experts dispatch puts it on the network: one hot destination.
 *
 * Every sender sends its whole buffer of `count` elements, split over the
 * nranks destinations in units of PB_COLL_SKEW_UNIT elements. With
 * m = count / (unit * nranks) units per destination on average:
 *   destination 0 (the hot one) gets H = min(round(F * m), n * m) units,
 *   destinations 1..n-1 share the other n * m - H units, the first
 *   (n * m - H) mod (n - 1) of them one unit more.
 * Every sender uses the same counts, so receiver d gets nranks blocks of
 * c[d] elements: the hot receiver gets n * H * unit elements, F times the
 * mean (count) within rounding (imbalance = H / m), and every sender still
 * sends count elements (algbw stays comparable with alltoall). F = 1 is the
 * even alltoall.
 *
 * The unit is 12 elements, the period of the validation inputs
 * (coll_expect.h): every block starts at a multiple of it, so a block's
 * values do not depend on where it starts and the check needs only the
 * receive count. Plain C, no MPI. */
#ifndef PB_COLL_SKEW_H
#define PB_COLL_SKEW_H

#include <stddef.h>

#define PB_COLL_SKEW_UNIT 12

/* Whether F is a skew over nranks: 1 <= F <= nranks (all to one). */
int pb_coll_skew_valid(double skew, int nranks);

/* The split itself, in whole units: `units` over `parts` destinations,
 * part 0 getting H = min(max(round(F * m), m), units) with m = units / parts
 * (integer division), the others the rest as above. A mixture-of-experts
 * router's load over its experts is the same split (workload/moe.h). */
size_t pb_coll_skew_split(size_t units, int parts, double skew, int d);

/* Elements every sender sends to destination d (count a multiple of
 * PB_COLL_SKEW_UNIT * nranks, skew valid). */
size_t pb_coll_skew_count_to(size_t count, int nranks, double skew, int d);

/* Elements rank d receives: nranks blocks of pb_coll_skew_count_to(d). */
size_t pb_coll_skew_recv_count(size_t count, int nranks, double skew, int d);

/* The achieved imbalance: the heaviest receiver's elements over the mean
 * (count); 1 for an even split. */
double pb_coll_skew_imbalance(size_t count, int nranks, double skew);

#endif
