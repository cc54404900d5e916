/* Option-value parsing: sizes with suffixes, lists, integers, and every bad form. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/error.h"
#include "core/link.h"
#include "core/options.h"
#include "core/parse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void sizes_with_suffixes(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        uint64_t want;
    } ok[] = {{"1", 1},           {"8", 8},           {"1K", 1024},      {"4k", 4096},
              {"4KB", 4096},      {"4KiB", 4096},     {"12M", 12 << 20}, {"1G", 1u << 30},
              {"64G", (uint64_t)64 << 30}, {"3b", 3}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t v = 0;
        assert_int_equal(pb_parse_size("-b", ok[i].text, PB_SIZE_MAX, &v), PB_OK);
        assert_true(v == ok[i].want);
    }
}

static void sizes_rejected(void **state)
{
    (void)state;
    const char *bad[] = {"", "0", "0K", "-1", "-4K", "abc", "1.5M", "1X", "K", " 1", "1 ", "65G", "1P",
                         "99999999999999999999", "18446744073709551616", "1KK", "0x10"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 77;
        assert_int_equal(pb_parse_size("-e", bad[i], PB_SIZE_MAX, &v), PB_ERR_USAGE);
        assert_true(v == 77); /* untouched on error */
    }
    uint64_t v;
    assert_int_equal(pb_parse_size("-e", NULL, PB_SIZE_MAX, &v), PB_ERR_USAGE);
}

static void size_lists(void **state)
{
    (void)state;
    uint64_t out[4];
    size_t n = 0;
    assert_int_equal(pb_parse_size_list("--sizes", "1K,12M,8", PB_SIZE_MAX, out, 4, &n), PB_OK);
    assert_int_equal(n, 3);
    assert_true(out[0] == 1024 && out[1] == (12u << 20) && out[2] == 8);
    const char *bad[] = {"", ",", "1K,", ",1K", "1K,,2K", "1K,x", "1,2,3,4,5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(pb_parse_size_list("--sizes", bad[i], PB_SIZE_MAX, out, 4, &n), PB_ERR_USAGE);
}

static void integers_and_doubles(void **state)
{
    (void)state;
    long long v;
    assert_int_equal(pb_parse_int("-n", "20", 1, 100, &v), PB_OK);
    assert_true(v == 20);
    const char *bad[] = {"", "0", "101", "-5", "2x", "1e3", " 3", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(pb_parse_int("-n", bad[i], 1, 100, &v), PB_ERR_USAGE);
    double d;
    assert_int_equal(pb_parse_double("--max-seconds-per-size", "2.5", 0, 10, &d), PB_OK);
    assert_true(d == 2.5);
    const char *badd[] = {"", "nan", "inf", "-1", "11", "1s", "1e999"};
    for (size_t i = 0; i < sizeof badd / sizeof badd[0]; i++)
        assert_int_equal(pb_parse_double("--x", badd[i], 0, 10, &d), PB_ERR_USAGE);
}

static void lists(void **state)
{
    (void)state;
    int64_t v[4];
    size_t n = 0;
    assert_int_equal(pb_parse_int_list("--micro-batches", "1,2,32", 1, 64, v, 4, &n), PB_OK);
    assert_true(n == 3 && v[0] == 1 && v[2] == 32);
    const char *bad[] = {"", ",", "1,", ",1", "1,,2", "0", "65", "1,x", "1,2,3,4,5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(pb_parse_int_list("--micro-batches", bad[i], 1, 64, v, 4, &n), PB_ERR_USAGE);
    static const char *const names[] = {"gpipe", "1f1b", "interleaved", NULL};
    int k[3], m = 0;
    assert_int_equal(pb_parse_choice_list("--schedule", "1f1b,gpipe", names, 1, k, &m), PB_OK);
    assert_true(m == 2 && k[0] == 1 && k[1] == 0); /* order kept */
    /* a name written twice is refused, as a repeated option is; "all" beside a name only widens the set */
    assert_int_equal(pb_parse_choice_list("--schedule", "1f1b,gpipe,1f1b", names, 1, k, &m), PB_ERR_USAGE);
    assert_int_equal(pb_parse_choice_list("--schedule", "all,gpipe", names, 1, k, &m), PB_OK);
    assert_true(m == 3 && k[0] == 0 && k[1] == 1 && k[2] == 2);
    assert_int_equal(pb_parse_choice_list("--schedule", "1f1b,all", names, 1, k, &m), PB_OK);
    assert_true(m == 3 && k[0] == 1 && k[1] == 0 && k[2] == 2);
    assert_int_equal(pb_parse_choice_list("--schedule", "all", names, 0, k, &m), PB_ERR_USAGE);
    assert_int_equal(pb_parse_choice_list("--schedule", "gpipe,", names, 1, k, &m), PB_ERR_USAGE);
    assert_int_equal(pb_parse_choice_list("--schedule", "", names, 1, k, &m), PB_ERR_USAGE);
}

static void choices(void **state)
{
    (void)state;
    static const char *const names[] = {"gpipe", "1f1b", NULL};
    int k = -1;
    assert_int_equal(pb_parse_choice("--schedule", "1f1b", names, &k), PB_OK);
    assert_int_equal(k, 1);
    assert_int_equal(pb_parse_choice("--schedule", "GPipe", names, &k), PB_ERR_USAGE);
    assert_int_equal(pb_parse_choice("--schedule", NULL, names, &k), PB_ERR_USAGE);
}

/* The sweep: -b..-e by factor and by steps, the explicit list, and -b > -e. */
static void sweep_sizes(void **state)
{
    (void)state;
    pb_options o;
    pb_options_defaults(&o);
    o.minbytes = 8;
    o.maxbytes = 1024;
    o.stepfactor = 4;
    uint64_t s[PB_MAX_SIZES];
    size_t n = pb_options_sweep_sizes(&o, s, PB_MAX_SIZES);
    assert_int_equal(n, 4); /* 8 32 128 512 */
    assert_true(s[0] == 8 && s[3] == 512);
    o.stepbytes = 100;
    n = pb_options_sweep_sizes(&o, s, PB_MAX_SIZES);
    assert_int_equal(n, 11); /* 8, 108, ..., 1008 */
    assert_true(s[10] == 1008);
    assert_int_equal(pb_options_sweep_count(&o), 11);
    o.minbytes = 1024; /* a step that lands on -e exactly takes it: 1K 2K 3K 4K */
    o.maxbytes = 4096;
    o.stepbytes = 1024;
    assert_int_equal(pb_options_sweep_sizes(&o, s, PB_MAX_SIZES), 4);
    assert_true(s[3] == 4096);
    assert_int_equal(pb_options_sweep_count(&o), 4);
    o.stepbytes = 0;
    o.stepfactor = 2; /* and so does a factor: 1K 2K 4K */
    assert_int_equal(pb_options_sweep_sizes(&o, s, PB_MAX_SIZES), 3);
    assert_true(s[2] == 4096);
    assert_int_equal(pb_options_sweep_count(&o), 3);
    o.maxbytes = 1024;
    o.stepbytes = 100;
    o.minbytes = 2048;
    assert_int_equal(pb_options_validate(&o), PB_ERR_USAGE);
    o.nsizes = 2;
    o.sizes[0] = 5;
    o.sizes[1] = 7;
    assert_int_equal(pb_options_validate(&o), PB_OK); /* an explicit list overrides -b/-e */
    assert_int_equal(pb_options_sweep_sizes(&o, s, PB_MAX_SIZES), 2);
}

/* Full command lines through pb_options_parse: unknown options, missing values, strays. */
static void command_lines(void **state)
{
    (void)state;
    pb_options o;
    pb_options_defaults(&o);
    pb_options_group g = pb_options_common_group(&o, PB_OPTS_ALL);
    char *ok[] = {"x", "-b", "1K", "-e", "1M", "-d", "bf16", "-o", "max", "--csv", "f.csv", NULL};
    assert_int_equal(pb_options_parse(11, ok, "usage", &g, 1), PB_OK);
    assert_true(o.minbytes == 1024 && o.maxbytes == (1u << 20) && o.dtype == PB_BFLOAT16 && o.op == PB_MAX);
    char *unknown[] = {"x", "--bogus", NULL};
    assert_int_equal(pb_options_parse(2, unknown, "usage", &g, 1), PB_ERR_USAGE);
    char *missing[] = {"x", "-e", NULL};
    assert_int_equal(pb_options_parse(2, missing, "usage", &g, 1), PB_ERR_USAGE);
    char *stray[] = {"x", "stray", NULL};
    assert_int_equal(pb_options_parse(2, stray, "usage", &g, 1), PB_ERR_USAGE);
    char *baddtype[] = {"x", "-d", "double", NULL};
    assert_int_equal(pb_options_parse(3, baddtype, "usage", &g, 1), PB_ERR_USAGE);
    /* A group without the reduction options does not accept -d. */
    pb_options_group p2p = pb_options_common_group(&o, PB_OPTS_SWEEP);
    char *dtype[] = {"x", "-d", "float", NULL};
    assert_int_equal(pb_options_parse(3, dtype, "usage", &p2p, 1), PB_ERR_USAGE);
    /* --gpu-offset: 0 (the first GPU, said explicitly) to 65536 */
    for (int i = 0; i < 4; i++) {
        char *offset[] = {"x", "--gpu-offset", (char *[]){"0", "65536", "-1", "65537"}[i], NULL};
        pb_options_defaults(&o);
        assert_int_equal(pb_options_parse(3, offset, "usage", &g, 1), i < 2 ? PB_OK : PB_ERR_USAGE);
        if (i < 2) assert_true(o.gpu_offset == (i ? 65536 : 0) && o.gpu_offset_given);
    }
}

/* An option table whose short name is not a letter, or a letter taken already
 * (-h is the help's), is refused before anything is parsed. */
static int ignore_option(void *ctx, int id, const char *option, const char *arg)
{
    (void)ctx, (void)id, (void)option, (void)arg;
    return PB_OK;
}

static void short_names_are_letters(void **state)
{
    (void)state;
    char *argv[] = {"x", NULL};
    pb_options_opt good[] = {{"alpha", 'a', NULL, "a flag", 0}, {"beta", 0, "N", "a value", 1}};
    pb_options_opt bad[][2] = {
        {{"alpha", 1, NULL, "not a letter", 0}, {"beta", 0, "N", "", 1}},
        {{"alpha", '-', NULL, "not a letter", 0}, {"beta", 0, "N", "", 1}},
        {{"alpha", 'a', NULL, "", 0}, {"beta", 'a', "N", "taken twice", 1}},
        {{"alpha", 'h', NULL, "the help's", 0}, {"beta", 0, "N", "", 1}},
        {{"alpha", 300, NULL, "not a char", 0}, {"beta", 0, "N", "", 1}},
    };
    pb_options_group g = {"test", good, 2, ignore_option, NULL};
    assert_int_equal(pb_options_parse(1, argv, "usage", &g, 1), PB_OK);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        g.opts = bad[i];
        assert_int_equal(pb_options_parse(1, argv, "usage", &g, 1), PB_ERR_USAGE);
    }
}

/* Found by fuzzing: an error inside a group of short options ("-Zb") left
 * getopt pointing into the old argv ("b"), so the next parse went on from
 * there (reading freed memory when that argv was gone). */
static void parse_after_an_error(void **state)
{
    (void)state;
    pb_options o;
    pb_options_defaults(&o);
    pb_options_group g = pb_options_common_group(&o, PB_OPTS_ALL);
    char group[] = "-Zb";
    char *first[] = {"x", group, NULL};
    assert_int_equal(pb_options_parse(2, first, "usage", &g, 1), PB_ERR_USAGE);
    char *second[] = {"x", "-n", "5", NULL};
    assert_int_equal(pb_options_parse(3, second, "usage", &g, 1), PB_OK);
    assert_int_equal(o.iters, 5);
}

/* Link classes: names round-trip, unknown names are refused, two different
 * classes join to mixed. */
static void link_classes(void **state)
{
    (void)state;
    for (int k = 0; k < PB_LINK_NCLASS; k++) assert_int_equal(pb_link_parse(pb_link_name(k)), k);
    assert_string_equal(pb_link_name(PB_LINK_INTRA), "intra");
    assert_string_equal(pb_link_name(PB_LINK_INTER), "inter");
    assert_string_equal(pb_link_name(PB_LINK_MIXED), "mixed");
    assert_int_equal(pb_link_parse("nvlink"), -1);
    assert_int_equal(pb_link_parse(NULL), -1);
    assert_int_equal(pb_link_join(PB_LINK_INTER, PB_LINK_INTER), PB_LINK_INTER);
    assert_int_equal(pb_link_join(PB_LINK_INTRA, PB_LINK_INTER), PB_LINK_MIXED);
}

/* pb_parse_count copies the text, with its terminator, into a buffer on the
 * stack: digits left on the stack behind the text must not become part of it. */
static void __attribute__((noinline)) dirty_stack(void)
{
    volatile char junk[1024];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = '7';
}

static void counts_on_a_dirty_stack(void **state)
{
    (void)state;
    const char *texts[] = {"12", "350", "7e9", "1.5"};
    const double want[] = {12, 350, 7e9, 1.5};
    for (int i = 0; i < 4; i++) {
        double d = 0;
        dirty_stack();
        assert_int_equal(pb_parse_count("--params", texts[i], 1, 1e13, &d), PB_OK);
        assert_true(d == want[i]);
    }
}

/* An errno left at ERANGE by an earlier call (a strtod of "1e999" anywhere)
 * must not make a good value out of range: each parser clears it first. */
static void stale_errno(void **state)
{
    (void)state;
    long long i = 0;
    double d = 0;
    int r = -1;
    errno = ERANGE;
    assert_int_equal(pb_parse_int("-n", "5", 1, 10, &i), PB_OK);
    errno = ERANGE;
    assert_int_equal(pb_parse_double("--timeout", "2.5", 0, 10, &d), PB_OK);
    errno = ERANGE;
    assert_int_equal(pb_parse_rank("--slow-rank", "3", 4, &r), PB_OK);
    assert_true(i == 5 && d == 2.5 && r == 3);
}

/* A count is copied into a 64-byte buffer with its terminator: 63 characters
 * fit, 64 are refused (not copied past the buffer). */
static void count_length_limit(void **state)
{
    (void)state;
    char text[65];
    memset(text, '0', sizeof text);
    text[0] = '1', text[1] = '.';
    double d = 0;
    text[63] = '\0';
    assert_int_equal(pb_parse_count("--params", text, 0, 1e13, &d), PB_OK);
    assert_true(d == 1.0);
    text[63] = '0', text[64] = '\0';
    d = 7;
    assert_int_equal(pb_parse_count("--params", text, 0, 1e13, &d), PB_ERR_USAGE);
    assert_true(d == 7);
}

/* A group's ranks in a note: whole when they fit, else cut after an item with
 * "..." (a TP group of 128 ranks in a 256-byte note), never past the buffer. */
static void joined_integers(void **state)
{
    (void)state;
    char buf[256];
    const int three[] = {1, 22, -333};
    assert_int_equal(pb_parse_join_ints(three, 3, buf, 10), 3);
    assert_string_equal(buf, "1,22,-333");
    assert_int_equal(pb_parse_join_ints(three, 3, buf, 9), 2);
    assert_string_equal(buf, "1,22,...");
    assert_int_equal(pb_parse_join_ints(three, 3, buf, 8), 1); /* ",22" would leave no room for ",..." */
    assert_string_equal(buf, "1,...");
    assert_int_equal(pb_parse_join_ints(three, 0, buf, sizeof buf), 0);
    assert_string_equal(buf, "");
    buf[0] = 'x';
    assert_int_equal(pb_parse_join_ints(three, 3, buf, 0), 0); /* no room: nothing written, not even the terminator */
    assert_int_equal(buf[0], 'x');
    int ranks[128], k;
    for (k = 0; k < 128; k++) ranks[k] = k;
    memset(buf, 'x', sizeof buf);
    int n = pb_parse_join_ints(ranks, 128, buf, sizeof buf);
    assert_true(n > 50 && n < 128);
    size_t len = strlen(buf);
    assert_true(len < sizeof buf && len + 5 >= sizeof buf - 4);
    assert_string_equal(buf + len - 4, ",...");
    char want[256] = "";
    for (k = 0; k < n; k++) snprintf(want + strlen(want), sizeof want - strlen(want), "%s%d", k ? "," : "", k);
    assert_int_equal(strncmp(buf, want, strlen(want)), 0);
    assert_int_equal(len, strlen(want) + 4);
}

int main(void)
{
    pb_error_set_quiet_usage(1); /* the messages are for users; here only the status matters */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sizes_with_suffixes), cmocka_unit_test(sizes_rejected),
        cmocka_unit_test(size_lists),          cmocka_unit_test(integers_and_doubles),
        cmocka_unit_test(choices),             cmocka_unit_test(lists),             cmocka_unit_test(sweep_sizes),
        cmocka_unit_test(command_lines),       cmocka_unit_test(parse_after_an_error), cmocka_unit_test(link_classes),
        cmocka_unit_test(short_names_are_letters), cmocka_unit_test(counts_on_a_dirty_stack), cmocka_unit_test(joined_integers),
        cmocka_unit_test(stale_errno), cmocka_unit_test(count_length_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
