/* libFuzzer target: the size parsers (-b/-e values and --sizes lists) on any bytes. */
#include "core/error.h"
#include "core/parse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) pb_error_set_quiet_usage(quiet = 1);
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    uint64_t v = 0, list[16];
    size_t n = 0;
    if (pb_parse_size("-e", text, PB_SIZE_MAX, &v) == PB_OK && (v == 0 || v > PB_SIZE_MAX)) abort();
    if (pb_parse_size_list("--sizes", text, PB_SIZE_MAX, list, 16, &n) == PB_OK) {
        if (n == 0 || n > 16) abort();
        for (size_t i = 0; i < n; i++)
            if (list[i] == 0 || list[i] > PB_SIZE_MAX) abort();
    }
    long long k;
    double d;
    pb_parse_int("-n", text, -5, 1000, &k);
    pb_parse_double("--x", text, 0, 10, &d);
    free(text);
    return 0;
}
