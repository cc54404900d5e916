#include "core/escape.h"

#include <stdlib.h>
#include <string.h>

/* A growable output string; `failed` once memory ran out. */
typedef struct buf {
    char *s;
    size_t n, cap;
    int failed;
} buf;

static void put(buf *b, const char *text, size_t len)
{
    if (b->failed) return;
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (b->n + len + 1 > cap) cap *= 2;
        char *ns = realloc(b->s, cap);
        if (!ns) {
            b->failed = 1;
            return;
        }
        b->s = ns;
        b->cap = cap;
    }
    memcpy(b->s + b->n, text, len);
    b->n += len;
    b->s[b->n] = '\0';
}

static void puts_(buf *b, const char *text) { put(b, text, strlen(text)); }

static char *done(buf *b)
{
    if (!b->failed && !b->s) put(b, "", 0);
    if (b->failed) {
        free(b->s);
        return NULL;
    }
    return b->s;
}

static int in_range(unsigned char c, unsigned lo, unsigned hi) { return c >= lo && c <= hi; }

int pb_escape_utf8_len(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    if (in_range(c, 0xC2, 0xDF)) return in_range(s[1], 0x80, 0xBF) ? 2 : 0;
    if (in_range(c, 0xE0, 0xEF)) {
        unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF; /* no overlongs, no surrogates */
        return in_range(s[1], lo, hi) && in_range(s[2], 0x80, 0xBF) ? 3 : 0;
    }
    if (in_range(c, 0xF0, 0xF4)) {
        unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF; /* at most U+10FFFF */
        return in_range(s[1], lo, hi) && in_range(s[2], 0x80, 0xBF) && in_range(s[3], 0x80, 0xBF) ? 4 : 0;
    }
    return 0;
}

static int is_control(unsigned char c) { return c < 0x20 || c == 0x7F; }

/* \n \r \t \\ or \xNN for one byte. */
static void c_escape(buf *b, unsigned char c)
{
    static const char hex[] = "0123456789abcdef";
    char e[5] = {'\\', 'x', hex[c >> 4], hex[c & 15], 0};
    if (c == '\n') puts_(b, "\\n");
    else if (c == '\r') puts_(b, "\\r");
    else if (c == '\t') puts_(b, "\\t");
    else if (c == '\\') puts_(b, "\\\\");
    else puts_(b, e);
}

/* Control characters and invalid UTF-8 escaped; the rest kept, backslashes
 * too (the text is for reading and copying, e.g. a shell command, not for
 * decoding back). */
static int unicode_break(const char *s, int n)
{
    const unsigned char *u = (const unsigned char *)s;
    return (n == 2 && u[0] == 0xC2 && u[1] == 0x85) ||                    /* U+0085 */
           (n == 3 && u[0] == 0xE2 && u[1] == 0x80 && (u[2] == 0xA8 || u[2] == 0xA9)); /* U+2028, U+2029 */
}

static void one_line(buf *b, const char *s)
{
    while (*s) {
        unsigned char c = (unsigned char)*s;
        int n = pb_escape_utf8_len(s);
        if (n && unicode_break(s, n)) {
            /* line breaks to Unicode-aware readers (Python's splitlines) */
            for (int i = 0; i < n; i++) c_escape(b, (unsigned char)s[i]);
            s += n;
        } else if (n == 0 || is_control(c)) {
            c_escape(b, c);
            s++;
        } else {
            put(b, s, (size_t)n);
            s += n;
        }
    }
}

char *pb_escape_csv_comment(const char *s)
{
    buf b = {0};
    one_line(&b, s ? s : "");
    return done(&b);
}

char *pb_escape_csv_field(const char *s)
{
    buf line = {0};
    one_line(&line, s ? s : "");
    char *t = done(&line);
    if (!t) return NULL;
    int quote = strpbrk(t, ",\"") || t[0] == '#' || t[0] == ' ';
    if (!quote) return t;
    buf b = {0};
    puts_(&b, "\"");
    for (const char *p = t; *p; p++) put(&b, *p == '"' ? "\"\"" : p, *p == '"' ? 2 : 1);
    puts_(&b, "\"");
    free(t);
    return done(&b);
}

static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */

char *pb_escape_xml(const char *s)
{
    buf b = {0};
    for (s = s ? s : ""; *s;) {
        unsigned char c = (unsigned char)*s;
        int n = pb_escape_utf8_len(s);
        const char *ent = c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '"' ? "&quot;"
                        : c == '\'' ? "&apos;" : c == '\t' ? "&#9;" : c == '\n' ? "&#10;" : c == '\r' ? "&#13;" : NULL;
        /* U+FFFE and U+FFFF are not XML characters either */
        int nonchar = n == 3 && c == 0xEF && (unsigned char)s[1] == 0xBF && (unsigned char)s[2] >= 0xBE;
        if (ent) puts_(&b, ent);
        else if (n == 0 || c < 0x20 || nonchar) puts_(&b, replacement);
        else put(&b, s, (size_t)n);
        s += n ? n : 1;
    }
    return done(&b);
}

char *pb_escape_utf8(const char *s)
{
    buf b = {0};
    for (s = s ? s : ""; *s;) {
        int n = pb_escape_utf8_len(s);
        if (n) put(&b, s, (size_t)n);
        else puts_(&b, replacement);
        s += n ? n : 1;
    }
    return done(&b);
}

static int shell_plain(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=,+@%-", *s)) return 0;
    return 1;
}

static int shell_needs_ansi(const char *s)
{
    while (*s) {
        int n = pb_escape_utf8_len(s);
        if (n == 0 || is_control((unsigned char)*s) || unicode_break(s, n)) return 1;
        s += n;
    }
    return 0;
}

char *pb_escape_shell(const char *s)
{
    buf b = {0};
    s = s ? s : "";
    if (shell_plain(s)) {
        puts_(&b, s);
    } else if (shell_needs_ansi(s)) {
        puts_(&b, "$'");
        while (*s) {
            unsigned char c = (unsigned char)*s;
            int n = pb_escape_utf8_len(s);
            if (c == '\'') puts_(&b, "\\'");
            else if (n == 0 || is_control(c) || c == '\\') c_escape(&b, c);
            else if (unicode_break(s, n)) for (int i = 0; i < n; i++) c_escape(&b, (unsigned char)s[i]);
            else put(&b, s, (size_t)n);
            s += n ? n : 1;
        }
        puts_(&b, "'");
    } else {
        puts_(&b, "'");
        for (; *s; s++) puts_(&b, *s == '\'' ? "'\\''" : (char[2]){*s, 0});
        puts_(&b, "'");
    }
    return done(&b);
}

char *pb_escape_ascii(const char *s)
{
    buf b = {0};
    for (s = s ? s : ""; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c >= 0x7F || c == '\\') c_escape(&b, c);
        else put(&b, s, 1);
    }
    return done(&b);
}

char *pb_escape_argv(int argc, char *const *argv)
{
    buf b = {0};
    for (int i = 0; i < argc; i++) {
        char *w = pb_escape_shell(argv[i]);
        if (!w) b.failed = 1;
        if (i) puts_(&b, " ");
        if (w) puts_(&b, w);
        free(w);
    }
    return done(&b);
}

int pb_escape_fputs(FILE *f, char *(*fn)(const char *), const char *s)
{
    char *t = fn(s);
    if (!t) return -1;
    int rc = fputs(t, f) >= 0 ? 0 : -1;
    free(t);
    return rc;
}
