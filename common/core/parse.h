/* Strict parsing of option values. Every function names the option in its
 * error message, says what it accepts, and returns PB_OK or PB_ERR_USAGE. */
#ifndef PB_PARSE_H
#define PB_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* Largest size any option accepts: 64 GiB. Larger values are refused as out of range. */
#define PB_SIZE_MAX ((uint64_t)64 << 30)

/* A byte count: digits with an optional K, M or G suffix (1024^n, case-insensitive,
 * an optional trailing B/iB: "4K", "4KB", "4KiB"). Zero, negative, fractional,
 * garbage and values above `max` are refused. */
int pb_parse_size(const char *option, const char *text, uint64_t max, uint64_t *out);

/* A comma-separated list of sizes ("1K,12M,1G"), each as pb_parse_size. At most `cap` entries. */
int pb_parse_size_list(const char *option, const char *text, uint64_t max, uint64_t *out, size_t cap,
                       size_t *count);

/* Why `text` is not a plain decimal number, or NULL when it is one: an
 * optional '-', digits without a leading zero, and (when `fraction`) an
 * optional fraction and exponent. Hexadecimal, octal-looking, a leading '+',
 * blanks, inf/nan and trailing characters are refused. For file readers that
 * word their own message (thresholds, CSV); options use the functions below. */
const char *pb_parse_decimal_problem(const char *text, int fraction);

/* A decimal integer in [min, max] (pb_parse_decimal_problem's form). */
int pb_parse_int(const char *option, const char *text, long long min, long long max, long long *out);

/* A finite decimal number in [min, max] (pb_parse_decimal_problem's form, so
 * no hex, inf or nan); overflow is refused as out of range. */
int pb_parse_double(const char *option, const char *text, double min, double max, double *out);

/* A rank of a world (or group) of `nranks`: "expected a rank in 0..N-1". */
int pb_parse_rank(const char *option, const char *text, int nranks, int *out);

/* A count with an optional K, M, B (= G) or T suffix, powers of 1000
 * ("350M", "1.3B", "7e9"), in [min, max]. */
int pb_parse_count(const char *option, const char *text, double min, double max, double *out);

/* The NULL-terminated `names` as prose into buf: "a", "a or b", "a, b or c"
 * (help texts and "expected ..." messages of the tables). Returns buf. */
const char *pb_parse_join_names(const char *const *names, char *buf, size_t len);

/* The n integers as "1,2,3" into buf (notes naming the ranks of a group). One
 * that does not fit ends the list with "..." instead, so a long list is cut,
 * never overrun. Returns how many were written. */
int pb_parse_join_ints(const int *v, int n, char *buf, size_t len);

/* Index of `text` in the NULL-terminated `names`, or a usage error listing them. */
int pb_parse_choice(const char *option, const char *text, const char *const *names, int *out);

/* A comma-separated list of integers in [min, max] ("1,2,4"), at most `cap`;
 * empty items and empty lists are refused. */
int pb_parse_int_list(const char *option, const char *text, long long min, long long max, int64_t *out, size_t cap,
                      size_t *count);

/* A comma-separated list of numbers, each as pb_parse_double (finite, in
 * [min, max]), at most `cap`; empty items and empty lists are refused. */
int pb_parse_double_list(const char *option, const char *text, double min, double max, double *out, size_t cap,
                         size_t *count);

/* A comma-separated list of names from `names` (NULL-terminated), in the order
 * given, each kept once; "all" (when allow_all) stands for every name. At
 * most as many entries as names. */
int pb_parse_choice_list(const char *option, const char *text, const char *const *names, int allow_all, int *out,
                         int *count);

#endif
