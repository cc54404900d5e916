/* libFuzzer target: the escaping module (core/escape.h) on any bytes. Each
 * output must keep its promise: a CSV comment or field on one line with no
 * control byte and valid UTF-8, XML with no raw markup or forbidden
 * character, UTF-8 output valid, a shell word on one line. */
#include "core/escape.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void valid_utf8(const char *s)
{
    while (*s) {
        int n = pb_escape_utf8_len(s);
        if (n == 0) abort();
        s += n;
    }
}

static void one_line(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7F) abort();
    if (strstr(s, "\xC2\x85") || strstr(s, "\xE2\x80\xA8") || strstr(s, "\xE2\x80\xA9")) abort();
    valid_utf8(s);
}

static void xml_ok(const char *s)
{
    valid_utf8(s);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == '<' || *p == '>' || *p == '"' || *p == '\'') abort();
    for (const char *a = strchr(s, '&'); a; a = strchr(a + 1, '&'))
        if (strncmp(a, "&amp;", 5) && strncmp(a, "&lt;", 4) && strncmp(a, "&gt;", 4) && strncmp(a, "&quot;", 6) &&
            strncmp(a, "&apos;", 6) && strncmp(a, "&#9;", 4) && strncmp(a, "&#10;", 5) && strncmp(a, "&#13;", 5))
            abort();
    if (strstr(s, "\xEF\xBF\xBE") || strstr(s, "\xEF\xBF\xBF")) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *in = malloc(size + 1);
    if (!in) return 0;
    memcpy(in, data, size);
    in[size] = '\0';
    char *c = pb_escape_csv_comment(in), *f = pb_escape_csv_field(in), *x = pb_escape_xml(in);
    char *u = pb_escape_utf8(in), *sh = pb_escape_shell(in), *a = pb_escape_ascii(in);
    if (!c || !f || !x || !u || !sh || !a) abort();
    one_line(c);
    one_line(f);
    if (strpbrk(f, ",\"") && f[0] != '"') abort(); /* a comma or quote only inside quotes */
    if (f[0] == '#') abort();                       /* never read back as a comment */
    xml_ok(x);
    valid_utf8(u);
    if (strlen(u) < strlen(in)) abort();            /* nothing dropped */
    one_line(sh);
    for (const unsigned char *p = (const unsigned char *)a; *p; p++)
        if (*p < 0x20 || *p >= 0x7F) abort();
    free(c), free(f), free(x), free(u), free(sh), free(a), free(in);
    return 0;
}
