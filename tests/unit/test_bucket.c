/* DDP-style gradient bucketing over a flat buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "workload/bucket.h"
#include "core/error.h"

#include <stdlib.h>

/* Invariants every plan must satisfy, checked against an independent walk:
 * buckets tile [0, total) backwards without gaps, none exceeds cap, all but
 * the last are exactly cap, boundaries are aligned, and ready_layer is the
 * layer holding the bucket's first byte. */
static void check_plan(const pb_bucket_plan *p, const uint64_t *lb, int64_t n, uint64_t cap, uint64_t align)
{
    uint64_t total = 0, end;
    for (int64_t i = 0; i < n; i++) total += lb[i];
    uint64_t capa = cap / align * align;
    assert_true(p->count == (total + capa - 1) / capa);
    end = total;
    for (size_t k = 0; k < p->count; k++) {
        const pb_bucket *b = &p->buckets[k];
        assert_true(b->offset + b->bytes == end);
        assert_true(b->bytes > 0 && b->bytes <= cap);
        assert_true(b->offset % align == 0);
        if (k + 1 < p->count) assert_true(b->bytes == capa);
        uint64_t start = 0;
        int64_t owner = 0;
        while (b->offset >= start + lb[owner]) start += lb[owner++];
        assert_true(b->ready_layer == owner);
        end = b->offset;
    }
    assert_true(end == 0);
}

static void test_ddp_default_on_equal_layers(void **state)
{
    (void)state;
    /* 4 layers of 10 MiB, 25 MiB cap: buckets 25 + 15 MiB, the first spans layers 3..1. */
    uint64_t lb[4] = {10 << 20, 10 << 20, 10 << 20, 10 << 20};
    pb_bucket_plan p;
    assert_int_equal(pb_bucket_plan_build(lb, 4, PB_DDP_BUCKET_BYTES, 4, &p), PB_OK);
    check_plan(&p, lb, 4, PB_DDP_BUCKET_BYTES, 4);
    assert_int_equal(p.count, 2);
    assert_true(p.buckets[0].offset == (15u << 20) && p.buckets[0].bytes == (25u << 20));
    assert_int_equal(p.buckets[0].ready_layer, 1);
    assert_true(p.buckets[1].offset == 0 && p.buckets[1].bytes == (15u << 20));
    assert_int_equal(p.buckets[1].ready_layer, 0);
    size_t first, count;
    pb_bucket_ready(&p, 3, &first, &count);
    assert_int_equal(count, 0); /* bucket 0 still needs layers 2 and 1 */
    pb_bucket_ready(&p, 2, &first, &count);
    assert_int_equal(count, 0);
    pb_bucket_ready(&p, 1, &first, &count);
    assert_true(first == 0 && count == 1);
    pb_bucket_ready(&p, 0, &first, &count);
    assert_true(first == 1 && count == 1);
    pb_bucket_plan_free(&p);
    assert_null(p.buckets);
}

static void test_big_layers_split(void **state)
{
    (void)state;
    /* 3 layers of 100 bytes, cap 30: each layer splits; bucket at [90,120) spans layers 0 and 1. */
    uint64_t lb[3] = {100, 100, 100};
    pb_bucket_plan p;
    assert_int_equal(pb_bucket_plan_build(lb, 3, 30, 2, &p), PB_OK);
    check_plan(&p, lb, 3, 30, 2);
    assert_int_equal(p.count, 10);
    /* Every bucket becomes ready exactly once, in plan order, as layers 2, 1, 0 finish. */
    size_t seen = 0, first, count;
    for (int64_t layer = 2; layer >= 0; layer--) {
        pb_bucket_ready(&p, layer, &first, &count);
        assert_true(first == seen);
        for (size_t k = first; k < first + count; k++) assert_true(p.buckets[k].ready_layer == layer);
        seen += count;
    }
    assert_true(seen == p.count);
    pb_bucket_ready(&p, 2, &first, &count);
    assert_true(count == 3); /* [270,300) [240,270) [210,240); [180,210) reaches layer 1 */
    pb_bucket_plan_free(&p);
}

static void test_cap_alignment_and_one_bucket(void **state)
{
    (void)state;
    uint64_t lb[2] = {64, 32};
    pb_bucket_plan p;
    /* cap 30 with 4-byte elements: buckets of 28, last one the remainder */
    assert_int_equal(pb_bucket_plan_build(lb, 2, 30, 4, &p), PB_OK);
    check_plan(&p, lb, 2, 30, 4);
    assert_true(p.buckets[0].bytes == 28 && p.buckets[p.count - 1].bytes == 96 % 28);
    pb_bucket_plan_free(&p);
    /* cap above the total: one bucket, ready only after layer 0 */
    assert_int_equal(pb_bucket_plan_build(lb, 2, 1 << 20, 4, &p), PB_OK);
    assert_int_equal(p.count, 1);
    assert_true(p.buckets[0].offset == 0 && p.buckets[0].bytes == 96 && p.buckets[0].ready_layer == 0);
    pb_bucket_plan_free(&p);
}

static void test_random_shapes(void **state)
{
    (void)state;
    srand(7);
    for (int trial = 0; trial < 200; trial++) {
        int64_t n = 1 + rand() % 9;
        uint64_t align = (uint64_t)(rand() % 2 ? 2 : 4), lb[9];
        for (int64_t i = 0; i < n; i++) lb[i] = align * (uint64_t)(rand() % 50);
        lb[n - 1] += align; /* total > 0 */
        uint64_t cap = align + (uint64_t)(rand() % 120);
        pb_bucket_plan p;
        assert_int_equal(pb_bucket_plan_build(lb, n, cap, align, &p), PB_OK);
        check_plan(&p, lb, n, cap, align);
        pb_bucket_plan_free(&p);
    }
}

static void test_refusals(void **state)
{
    (void)state;
    uint64_t lb[2] = {8, 6};
    pb_bucket_plan p;
    assert_int_equal(pb_bucket_plan_build(lb, 2, 2, 4, &p), PB_ERR_USAGE); /* cap below one element */
    assert_int_equal(pb_bucket_plan_build(lb, 2, 16, 4, &p), PB_ERR_USAGE); /* 6 is not a multiple of 4 */
    assert_int_equal(pb_bucket_plan_build(lb, 0, 16, 2, &p), PB_ERR_USAGE);
    assert_int_equal(pb_bucket_plan_build(lb, 2, 16, 0, &p), PB_ERR_USAGE); /* no alignment: refused, not a division by 0 */
    assert_null(p.buckets);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ddp_default_on_equal_layers), cmocka_unit_test(test_big_layers_split),
        cmocka_unit_test(test_cap_alignment_and_one_bucket), cmocka_unit_test(test_random_shapes),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
