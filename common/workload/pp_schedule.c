#include "workload/pp_schedule.h"

#include "core/error.h"

#include <stdlib.h>

int pb_pp_schedule_valid(pb_pp_sched s, int p, int m, int v)
{
    if (p < 1) return pb_error_usage("--stages", "%d stages; expected at least 1", p);
    if (m < 1) return pb_error_usage("--micro-batches", "%d micro-batches; expected at least 1", m);
    if (s != PB_PP_INTERLEAVED) return PB_OK;
    if (v < 2) return pb_error_usage("--virtual-stages", "%d chunks per rank; interleaved needs at least 2", v);
    if (p < 2) return pb_error_usage("--stages", "interleaved needs at least 2 stages, got %d", p);
    if (m % p != 0)
        return pb_error_usage("--micro-batches", "interleaved needs the micro-batches (%d) to be a multiple of the "
                                           "stages (%d)", m, p);
    return PB_OK;
}

/* Fill the transfers of an action from its virtual stage. */
static pb_pp_schedule_action make(pb_pp_schedule_op op, int mb, int chunk, int p, int v, int stage)
{
    int vs = chunk * p + stage, last = p * v - 1;
    int prev = (stage - 1 + p) % p, next = (stage + 1) % p;
    pb_pp_schedule_action a = {.op = op, .mb = mb, .chunk = chunk, .vstage = vs, .recv_from = -1, .send_to = -1};
    if (op == PB_PP_FWD) {
        if (vs > 0) a.recv_from = prev;
        if (vs < last) a.send_to = next;
    } else {
        if (vs < last) a.recv_from = next;
        if (vs > 0) a.send_to = prev;
    }
    return a;
}

static void build_gpipe(pb_pp_schedule_plan *pl)
{
    for (int k = 0; k < pl->m; k++) pl->a[pl->n++] = make(PB_PP_FWD, k, 0, pl->p, 1, pl->stage);
    for (int k = 0; k < pl->m; k++) pl->a[pl->n++] = make(PB_PP_BWD, k, 0, pl->p, 1, pl->stage);
}

static void build_1f1b(pb_pp_schedule_plan *pl)
{
    int m = pl->m, warm = pl->p - pl->stage - 1;
    if (warm > m) warm = m;
    for (int k = 0; k < warm; k++) pl->a[pl->n++] = make(PB_PP_FWD, k, 0, pl->p, 1, pl->stage);
    for (int i = 0; i < m - warm; i++) {
        pl->a[pl->n++] = make(PB_PP_FWD, warm + i, 0, pl->p, 1, pl->stage);
        pl->a[pl->n++] = make(PB_PP_BWD, i, 0, pl->p, 1, pl->stage);
    }
    for (int k = m - warm; k < m; k++) pl->a[pl->n++] = make(PB_PP_BWD, k, 0, pl->p, 1, pl->stage);
}

/* Megatron-LM's interleaved order: the k-th unit of work of a rank walks the
 * chunks in groups of p micro-batches (forward: chunk 0..v-1, backward v-1..0). */
static pb_pp_schedule_action unit(const pb_pp_schedule_plan *pl, int k, pb_pp_schedule_op op)
{
    int p = pl->p, v = pl->v, in_group = k % (p * v);
    int chunk = in_group / p;
    if (op == PB_PP_BWD) chunk = v - 1 - chunk;
    int mb = (k / (p * v)) * p + k % p;
    return make(op, mb, chunk, p, v, pl->stage);
}

static void build_interleaved(pb_pp_schedule_plan *pl)
{
    int total = pl->m * pl->v;
    int warm = pl->m == pl->p ? total : (pl->p - pl->stage - 1) * 2 + (pl->v - 1) * pl->p;
    if (warm > total) warm = total;
    for (int k = 0; k < warm; k++) pl->a[pl->n++] = unit(pl, k, PB_PP_FWD);
    for (int i = 0; i < total - warm; i++) {
        pl->a[pl->n++] = unit(pl, warm + i, PB_PP_FWD);
        pl->a[pl->n++] = unit(pl, i, PB_PP_BWD);
    }
    for (int k = total - warm; k < total; k++) pl->a[pl->n++] = unit(pl, k, PB_PP_BWD);
}

int pb_pp_schedule_plan_build(pb_pp_sched s, int p, int m, int v, int stage, pb_pp_schedule_plan *out)
{
    if (s != PB_PP_INTERLEAVED) v = 1;
    *out = (pb_pp_schedule_plan){.sched = s, .p = p, .m = m, .v = v, .stage = stage}; /* freeable whatever follows */
    PB_TRY(pb_pp_schedule_valid(s, p, m, v));
    PB_CHECK(stage >= 0 && stage < p, PB_ERR_USAGE, "stage %d outside 0..%d", stage, p - 1);
    out->a = calloc(2 * (size_t)m * (size_t)v, sizeof *out->a);
    PB_CHECK(out->a, PB_ERR_ENV, "out of memory for a schedule of %d actions", 2 * m * v);
    if (s == PB_PP_GPIPE) build_gpipe(out);
    else if (s == PB_PP_1F1B) build_1f1b(out);
    else build_interleaved(out);
    return PB_OK;
}

void pb_pp_schedule_plan_free(pb_pp_schedule_plan *plan)
{
    free(plan->a);
    plan->a = NULL;
    plan->n = 0;
}

int pb_pp_schedule_plan_max_in_flight(const pb_pp_schedule_plan *plan)
{
    int held = 0, peak = 0;
    for (int i = 0; i < plan->n; i++) {
        held += plan->a[i].op == PB_PP_FWD ? 1 : -1;
        if (held > peak) peak = held;
    }
    return peak;
}

/* ---- simulation: FIFO links, blocking in-order receives, free sends ------ */

typedef struct msg {
    int vstage, mb; /* the receiver's virtual stage and micro-batch */
    double at;      /* arrival time */
} msg;

typedef struct fifo {
    int head, tail; /* messages [head, tail) of the link's slots */
} fifo;

/* Links indexed by [kind][from]: kind 0 activations, which go to the next
 * stage (the last one's to the first, interleaved), 1 gradients, which go to
 * the previous one (make() above). One link per stage and kind keeps the
 * memory linear in p; link i owns slots [first[i], first[i + 1]) of the
 * store, one for each message its stage sends on it. */
typedef struct links {
    fifo *f;
    msg *store;
    size_t *first;
    int p;
} links;

static int neighbour(const links *l, int kind, int from) { return (from + (kind == 0 ? 1 : l->p - 1)) % l->p; }

static size_t link_index(const links *l, int kind, int from) { return (size_t)kind * (size_t)l->p + (size_t)from; }

static msg *slot(const links *l, size_t link, int k) { return &l->store[l->first[link] + (size_t)k]; }

/* The receiver's virtual stage that action `a` feeds with its output. */
static int dest_vstage(const pb_pp_schedule_action *a) { return a->op == PB_PP_FWD ? a->vstage + 1 : a->vstage - 1; }

/* Try to run stage s's next action; 1 if it ran, 0 if blocked, -1 on a
 * mismatch, -2 when it sends to or receives from a stage that is not its neighbour. */
static int sim_one(const pb_pp_schedule_plan *pl, int *next, double *clock, double *busy, const links *l, double tf, double tb,
                   double tm)
{
    const pb_pp_schedule_action *a = &pl->a[*next];
    int kind = a->op == PB_PP_FWD ? 0 : 1;
    double start = *clock;
    if (a->recv_from >= 0) {
        if (neighbour(l, kind, a->recv_from) != pl->stage) return -2;
        size_t i = link_index(l, kind, a->recv_from);
        fifo *f = &l->f[i];
        if (f->head == f->tail) return 0;
        msg in = *slot(l, i, f->head++);
        if (in.vstage != a->vstage || in.mb != a->mb) return -1;
        if (in.at > start) start = in.at;
    }
    double end = start + (kind == 0 ? tf : tb);
    if (a->send_to >= 0) {
        if (a->send_to != neighbour(l, kind, pl->stage)) return -2;
        size_t i = link_index(l, kind, pl->stage);
        *slot(l, i, l->f[i].tail++) = (msg){dest_vstage(a), a->mb, end + tm};
    }
    if (busy) busy[pl->stage] += end - start;
    *clock = end;
    (*next)++;
    return 1;
}

int pb_pp_schedule_simulate(const pb_pp_schedule_plan *plans, int p, double t_fwd, double t_bwd, double t_msg, double *step,
                   double *busy)
{
    links l = {.p = p};
    size_t nlinks = 2 * (size_t)p;
    l.f = calloc(nlinks, sizeof *l.f);
    l.first = calloc(nlinks + 1, sizeof *l.first);
    if (l.first) { /* each link's slots: the sends of its stage and kind */
        for (int s = 0; s < p; s++)
            for (int k = 0; k < plans[s].n; k++)
                if (plans[s].a[k].send_to >= 0) l.first[link_index(&l, plans[s].a[k].op == PB_PP_FWD ? 0 : 1, s) + 1]++;
        for (size_t i = 0; i < nlinks; i++) l.first[i + 1] += l.first[i];
        l.store = malloc((l.first[nlinks] ? l.first[nlinks] : 1) * sizeof *l.store);
    }
    int *next = calloc((size_t)p, sizeof *next);
    double *clock = calloc((size_t)p, sizeof *clock);
    if (!l.f || !l.first || !l.store || !next || !clock) {
        free(l.f);
        free(l.first);
        free(l.store);
        free(next);
        free(clock);
        if (step) *step = 0;
        return pb_fail(PB_ERR_ENV, "simulation: out of memory");
    }
    int status = PB_OK;
    if (busy)
        for (int s = 0; s < p; s++) busy[s] = 0;
    for (int progress = 1; status == PB_OK && progress;) {
        progress = 0;
        for (int s = 0; s < p && status == PB_OK; s++)
            while (next[s] < plans[s].n) {
                int r = sim_one(&plans[s], &next[s], &clock[s], busy, &l, t_fwd, t_bwd, t_msg);
                if (r == -1) status = pb_fail(PB_ERR_CHECK, "schedule: stage %d receives out of order", s);
                if (r == -2)
                    status = pb_fail(PB_ERR_CHECK, "schedule: stage %d sends to or receives from a stage that is not "
                                     "next to it", s);
                if (r <= 0) break;
                progress = 1;
            }
    }
    double last = 0;
    for (int s = 0; status == PB_OK && s < p; s++) {
        if (next[s] < plans[s].n)
            status = pb_fail(PB_ERR_CHECK, "schedule: stage %d deadlocks at action %d", s, next[s]);
        if (clock[s] > last) last = clock[s];
    }
    for (size_t i = 0; status == PB_OK && i < nlinks; i++)
        if (l.f[i].head != l.f[i].tail) status = pb_fail(PB_ERR_CHECK, "schedule: a message is never received");
    if (step) *step = last;
    free(l.f);
    free(l.first);
    free(l.store);
    free(next);
    free(clock);
    return status;
}

int pb_pp_schedule_check(const pb_pp_schedule_plan *plans, int p)
{
    for (int s = 0; s < p; s++)
        PB_CHECK(plans[s].p == p && plans[s].stage == s && plans[s].n == plans[0].n, PB_ERR_CHECK,
                 "schedule: plan %d does not belong to this %d-stage pipeline", s, p);
    return pb_pp_schedule_simulate(plans, p, 1.0, 2.0, 0.0, NULL, NULL);
}
