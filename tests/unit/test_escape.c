/* The escaping module: every writer's user strings (arguments, paths,
 * hostnames, threshold rules) keep one line one line, one field one field,
 * and XML and JSON valid, whatever control characters, quotes or invalid
 * UTF-8 they hold. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/escape.h"

#include <stdlib.h>
#include <string.h>

static void check(char *(*fn)(const char *), const char *in, const char *want)
{
    char *got = fn(in);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void csv_comment_one_line(void **state)
{
    (void)state;
    check(pb_escape_csv_comment, "plain text, with commas", "plain text, with commas");
    check(pb_escape_csv_comment, "a\nb\rc\td", "a\\nb\\rc\\td");
    check(pb_escape_csv_comment, "x\x01y\x7f", "x\\x01y\\x7f");
    check(pb_escape_csv_comment, "bad \xff\xfe utf8", "bad \\xff\\xfe utf8");
    check(pb_escape_csv_comment, "caf\xc3\xa9", "caf\xc3\xa9"); /* valid UTF-8 kept */
    check(pb_escape_csv_comment, "\xc0\xaf", "\\xc0\\xaf");       /* overlong '/' */
    check(pb_escape_csv_comment, "\xed\xa0\x80", "\\xed\\xa0\\x80"); /* a surrogate */
    check(pb_escape_csv_comment, "nel\xc2\x85ls\xe2\x80\xa8", "nel\\xc2\\x85ls\\xe2\\x80\\xa8"); /* Unicode line breaks */
    check(pb_escape_csv_comment, "ps\xe2\x80\xa9", "ps\\xe2\\x80\\xa9"); /* U+2029, the paragraph separator */
    check(pb_escape_csv_comment, NULL, "");
}

static void csv_field_one_field(void **state)
{
    (void)state;
    check(pb_escape_csv_field, "node01", "node01");
    check(pb_escape_csv_field, "a,b", "\"a,b\"");
    check(pb_escape_csv_field, "say \"hi\"", "\"say \"\"hi\"\"\"");
    check(pb_escape_csv_field, "#not a comment", "\"#not a comment\"");
    check(pb_escape_csv_field, "two\nlines", "two\\nlines");
    check(pb_escape_csv_field, "x\xff,", "\"x\\xff,\"");
    check(pb_escape_csv_field, "", "");
}

static void xml_valid(void **state)
{
    (void)state;
    check(pb_escape_xml, "a<b>&\"c'", "a&lt;b&gt;&amp;&quot;c&apos;");
    check(pb_escape_xml, "t\tn\nr\r", "t&#9;n&#10;r&#13;");
    check(pb_escape_xml, "nul\x01" "esc\x1b", "nul\xef\xbf\xbd" "esc\xef\xbf\xbd");
    check(pb_escape_xml, "bad\xff", "bad\xef\xbf\xbd");
    check(pb_escape_xml, "\xef\xbf\xbe", "\xef\xbf\xbd"); /* U+FFFE is no XML character */
    check(pb_escape_xml, "\xe2\x82\xac 5", "\xe2\x82\xac 5");
    check(pb_escape_xml, "trunc\xe2\x82", "trunc\xef\xbf\xbd\xef\xbf\xbd");
}

static void utf8_replaced(void **state)
{
    (void)state;
    check(pb_escape_utf8, "ok \xc3\xa9", "ok \xc3\xa9");
    check(pb_escape_utf8, "\xff" "a\x80", "\xef\xbf\xbd" "a\xef\xbf\xbd");
    check(pb_escape_utf8, "\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"); /* above U+10FFFF */
    check(pb_escape_utf8, "\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80");
    check(pb_escape_utf8, "ctl\n", "ctl\n"); /* cJSON escapes control characters itself */
}

static void shell_words(void **state)
{
    (void)state;
    check(pb_escape_shell, "--sizes=1K,2M", "--sizes=1K,2M");
    check(pb_escape_shell, "", "''");
    check(pb_escape_shell, "a b", "'a b'");
    check(pb_escape_shell, "it's", "'it'\\''s'");
    check(pb_escape_shell, "*.csv", "'*.csv'");
    check(pb_escape_shell, "$(rm -rf x)", "'$(rm -rf x)'");
    check(pb_escape_shell, "a\nb", "$'a\\nb'");
    check(pb_escape_shell, "q'\xff\\", "$'q\\'\\xff\\\\'");
    check(pb_escape_shell, "\xc3\xa9\n", "$'\xc3\xa9\\n'");             /* valid UTF-8 kept whole */
    check(pb_escape_shell, "a\xe2\x80\xa8", "$'a\\xe2\\x80\\xa8'"); /* U+2028 */
    char *argv[] = {"coll_sweep", "--csv", "my results/x.csv", NULL};
    char *cmd = pb_escape_argv(3, argv);
    assert_string_equal(cmd, "coll_sweep --csv 'my results/x.csv'");
    free(cmd);
}

/* Outputs of every length up to 300 bytes, across the buffer's growth from
 * 64 bytes (the terminator must fit each time: the sanitized run of this test
 * sees one byte written past the buffer). */
static void long_strings(void **state)
{
    (void)state;
    char in[301], want[601];
    for (int n = 0; n <= 300; n++) {
        memset(in, 'a', (size_t)n), in[n] = '\0';
        check(pb_escape_csv_comment, in, in);
        check(pb_escape_utf8, in, in);
        if (n > 150) continue;
        memset(in, '\n', (size_t)n);
        for (int i = 0; i < n; i++) want[2 * i] = '\\', want[2 * i + 1] = 'n';
        want[2 * n] = '\0';
        check(pb_escape_csv_comment, in, want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(csv_comment_one_line), cmocka_unit_test(csv_field_one_field),
                                       cmocka_unit_test(xml_valid), cmocka_unit_test(utf8_replaced),
                                       cmocka_unit_test(shell_words), cmocka_unit_test(long_strings)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
