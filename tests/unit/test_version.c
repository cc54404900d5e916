/* The version string every binary prints for --version and every result
 * records: "parabench NUMBER (git REV)", or "parabench NUMBER" outside git
 * (suite/version.py formats run_all's in the same words; test_version.sh
 * compares the two). --version goes through the shared option parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/options.h"
#include "core/version.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void with_git_revision(void **state)
{
    char buf[128];
    assert_string_equal(pb_version_format(buf, sizeof buf, "0.9.0", "2c2696b"), "parabench 0.9.0 (git 2c2696b)");
    assert_string_equal(pb_version_format(buf, sizeof buf, "1.2.3", "2c2696b-dirty"),
                        "parabench 1.2.3 (git 2c2696b-dirty)");
}

static void outside_git(void **state)
{
    char buf[128];
    const char *none[] = {NULL, "", "unknown"};
    for (int i = 0; i < 3; i++) assert_string_equal(pb_version_format(buf, sizeof buf, "0.9.0", none[i]), "parabench 0.9.0");
}

static void cut_to_the_buffer(void **state)
{
    char buf[12];
    pb_version_format(buf, sizeof buf, "0.9.0", "2c2696b");
    assert_string_equal(buf, "parabench 0");
}

static void this_build(void **state)
{
    char want[128];
    pb_version_format(want, sizeof want, pb_version_number(), pb_version_git_rev());
    assert_string_equal(pb_version_string(), want);
    assert_true(strncmp(pb_version_string(), "parabench ", 10) == 0);
}

/* --version through pb_options_parse: the string on stdout, and "shown" (exit 0). */
static void option_prints_it(void **state)
{
    char path[] = "/tmp/pb-version.XXXXXX", got[160] = "";
    int fd = mkstemp(path), saved = dup(STDOUT_FILENO);
    assert_true(fd >= 0 && saved >= 0);
    fflush(stdout);
    dup2(fd, STDOUT_FILENO);
    char *argv[] = {"test_version", "--version", NULL};
    int rc = pb_options_parse(2, argv, "summary", NULL, 0);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    FILE *f = fdopen(fd, "r");
    rewind(f);
    if (!fgets(got, sizeof got, f)) got[0] = '\0';
    fclose(f);
    unlink(path);
    assert_int_equal(rc, PB_HELP_SHOWN);
    got[strcspn(got, "\n")] = '\0';
    assert_string_equal(got, pb_version_string());
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(with_git_revision), cmocka_unit_test(outside_git),
                                       cmocka_unit_test(cut_to_the_buffer), cmocka_unit_test(this_build),
                                       cmocka_unit_test(option_prints_it)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
