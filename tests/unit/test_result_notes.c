/* The untrustworthy notes of a results CSV (plan/result_notes.h): which rows
 * they name, by which columns, and the reason kept for acceptance's table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/csv.h"
#include "core/error.h"
#include "plan/result_notes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[64];

static void write_file(const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static int setup(void **state)
{
    (void)state;
    snprintf(path, sizeof path, "/tmp/pb-notes.%d.csv", (int)getpid());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    return 0;
}

static void dp_notes(void **state)
{
    (void)state;
    write_file("# parabench dp_allreduce\n"
               "grad_bytes,overlap,overhead\n"
               "4194304,bucket,2.69\n"
               "4194304,none,0.5\n"
               "# note: untrustworthy: overhead 2.690 (grad 4194304 B, overlap bucket): exposed = 26.9 us: within the "
               "spread; use more iterations\n"
               "# note: something else (grad 1 B, overlap none)\n"
               "# complete\n");
    pb_csv csv;
    pb_result_notes notes;
    assert_int_equal(pb_csv_read(path, &csv), PB_OK);
    assert_int_equal(pb_result_notes_read(path, "dp_allreduce", &notes), PB_OK);
    assert_int_equal(notes.n, 1);
    const pb_result_notes_entry *n = pb_result_notes_of_row(&notes, &csv, 0);
    assert_non_null(n);
    assert_string_equal(n->why, "exposed = 26.9 us: within the spread");
    assert_null(pb_result_notes_of_row(&notes, &csv, 1)); /* same size, other overlap */
    pb_result_notes_free(&notes);
    pb_csv_free(&csv);
}

static void pp_notes(void **state)
{
    (void)state;
    write_file("schedule,micro_batches,efficiency\n1f1b,8,1.2\n1f1b,4,0.8\ngpipe,8,0.7\n"
               "# note: untrustworthy: efficiency 1.200 (1f1b, m=8): above 1; use more iterations\n# complete\n");
    pb_csv csv;
    pb_result_notes notes;
    assert_int_equal(pb_csv_read(path, &csv), PB_OK);
    assert_int_equal(pb_result_notes_read(path, "pp_pipeline", &notes), PB_OK);
    assert_non_null(pb_result_notes_of_row(&notes, &csv, 0));
    assert_null(pb_result_notes_of_row(&notes, &csv, 1));
    assert_null(pb_result_notes_of_row(&notes, &csv, 2));
    pb_result_notes_free(&notes);
    pb_csv_free(&csv);
}

static void fsdp_notes(void **state)
{
    (void)state;
    write_file("prefetch,shard_group,overhead\noff,4,0.3\non,4,-0.01\non,2,0.2\n"
               "# note: untrustworthy: overhead -0.010 (prefetch on, shard group 4): exposed = step - compute = -80 us: "
               "negative (the step measured shorter than its compute); use more iterations\n# complete\n");
    pb_csv csv;
    pb_result_notes notes;
    assert_int_equal(pb_csv_read(path, &csv), PB_OK);
    assert_int_equal(pb_result_notes_read(path, "fsdp_step", &notes), PB_OK);
    assert_null(pb_result_notes_of_row(&notes, &csv, 0));  /* the other prefetch setting */
    const pb_result_notes_entry *n = pb_result_notes_of_row(&notes, &csv, 1);
    assert_non_null(n);
    assert_string_equal(n->why, "exposed = step - compute = -80 us: negative (the step measured shorter than its compute)");
    assert_null(pb_result_notes_of_row(&notes, &csv, 2)); /* the other shard group */
    pb_result_notes_free(&notes);
    pb_csv_free(&csv);
}

static void cp_notes(void **state)
{
    (void)state;
    write_file("overlap,cp,overhead\non,2,0.2\non,4,0.05\n"
               "# note: untrustworthy: overhead 0.050 (overlap on, cp 4): exposed = step - compute = 90 us: within "
               "the spread; use more iterations\n# complete\n");
    pb_csv csv;
    pb_result_notes notes;
    assert_int_equal(pb_csv_read(path, &csv), PB_OK);
    assert_int_equal(pb_result_notes_read(path, "cp_attention", &notes), PB_OK);
    assert_null(pb_result_notes_of_row(&notes, &csv, 0)); /* the other ring size */
    const pb_result_notes_entry *n = pb_result_notes_of_row(&notes, &csv, 1);
    assert_non_null(n);
    assert_string_equal(n->why, "exposed = step - compute = 90 us: within the spread");
    pb_result_notes_free(&notes);
    pb_csv_free(&csv);
}

/* Benchmarks whose notes name no rows, and files that cannot be read: no notes. */
static void no_notes(void **state)
{
    (void)state;
    write_file("bytes,busbw_GBps\n8,1\n# note: untrustworthy: overhead 2.690 (grad 8 B, overlap none): x\n");
    pb_result_notes notes;
    assert_int_equal(pb_result_notes_read(path, "coll_sweep", &notes), PB_OK);
    assert_int_equal(notes.n, 0);
    assert_int_equal(notes.format, -1);
    assert_int_equal(pb_result_notes_read("/nonexistent/dp_allreduce.csv", "dp_allreduce", &notes), PB_OK);
    assert_int_equal(notes.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(dp_notes, setup, teardown),
        cmocka_unit_test_setup_teardown(pp_notes, setup, teardown),
        cmocka_unit_test_setup_teardown(fsdp_notes, setup, teardown),
        cmocka_unit_test_setup_teardown(cp_notes, setup, teardown),
        cmocka_unit_test_setup_teardown(no_notes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
