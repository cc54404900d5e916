/* Pipeline executor: one step of a schedule on one stage (see pp.h). */
#include "workload/pp.h"

#include "core/error.h"
#include "core/grow.h"
#include "core/mem.h"
#include "core/world.h"
#include "core/timing.h"

#include <stdlib.h>
#include <string.h>

enum { ACT, GRAD, KINDS };
#define MAX_COLORS 3

struct pb_pp_exec {
    pb_pp_config cfg;
    int p, stage, ncolors;
    size_t bytes;                 /* of one activation */
    pb_comm *comm[KINDS][MAX_COLORS];
    pb_comm *send_c[KINDS], *recv_c[KINDS]; /* this stage's, picked from comm[][] */
    void *recv_buf[KINDS][2];     /* double buffer per direction */
    void **send_buf[KINDS];       /* max_sends each, completed at the end of the step */
    void *scratch[2];             /* [0] last stage's output; [1] generated input or loss gradient */
    void *first_din;              /* first stage's input gradient (not sent) */
};

static const char *const event_names[] = {"fwd", "bwd", "recv_act", "recv_grad", "send_act", "send_grad",
                                          "send_wait"};

const char *pb_pp_event_name(pb_pp_event_kind k) { return k < PB_PP_EV_COUNT ? event_names[k] : "?"; }

void pb_pp_trace_clear(pb_pp_trace *t) { t->n = 0; }

void pb_pp_trace_free(pb_pp_trace *t)
{
    free(t->ev);
    t->ev = NULL;
    t->n = t->cap = 0;
}

static int trace_add(pb_pp_trace *t, int kind, int chunk, int mb, double start, double end)
{
    if (!t) return PB_OK;
    pb_pp_event *ev = pb_grow(t->ev, &t->cap, t->n, sizeof *ev, 256);
    PB_CHECK(ev, PB_ERR_ENV, "trace: out of memory for %d events", t->n + 1);
    t->ev = ev;
    t->ev[t->n++] = (pb_pp_event){kind, chunk, mb, start - t->origin_us, end - t->origin_us};
    return PB_OK;
}

int pb_pp_link_colors(int p, int ring) { return ring && p % 2 == 1 && p > 1 ? 3 : 2; }

/* The colours some link has: links 0 .. links-1 take colours 0, 1, 0, 1, ...
 * (and 2 for an odd ring's last), so fewer links than colours use only the
 * first ones. */
static int colors_used(int p, int ring)
{
    int links = ring ? p : p - 1, ncolors = pb_pp_link_colors(p, ring);
    return links < ncolors ? (links > 0 ? links : 0) : ncolors;
}

int pb_pp_exec_comms(int p, int ring) { return KINDS * colors_used(p, ring); }

/* Alternating colours; the odd ring's closing link takes the third. */
int pb_pp_link_color(int i, int p, int ncolors)
{
    if (ncolors == 3 && i == p - 1) return 2;
    return i % 2;
}

uint64_t pb_pp_exec_bytes(const pb_pp_config *cfg)
{
    uint64_t one = pb_mem_mul((uint64_t)cfg->act_count, pb_dtype_size(cfg->act_dtype));
    return pb_mem_mul(one, 2 * (uint64_t)cfg->max_sends + 2 * 2 + 3);
}

static int alloc_buffers(pb_pp_exec *ex)
{
    const pb_comm_backend *be = ex->cfg.be;
    for (int k = 0; k < KINDS; k++) {
        for (int j = 0; j < 2; j++) PB_TRY(be->alloc(ex->bytes, &ex->recv_buf[k][j]));
        ex->send_buf[k] = calloc((size_t)ex->cfg.max_sends, sizeof(void *));
        PB_CHECK(ex->send_buf[k], PB_ERR_ENV, "pipeline: out of memory for %d send slots", ex->cfg.max_sends);
        for (int j = 0; j < ex->cfg.max_sends; j++) PB_TRY(be->alloc(ex->bytes, &ex->send_buf[k][j]));
    }
    for (int j = 0; j < 2; j++) PB_TRY(be->alloc(ex->bytes, &ex->scratch[j]));
    return be->alloc(ex->bytes, &ex->first_din);
}

int pb_pp_exec_create(const pb_pp_config *cfg, pb_pp_exec **out)
{
    pb_pp_exec *ex = calloc(1, sizeof *ex);
    /* Agreed before the communicators: their creation is collective over the pipeline. */
    int status = pb_world_agree_at(cfg->group, ex ? PB_OK : pb_fail(PB_ERR_ENV, "pipeline: out of memory"), "pipeline");
    if (status != PB_OK || !ex) { /* !ex implies a failed agreement; said for the analyzer */
        free(ex);
        return status;
    }
    ex->cfg = *cfg;
    MPI_Comm_size(cfg->group, &ex->p);
    MPI_Comm_rank(cfg->group, &ex->stage);
    ex->bytes = cfg->act_count * pb_dtype_size(cfg->act_dtype);
    ex->ncolors = pb_pp_link_colors(ex->p, cfg->ring);
    /* Created in the same order on every rank: communicator creation is
     * collective, and its status agreed over the group, so all stop at once.
     * A colour no link has gets none (one stage: none at all), so that a
     * stage's unused direction is NULL. */
    int used = colors_used(ex->p, cfg->ring);
    for (int k = 0; k < KINDS && status == PB_OK; k++)
        for (int c = 0; c < used && status == PB_OK; c++)
            status = cfg->be->comm_create(cfg->group, &ex->comm[k][c]);
    if (status == PB_OK) {
        int p = ex->p, out_link = ex->stage, in_link = (ex->stage - 1 + p) % p;
        /* Activations travel on link stage -> stage+1; gradients come back on the same link index. */
        ex->send_c[ACT] = ex->comm[ACT][pb_pp_link_color(out_link, p, ex->ncolors)];
        ex->recv_c[ACT] = ex->comm[ACT][pb_pp_link_color(in_link, p, ex->ncolors)];
        ex->send_c[GRAD] = ex->comm[GRAD][pb_pp_link_color(in_link, p, ex->ncolors)];
        ex->recv_c[GRAD] = ex->comm[GRAD][pb_pp_link_color(out_link, p, ex->ncolors)];
        status = alloc_buffers(ex);
    }
    if (status != PB_OK) {
        pb_pp_exec_destroy(ex);
        return status;
    }
    *out = ex;
    return PB_OK;
}

void pb_pp_exec_destroy(pb_pp_exec *ex)
{
    if (!ex) return;
    const pb_comm_backend *be = ex->cfg.be;
    for (int k = 0; k < KINDS; k++) {
        for (int c = 0; c < MAX_COLORS; c++)
            if (ex->comm[k][c]) be->comm_destroy(ex->comm[k][c]);
        for (int j = 0; j < 2; j++)
            if (ex->recv_buf[k][j]) be->free(ex->recv_buf[k][j]);
        for (int j = 0; ex->send_buf[k] && j < ex->cfg.max_sends; j++)
            if (ex->send_buf[k][j]) be->free(ex->send_buf[k][j]);
        free(ex->send_buf[k]);
    }
    for (int j = 0; j < 2; j++)
        if (ex->scratch[j]) be->free(ex->scratch[j]);
    if (ex->first_din) be->free(ex->first_din);
    free(ex);
}

/* ---- one step ------------------------------------------------------------ */

typedef struct step_state {
    pb_pp_exec *ex;
    const pb_pp_schedule_plan *plan;
    const pb_pp_ops *ops;
    void *user;
    pb_pp_stats *st;
    pb_pp_trace *trace;
    int next_recv[KINDS];  /* index of the action whose receive is posted, or -1 */
    int slot[KINDS];       /* which receive buffer that receive lands in */
    int nsent[KINDS];      /* send slots used this step */
} step_state;

static int kind_of(const pb_pp_schedule_action *a) { return a->op == PB_PP_FWD ? ACT : GRAD; }

/* The first action at or after `from` of `kind` that receives. */
static int find_recv(const pb_pp_schedule_plan *plan, int from, int kind)
{
    for (int i = from; i < plan->n; i++)
        if (kind_of(&plan->a[i]) == kind && plan->a[i].recv_from >= 0) return i;
    return -1;
}

static int post_recv(step_state *s, int kind, int index, int slot)
{
    s->next_recv[kind] = index;
    if (index < 0) return PB_OK;
    s->slot[kind] = slot;
    const pb_comm_backend *be = s->ex->cfg.be;
    pb_comm *c = s->ex->recv_c[kind];
    PB_CHECK(c, PB_ERR_CHECK, "pipeline: stage %d receives on a link without a communicator", s->ex->stage);
    double t0 = pb_timing_now_us();
    PB_TRY(be->group_start(c));
    PB_TRY(be->recv(c, s->ex->recv_buf[kind][slot], s->ex->cfg.act_count, s->ex->cfg.act_dtype,
                    s->plan->a[index].recv_from));
    PB_TRY(be->group_end(c));
    s->st->post_us += pb_timing_now_us() - t0;
    return PB_OK;
}

/* Wait for action i's input, then post the next receive of that kind into the other buffer. */
static int take_input(step_state *s, int i, const void **in)
{
    const pb_pp_schedule_action *a = &s->plan->a[i];
    int kind = kind_of(a);
    PB_CHECK(s->next_recv[kind] == i, PB_ERR_CHECK, "pipeline: action %d receives out of order", i);
    double t0 = pb_timing_now_us();
    PB_TRY(s->ex->cfg.be->sync(s->ex->recv_c[kind]));
    double t1 = pb_timing_now_us();
    s->st->wait_us += t1 - t0;
    s->st->bytes_recv += s->ex->bytes;
    PB_TRY(trace_add(s->trace, kind == ACT ? PB_PP_EV_RECV_ACT : PB_PP_EV_RECV_GRAD, a->chunk, a->mb, t0, t1));
    int slot = s->slot[kind];
    *in = s->ex->recv_buf[kind][slot];
    return post_recv(s, kind, find_recv(s->plan, i + 1, kind), 1 - slot);
}

static int post_send(step_state *s, const pb_pp_schedule_action *a, const void *buf)
{
    int kind = kind_of(a);
    const pb_comm_backend *be = s->ex->cfg.be;
    pb_comm *c = s->ex->send_c[kind];
    PB_CHECK(c, PB_ERR_CHECK, "pipeline: stage %d sends on a link without a communicator", s->ex->stage);
    double t0 = pb_timing_now_us();
    PB_TRY(be->group_start(c));
    PB_TRY(be->send(c, buf, s->ex->cfg.act_count, s->ex->cfg.act_dtype, a->send_to));
    PB_TRY(be->group_end(c));
    double t1 = pb_timing_now_us();
    s->st->post_us += t1 - t0;
    s->st->bytes_sent += s->ex->bytes;
    return trace_add(s->trace, kind == ACT ? PB_PP_EV_SEND_ACT : PB_PP_EV_SEND_GRAD, a->chunk, a->mb, t0, t1);
}

/* Where an action writes its output: a fresh send slot, or a local buffer. */
static int output_buffer(step_state *s, const pb_pp_schedule_action *a, void **out)
{
    int kind = kind_of(a);
    if (a->send_to < 0) {
        *out = kind == ACT ? s->ex->scratch[0] : s->ex->first_din;
        return PB_OK;
    }
    PB_CHECK(s->nsent[kind] < s->ex->cfg.max_sends, PB_ERR_USAGE,
             "pipeline: more than %d sends in a step; max_sends too small", s->ex->cfg.max_sends);
    *out = s->ex->send_buf[kind][s->nsent[kind]++];
    return PB_OK;
}

static int run_action(step_state *s, int i)
{
    const pb_pp_schedule_action *a = &s->plan->a[i];
    const pb_pp_ops *ops = s->ops;
    const void *in = NULL;
    void *out = NULL;
    if (a->recv_from >= 0) {
        PB_TRY(take_input(s, i, &in));
    } else {
        in = s->ex->scratch[1];
        PB_TRY(a->op == PB_PP_FWD ? ops->input(s->user, a->mb, s->ex->scratch[1])
                                  : ops->loss_grad(s->user, a->mb, s->ex->scratch[1]));
    }
    PB_TRY(output_buffer(s, a, &out));
    if (a->op == PB_PP_FWD) PB_TRY(ops->act_alloc(s->user, a->chunk, a->mb));
    double t0 = pb_timing_now_us();
    if (a->op == PB_PP_FWD) PB_TRY(ops->forward(s->user, a->chunk, a->mb, in, out));
    else PB_TRY(ops->backward(s->user, a->chunk, a->mb, in, out));
    double t1 = pb_timing_now_us();
    if (a->op == PB_PP_FWD) s->st->fwd_us += t1 - t0, s->st->nfwd++;
    else s->st->bwd_us += t1 - t0, s->st->nbwd++, ops->act_free(s->user, a->chunk, a->mb);
    PB_TRY(trace_add(s->trace, a->op == PB_PP_FWD ? PB_PP_EV_FWD : PB_PP_EV_BWD, a->chunk, a->mb, t0, t1));
    return a->send_to >= 0 ? post_send(s, a, out) : PB_OK;
}

/* Complete every send of the step: the receivers have them once this returns. */
static int finish_sends(step_state *s)
{
    double t0 = pb_timing_now_us();
    for (int k = 0; k < KINDS; k++)
        if (s->nsent[k]) PB_TRY(s->ex->cfg.be->sync(s->ex->send_c[k]));
    double t1 = pb_timing_now_us();
    s->st->wait_us += t1 - t0;
    return s->nsent[ACT] + s->nsent[GRAD] ? trace_add(s->trace, PB_PP_EV_SEND_WAIT, 0, -1, t0, t1) : PB_OK;
}

/* Grow the engine's activation pools to the step's peak before any receive
 * is posted: on a GPU an allocation (cudaMalloc) synchronises the device, so
 * a pool that grows behind a posted receive whose send comes later waits for
 * it forever (tests/integration/test_rehearse.sh, --backend nccl-rehearse).
 * The plan's forwards and backwards walked without compute take and return
 * exactly the blocks the step will; begin_step then resets the peaks. */
static int reserve_activations(const pb_pp_schedule_plan *plan, const pb_pp_ops *ops, void *user)
{
    for (int i = 0; i < plan->n; i++) {
        const pb_pp_schedule_action *a = &plan->a[i];
        if (a->op == PB_PP_FWD) PB_TRY(ops->act_alloc(user, a->chunk, a->mb));
        else ops->act_free(user, a->chunk, a->mb);
    }
    return PB_OK;
}

int pb_pp_exec_step(pb_pp_exec *ex, const pb_pp_schedule_plan *plan, const pb_pp_ops *ops, void *user, pb_pp_stats *stats,
                    pb_pp_trace *trace)
{
    PB_CHECK(plan->p == ex->p && plan->stage == ex->stage, PB_ERR_USAGE,
             "pipeline: plan for stage %d of %d run on stage %d of %d", plan->stage, plan->p, ex->stage, ex->p);
    PB_CHECK(!(plan->v > 1 && !ex->cfg.ring), PB_ERR_USAGE, "pipeline: interleaved plan needs a ring executor");
    memset(stats, 0, sizeof *stats);
    step_state s = {.ex = ex, .plan = plan, .ops = ops, .user = user, .st = stats, .trace = trace};
    PB_TRY(reserve_activations(plan, ops, user));
    double t0 = pb_timing_now_us();
    PB_TRY(ops->begin_step(user));
    for (int k = 0; k < KINDS; k++) PB_TRY(post_recv(&s, k, find_recv(plan, 0, k), 0));
    int status = PB_OK;
    for (int i = 0; i < plan->n && status == PB_OK; i++) status = run_action(&s, i);
    /* Complete what was posted even after a failure, so no request outlives its buffer. */
    int fin = finish_sends(&s);
    if (status == PB_OK) status = fin;
    stats->peak_act_bytes = ops->act_peak(user);
    stats->step_us = pb_timing_now_us() - t0;
    return status;
}
