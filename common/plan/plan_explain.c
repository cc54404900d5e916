/* Where a configuration ranks among the planner's and why it is not first:
 * the documents' own choices (70B on 256 GPUs, 175B on 512) explained by the
 * model's terms. */
#include "plan/plan_explain.h"

#include <stdio.h>
#include <string.h>

int pb_plan_explain_documented(const char *model, int gpus, int want[3])
{
    static const struct {
        const char *model;
        int gpus, t, p, d;
    } docs[] = {{"llama-70b", 256, 8, 8, 4}, {"gpt-175b", 512, 8, 16, 4}};
    for (size_t i = 0; model && i < sizeof docs / sizeof docs[0]; i++)
        if (!strcmp(model, docs[i].model) && gpus == docs[i].gpus) {
            want[0] = docs[i].t, want[1] = docs[i].p, want[2] = docs[i].d;
            return 1;
        }
    return 0;
}

/* Percentage points of ideal compute each term costs. */
static double pts(double x, const pb_model_step *s) { return 100.0 * x / s->compute; }

int pb_plan_explain(const pb_model_step *s, int n, const int want[3], char *buf, int len, double *gap)
{
    int rank = 0, valid = 0;
    const pb_model_step *b = NULL, *doc = NULL; /* b: the best valid step, the first */
    for (int i = 0; i < n && !doc; i++) {
        if (s[i].reject[0]) continue;
        if (!b) b = &s[i];
        valid++;
        if (s[i].t == want[0] && s[i].p == want[1] && s[i].d == want[2]) doc = &s[i], rank = valid;
    }
    if (!doc) {
        snprintf(buf, (size_t)len, "(%d,%d,%d) is rejected or not a factorization", want[0], want[1], want[2]);
        return 0;
    }
    *gap = doc->step / b->step - 1.0;
    if (rank == 1) {
        snprintf(buf, (size_t)len, "(%d,%d,%d) ranks first", want[0], want[1], want[2]);
        return 1;
    }
    snprintf(buf, (size_t)len,
             "(%d,%d,%d) ranks %d, %.2f%% behind (%d,%d,%d): vs it, TP %+.1f, bubble %+.1f, DP %+.1f, PP %+.1f "
             "points of compute; memory %.0f vs %.0f GB/GPU",
             want[0], want[1], want[2], rank, 100.0 * *gap, b->t, b->p, b->d,
             pts(doc->m * doc->c_tp, doc) - pts(b->m * b->c_tp, b), pts(doc->bubble, doc) - pts(b->bubble, b),
             pts(doc->c_dp, doc) - pts(b->c_dp, b), pts(doc->m * doc->c_pp, doc) - pts(b->m * b->c_pp, b),
             doc->mem.total / 1e9, b->mem.total / 1e9);
    return rank;
}

const char *pb_plan_explain_verdict(int rank, double gap)
{
    if (rank == 1) return "the model puts it first";
    if (rank && gap <= 0.05) return "near the top (within 5% of the best step); the terms above say why it is not first";
    return rank ? "more than 5% behind the best; the terms above say why" : "the model rejects it";
}
