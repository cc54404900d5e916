#include "core/parse.h"

#include "core/error.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int is_blank(const char *s) { return s == NULL || *s == '\0'; }

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

int pb_parse_size_list(const char *option, const char *text, uint64_t max, uint64_t *out, size_t cap,
                       size_t *count)
{
    if (is_blank(text)) return pb_error_usage(option, "empty list; expected sizes separated by commas, e.g. 1K,12M");
    size_t n = 0;
    const char *p = text;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char item[64];
        if (len == 0) return pb_error_usage(option, "'%s' has an empty item; expected sizes separated by commas", text);
        if (len >= sizeof item) return pb_error_usage(option, "item '%.*s...' is too long", 16, p);
        if (n == cap) return pb_error_usage(option, "too many sizes; at most %zu", cap);
        memcpy(item, p, len);
        item[len] = '\0';
        PB_TRY(pb_parse_size(option, item, max, &out[n]));
        n++;
        if (!comma) break;
        p = comma + 1;
    }
    *count = n;
    return PB_OK;
}

int pb_parse_int(const char *option, const char *text, long long min, long long max, long long *out)
{
    if (is_blank(text)) return pb_error_usage(option, "empty value; expected an integer in [%lld, %lld]", min, max);
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (isspace((unsigned char)text[0]) || *end != '\0' || end == text)
        return pb_error_usage(option, "'%s' is not an integer; expected an integer in [%lld, %lld]", text, min, max);
    if (errno == ERANGE || v < min || v > max)
        return pb_error_usage(option, "'%s' is out of range; expected an integer in [%lld, %lld]", text, min, max);
    *out = v;
    return PB_OK;
}

int pb_parse_double(const char *option, const char *text, double min, double max, double *out)
{
    if (is_blank(text)) return pb_error_usage(option, "empty value; expected a number in [%g, %g]", min, max);
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (isspace((unsigned char)text[0]) || *end != '\0' || end == text || !isfinite(v))
        return pb_error_usage(option, "'%s' is not a number; expected a number in [%g, %g]", text, min, max);
    if (errno == ERANGE || v < min || v > max)
        return pb_error_usage(option, "'%s' is out of range; expected a number in [%g, %g]", text, min, max);
    *out = v;
    return PB_OK;
}

/* Split `text` at commas into `item` calls; empty items are refused. */
static int for_each_item(const char *option, const char *text, int (*item)(void *ctx, const char *tok), void *ctx)
{
    if (is_blank(text)) return pb_error_usage(option, "empty list; expected comma-separated values, see --help");
    for (const char *p = text;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char tok[128];
        if (len == 0) return pb_error_usage(option, "'%s' has an empty item; expected comma-separated values", text);
        if (len >= sizeof tok) return pb_error_usage(option, "item '%.*s...' is too long", 16, p);
        memcpy(tok, p, len);
        tok[len] = '\0';
        PB_TRY(item(ctx, tok));
        if (!comma) return PB_OK;
        p = comma + 1;
    }
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
    PB_TRY(for_each_item(option, text, int_item, &l));
    *count = l.n;
    return PB_OK;
}

struct choice_list {
    const char *option;
    const char *const *names;
    int allow_all, *out, n;
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
    add_once(l, k);
    return PB_OK;
}

int pb_parse_choice_list(const char *option, const char *text, const char *const *names, int allow_all, int *out,
                         int *count)
{
    struct choice_list l = {option, names, allow_all, out, 0};
    PB_TRY(for_each_item(option, text, choice_item, &l));
    *count = l.n;
    return PB_OK;
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
