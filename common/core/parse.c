#include "core/parse.h"

#include "core/error.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int is_blank(const char *s) { return s == NULL || *s == '\0'; }

static const char *skip_digits(const char *p)
{
    while (isdigit((unsigned char)*p)) p++;
    return p;
}

const char *pb_parse_decimal_problem(const char *text, int fraction)
{
    if (is_blank(text)) return "is empty";
    const char *p = text;
    if (*p == '+') return "starts with '+'";
    if (isspace((unsigned char)*p)) return "starts with a blank";
    if (*p == '-') p++;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) return "is hexadecimal";
    if (strncasecmp(p, "inf", 3) == 0 || strncasecmp(p, "nan", 3) == 0) return "is not finite";
    if (!isdigit((unsigned char)*p)) return fraction ? "is not a number" : "is not an integer";
    if (p[0] == '0' && isdigit((unsigned char)p[1])) return "has a leading zero (octal-looking)";
    p = skip_digits(p);
    if (fraction && *p == '.') {
        if (!isdigit((unsigned char)p[1])) return "has no digits after the '.'";
        p = skip_digits(p + 1);
    }
    if (fraction && (*p == 'e' || *p == 'E')) {
        const char *q = p + 1 + (p[1] == '-' || p[1] == '+');
        if (!isdigit((unsigned char)*q)) return "has an incomplete exponent";
        p = skip_digits(q);
    }
    if (*p) return fraction || *p != '.' ? "has trailing characters" : "is fractional";
    return NULL;
}

/* Parse an unsigned decimal prefix without the surprises of strtoull (which
 * accepts "-1" and leading spaces). Returns the number of digits consumed,
 * 0 on no digits, -1 on overflow. */
static int parse_digits(const char *s, uint64_t *value)
{
    uint64_t v = 0;
    int n = 0;
    while (isdigit((unsigned char)s[n])) {
        unsigned d = (unsigned)(s[n] - '0');
        if (v > (UINT64_MAX - d) / 10) return -1;
        v = v * 10 + d;
        n++;
    }
    *value = v;
    return n;
}

static int suffix_shift(const char *suffix, int *shift)
{
    static const struct {
        const char *text;
        int shift;
    } table[] = {{"", 0},    {"b", 0},    {"k", 10},   {"kb", 10},  {"kib", 10}, {"m", 20},
                 {"mb", 20}, {"mib", 20}, {"g", 30},   {"gb", 30},  {"gib", 30}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcasecmp(suffix, table[i].text) == 0) {
            *shift = table[i].shift;
            return 1;
        }
    }
    return 0;
}

int pb_parse_size(const char *option, const char *text, uint64_t max, uint64_t *out)
{
    const char *accepted = "expected a positive integer of bytes with an optional K, M or G suffix (1024^n)";
    if (is_blank(text)) return pb_error_usage(option, "empty value; %s", accepted);
    if (text[0] == '-') return pb_error_usage(option, "'%s' is negative; %s", text, accepted);
    if (text[0] == '+') return pb_error_usage(option, "'%s' starts with '+'; %s", text, accepted);
    if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
        return pb_error_usage(option, "'%s' is hexadecimal; %s", text, accepted);
    if (text[0] == '0' && isdigit((unsigned char)text[1]))
        return pb_error_usage(option, "'%s' has a leading zero (octal-looking); %s", text, accepted);
    uint64_t value;
    int n = parse_digits(text, &value);
    if (n == 0) return pb_error_usage(option, "'%s' is not a size; %s", text, accepted);
    int shift;
    if (n < 0 || !suffix_shift(text + n, &shift)) {
        if (n > 0 && text[n] == '.') return pb_error_usage(option, "'%s' is fractional; %s", text, accepted);
        if (n < 0) return pb_error_usage(option, "'%s' is out of range; the maximum is %llu bytes", text, (unsigned long long)max);
        return pb_error_usage(option, "'%s' has an unknown suffix '%s'; %s", text, text + n, accepted);
    }
    if (value == 0) return pb_error_usage(option, "'%s' is zero; %s", text, accepted);
    if (value > (max >> shift))
        return pb_error_usage(option, "'%s' is out of range; the maximum is %llu bytes", text, (unsigned long long)max);
    *out = value << shift;
    return PB_OK;
}

/* Split `text` at commas into `item` calls; empty items are refused. `expected`
 * says what the list holds, for the messages. */
static int for_each_item(const char *option, const char *text, const char *expected,
                         int (*item)(void *ctx, const char *tok), void *ctx)
{
    if (is_blank(text)) return pb_error_usage(option, "empty list; expected %s", expected);
    for (const char *p = text;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char tok[128];
        if (len == 0) return pb_error_usage(option, "'%s' has an empty item; expected %s", text, expected);
        if (len >= sizeof tok) return pb_error_usage(option, "item '%.*s...' is too long", 16, p);
        memcpy(tok, p, len);
        tok[len] = '\0';
        PB_TRY(item(ctx, tok));
        if (!comma) return PB_OK;
        p = comma + 1;
    }
}

#define LIST_OF_VALUES "comma-separated values, see --help"

struct size_list {
    const char *option;
    uint64_t max, *out;
    size_t n;
};

static int size_item(void *ctx, const char *tok)
{
    struct size_list *l = ctx;
    PB_TRY(pb_parse_size(l->option, tok, l->max, &l->out[l->n]));
    l->n++;
    return PB_OK;
}

int pb_parse_size_list(const char *option, const char *text, uint64_t max, uint64_t *out, size_t cap,
                       size_t *count)
{
    size_t given = 1;
    for (const char *c = text; *c; c++) given += *c == ',';
    if (given > cap && !is_blank(text))
        return pb_error_usage(option, "%zu sizes, too many; at most %zu in one run", given, cap);
    struct size_list l = {option, max, out, 0};
    PB_TRY(for_each_item(option, text, "sizes separated by commas, e.g. 1K,12M", size_item, &l));
    *count = l.n;
    return PB_OK;
}

int pb_parse_int(const char *option, const char *text, long long min, long long max, long long *out)
{
    if (is_blank(text)) return pb_error_usage(option, "empty value; expected an integer in [%lld, %lld]", min, max);
    const char *problem = pb_parse_decimal_problem(text, 0);
    if (problem)
        return pb_error_usage(option, "'%s' %s; expected a decimal integer in [%lld, %lld]", text, problem, min, max);
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno == ERANGE || v < min || v > max)
        return pb_error_usage(option, "'%s' is out of range; expected an integer in [%lld, %lld]", text, min, max);
    *out = v;
    return PB_OK;
}

int pb_parse_double(const char *option, const char *text, double min, double max, double *out)
{
    if (is_blank(text)) return pb_error_usage(option, "empty value; expected a number in [%g, %g]", min, max);
    const char *problem = pb_parse_decimal_problem(text, 1);
    if (problem)
        return pb_error_usage(option, "'%s' %s; expected a decimal number in [%g, %g]", text, problem, min, max);
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (!isfinite(v)) errno = ERANGE;
    if (errno == ERANGE || v < min || v > max)
        return pb_error_usage(option, "'%s' is out of range; expected a number in [%g, %g]", text, min, max);
    *out = v;
    return PB_OK;
}

int pb_parse_rank(const char *option, const char *text, int nranks, int *out)
{
    const char *problem = pb_parse_decimal_problem(text, 0);
    if (problem) return pb_error_usage(option, "'%s' %s; expected a rank in 0..%d", text, problem, nranks - 1);
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno == ERANGE || v < 0 || v >= nranks)
        return pb_error_usage(option, "rank '%s' is out of range; expected a rank in 0..%d", text, nranks - 1);
    *out = (int)v;
    return PB_OK;
}

int pb_parse_count(const char *option, const char *text, double min, double max, double *out)
{
    const char *accepted = "expected a decimal count with an optional K, M, B (or G) or T suffix (powers of 1000), "
                           "e.g. 350M, 1.3B or 7e9";
    static const char sfx[] = "KkMmBbGgTt";
    static const double mult[] = {1e3, 1e3, 1e6, 1e6, 1e9, 1e9, 1e9, 1e9, 1e12, 1e12};
    char num[64];
    size_t len = is_blank(text) ? 0 : strlen(text);
    if (len == 0 || len >= sizeof num) return pb_error_usage(option, "'%s' is not a count; %s", text ? text : "", accepted);
    memcpy(num, text, len + 1);
    const char *p = strchr(sfx, num[len - 1]);
    double m = 1;
    if (p && len > 1) m = mult[p - sfx], num[len - 1] = '\0';
    const char *problem = pb_parse_decimal_problem(num, 1);
    if (problem) return pb_error_usage(option, "'%s' %s; %s", text, problem, accepted);
    double v = strtod(num, NULL) * m;
    if (!isfinite(v) || v < min || v > max)
        return pb_error_usage(option, "'%s' is out of range; expected a count in [%g, %g]", text, min, max);
    *out = v;
    return PB_OK;
}


struct int_list {
    const char *option;
    long long min, max;
    int64_t *out;
    size_t cap, n;
};

static int int_item(void *ctx, const char *tok)
{
    struct int_list *l = ctx;
    long long v = 0;
    if (l->n == l->cap) return pb_error_usage(l->option, "too many values; at most %zu", l->cap);
    PB_TRY(pb_parse_int(l->option, tok, l->min, l->max, &v));
    l->out[l->n++] = v;
    return PB_OK;
}

int pb_parse_int_list(const char *option, const char *text, long long min, long long max, int64_t *out, size_t cap,
                      size_t *count)
{
    struct int_list l = {option, min, max, out, cap, 0};
    PB_TRY(for_each_item(option, text, LIST_OF_VALUES, int_item, &l));
    *count = l.n;
    return PB_OK;
}

struct double_list {
    const char *option;
    double min, max, *out;
    size_t cap, n;
};

static int double_item(void *ctx, const char *tok)
{
    struct double_list *l = ctx;
    double v = 0;
    if (l->n == l->cap) return pb_error_usage(l->option, "too many values; at most %zu", l->cap);
    PB_TRY(pb_parse_double(l->option, tok, l->min, l->max, &v));
    l->out[l->n++] = v;
    return PB_OK;
}

int pb_parse_double_list(const char *option, const char *text, double min, double max, double *out, size_t cap,
                         size_t *count)
{
    struct double_list l = {option, min, max, out, cap, 0};
    PB_TRY(for_each_item(option, text, LIST_OF_VALUES, double_item, &l));
    *count = l.n;
    return PB_OK;
}

struct choice_list {
    const char *option;
    const char *const *names;
    int allow_all, *out, n;
    uint64_t named; /* the names written out so far (choice tables hold fewer than 64) */
};

static void add_once(struct choice_list *l, int k)
{
    for (int i = 0; i < l->n; i++)
        if (l->out[i] == k) return;
    l->out[l->n++] = k;
}

static int choice_item(void *ctx, const char *tok)
{
    struct choice_list *l = ctx;
    if (l->allow_all && strcmp(tok, "all") == 0) {
        for (int k = 0; l->names[k]; k++) add_once(l, k);
        return PB_OK;
    }
    int k = 0;
    PB_TRY(pb_parse_choice(l->option, tok, l->names, &k));
    /* A name written twice is a typo, refused as a repeated option is; "all" with names
     * ("1f1b,all") only widens the set. */
    uint64_t bit = k < 64 ? 1ull << k : 0;
    if (l->named & bit) return pb_error_usage(l->option, "'%s' is named twice; name each once", tok);
    l->named |= bit;
    add_once(l, k);
    return PB_OK;
}

int pb_parse_choice_list(const char *option, const char *text, const char *const *names, int allow_all, int *out,
                         int *count)
{
    struct choice_list l = {option, names, allow_all, out, 0, 0};
    PB_TRY(for_each_item(option, text, LIST_OF_VALUES, choice_item, &l));
    *count = l.n;
    return PB_OK;
}

const char *pb_parse_join_names(const char *const *names, char *buf, size_t len)
{
    size_t used = 0;
    if (len > 0) buf[0] = '\0';
    for (int i = 0; names[i] && used < len; i++) {
        const char *sep = i == 0 ? "" : names[i + 1] ? ", " : " or ";
        used += (size_t)snprintf(buf + used, len - used, "%s%s", sep, names[i]);
    }
    return buf;
}

int pb_parse_join_ints(const int *v, int n, char *buf, size_t len)
{
    if (len == 0) return 0;
    buf[0] = '\0';
    size_t used = 0;
    for (int k = 0; k < n; k++) {
        char item[16];
        size_t m = (size_t)snprintf(item, sizeof item, "%s%d", k ? "," : "", v[k]);
        /* an item that is not the last keeps room for a closing ",..." */
        if (used + m + (k + 1 < n ? 4 : 0) >= len) {
            snprintf(buf + used, len - used, "%s...", k ? "," : "");
            return k;
        }
        memcpy(buf + used, item, m + 1);
        used += m;
    }
    return n;
}

int pb_parse_choice(const char *option, const char *text, const char *const *names, int *out)
{
    for (int i = 0; names[i]; i++) {
        if (text && strcmp(text, names[i]) == 0) {
            *out = i;
            return PB_OK;
        }
    }
    char list[512] = "";
    for (int i = 0; names[i]; i++) {
        if (i) strncat(list, ", ", sizeof list - strlen(list) - 1);
        strncat(list, names[i], sizeof list - strlen(list) - 1);
    }
    return pb_error_usage(option, "'%s' is not accepted; expected one of: %s", text ? text : "", list);
}
