#include "coll/p2p_schedule.h"

#include "core/error.h"
#include "core/grow.h"

#include <stdlib.h>

typedef struct builder {
    pb_p2p_schedule_pair *pairs;
    int n, cap, status;
} builder;

static void add(builder *b, int x, int y, int round)
{
    pb_p2p_schedule_pair *p = pb_grow(b->pairs, &b->cap, b->n, sizeof *p, 256);
    if (!p) {
        b->status = PB_ERR_ENV;
        return;
    }
    b->pairs = p;
    b->pairs[b->n++] = (pb_p2p_schedule_pair){x < y ? x : y, x < y ? y : x, round};
}

/* Round t of the circle method over m players (m even): player 0 stays, the
 * others rotate; slot i meets slot m-1-i. Writes the m/2 meetings to mate[]. */
static void circle_round(int m, int t, int *first, int *second)
{
    for (int i = 0; i < m / 2; i++) {
        int x = i == 0 ? 0 : 1 + (i - 1 + t) % (m - 1);
        int y = 1 + (m - 2 - i + t) % (m - 1);
        first[i] = x;
        second[i] = y;
    }
}

/* Rounds of a round-robin among m players: m - 1 for even m, m for odd m (a bye each round). */
static int tournament_rounds(int m) { return m < 2 ? 0 : m % 2 ? m : m - 1; }

static int cmp_pair(const void *x, const void *y)
{
    const pb_p2p_schedule_pair *p = x, *q = y;
    if (p->round != q->round) return p->round - q->round;
    return p->a - q->a;
}

/* Members of each node, in rank order. */
static int group_by_node(const int *node_of, int nranks, int **start, int **members, int *nnodes)
{
    int n = 0;
    for (int r = 0; r < nranks; r++)
        if (node_of[r] + 1 > n) n = node_of[r] + 1;
    *nnodes = n;
    *start = calloc((size_t)n + 1, sizeof(int));
    *members = malloc(sizeof(int) * (size_t)(nranks ? nranks : 1));
    int *fill = calloc((size_t)n + 1, sizeof(int));
    if (!*start || !*members || !fill) {
        free(fill);
        free(*start);
        free(*members);
        *start = *members = NULL;
        (void)pb_fail(PB_ERR_ENV, "out of memory scheduling %d ranks", nranks);
        return PB_ERR_ENV;
    }
    for (int r = 0; r < nranks; r++) (*start)[node_of[r] + 1]++;
    for (int k = 0; k < n; k++) (*start)[k + 1] += (*start)[k];
    for (int r = 0; r < nranks; r++) (*members)[(*start)[node_of[r]] + fill[node_of[r]]++] = r;
    free(fill);
    return PB_OK;
}

/* Node pair (A, B), met in round t of the node tournament: local rank k of
 * the smaller with local rank (k + s) mod |B| of the larger in sub-round s.
 * Every s in 0..|B|-1: every rank of one meets every rank of the other.
 * Sampled: s = 0 (the rails: local rank k with local rank k) and, in the
 * first |B| - 1 node rounds, s = t + 1 (one cross-rail shift, each shift in
 * turn). Returns the sub-rounds used. */
static int node_pair_rounds(builder *b, const int *A, int na, const int *B, int nb, int base, int t, int sampled)
{
    if (na > nb) {
        const int *x = A;
        A = B, B = x;
        int tn = na;
        na = nb, nb = tn;
    }
    int used = 0;
    for (int s = 0; s < nb; s++) {
        if (sampled && s != 0 && s != t + 1) continue;
        for (int k = 0; k < na; k++) add(b, A[k], B[(k + s) % nb], base + used);
        used++;
    }
    return used;
}

/* A round-robin among the m ranks of one node, starting at round `base`. */
static void intra_rounds(builder *b, const int *ranks, int m, int base)
{
    int even = m + m % 2, *x = malloc(sizeof(int) * (size_t)even), *y = malloc(sizeof(int) * (size_t)even);
    if (!x || !y) b->status = PB_ERR_ENV;
    for (int t = 0; x && y && t < tournament_rounds(m); t++) {
        circle_round(even, t, x, y);
        for (int i = 0; i < even / 2; i++)
            if (x[i] < m && y[i] < m) add(b, ranks[x[i]], ranks[y[i]], base + t); /* index m is the bye */
    }
    free(x);
    free(y);
}

static int build_concurrent(const int *node_of, int nranks, int sampled, pb_p2p_schedule *out)
{
    out->pairs = NULL;
    out->npairs = out->nrounds = 0;
    int *start, *members, nnodes;
    PB_TRY(group_by_node(node_of, nranks, &start, &members, &nnodes));
    builder b = {0};
    int base = 0, even = nnodes + nnodes % 2;
    int *x = malloc(sizeof(int) * (size_t)(even ? even : 1)), *y = malloc(sizeof(int) * (size_t)(even ? even : 1));
    if (!x || !y) b.status = PB_ERR_ENV;
    for (int t = 0; b.status == PB_OK && t < tournament_rounds(nnodes); t++) {
        circle_round(even, t, x, y);
        int longest = 0;
        for (int i = 0; i < even / 2; i++) {
            if (x[i] >= nnodes || y[i] >= nnodes) continue; /* a bye */
            int used = node_pair_rounds(&b, members + start[x[i]], start[x[i] + 1] - start[x[i]],
                                        members + start[y[i]], start[y[i] + 1] - start[y[i]], base, t, sampled);
            if (used > longest) longest = used;
        }
        base += longest;
    }
    int longest = 0;
    for (int k = 0; b.status == PB_OK && k < nnodes; k++) {
        int m = start[k + 1] - start[k];
        intra_rounds(&b, members + start[k], m, base);
        if (tournament_rounds(m) > longest) longest = tournament_rounds(m);
    }
    base += longest;
    free(x);
    free(y);
    free(start);
    free(members);
    if (b.status != PB_OK) {
        free(b.pairs);
        return pb_fail(PB_ERR_ENV, "out of memory scheduling %d ranks", nranks);
    }
    if (b.n > 1) qsort(b.pairs, (size_t)b.n, sizeof *b.pairs, cmp_pair);
    out->pairs = b.pairs;
    out->npairs = b.n;
    out->nrounds = base;
    return PB_OK;
}

int pb_p2p_schedule_concurrent(const int *node_of, int nranks, pb_p2p_schedule *out)
{
    return build_concurrent(node_of, nranks, 0, out);
}

int pb_p2p_schedule_sampled(const int *node_of, int nranks, pb_p2p_schedule *out)
{
    return build_concurrent(node_of, nranks, 1, out);
}

int pb_p2p_schedule_peers(const pb_p2p_schedule *s, int nranks)
{
    int *n = calloc((size_t)(nranks > 0 ? nranks : 1), sizeof(int)), most = 0;
    if (!n) return nranks - 1; /* no memory to count: every other rank, the bound */
    for (int i = 0; i < s->npairs; i++) n[s->pairs[i].a]++, n[s->pairs[i].b]++;
    for (int r = 0; r < nranks; r++) most = n[r] > most ? n[r] : most;
    free(n);
    return most;
}

int pb_p2p_schedule_serial(int nranks, pb_p2p_schedule *out)
{
    builder b = {0};
    for (int i = 0; i < nranks; i++)
        for (int j = i + 1; j < nranks; j++) add(&b, i, j, b.n);
    if (b.status != PB_OK) {
        free(b.pairs);
        return pb_fail(PB_ERR_ENV, "out of memory scheduling %d ranks", nranks);
    }
    out->pairs = b.pairs;
    out->npairs = b.n;
    out->nrounds = b.n;
    return PB_OK;
}

void pb_p2p_schedule_free(pb_p2p_schedule *s)
{
    free(s->pairs);
    s->pairs = NULL;
    s->npairs = s->nrounds = 0;
}
