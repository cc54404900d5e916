/* libFuzzer target: whole command lines through pb_options_parse with the common
 * option group. The input is split at NUL bytes into argv. */
#include "core/error.h"
#include "core/options.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) pb_error_set_quiet_usage(quiet = 1);
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[MAX_ARGS + 2] = {"fuzz"};
    int argc = 1;
    for (size_t i = 0; i <= size && argc < MAX_ARGS; i++) {
        argv[argc++] = buf + i;
        while (i < size && buf[i] != '\0') i++;
    }
    argv[argc] = NULL;
    pb_options o;
    pb_options_defaults(&o);
    pb_options_group g = pb_options_common_group(&o, PB_OPTS_ALL);
    int status = pb_options_parse(argc, argv, "fuzz", &g, 1);
    if (status == PB_OK) {
        uint64_t sizes[PB_MAX_SIZES];
        if (pb_options_validate(&o) == PB_OK) {
            size_t n = pb_options_sweep_sizes(&o, sizes, PB_MAX_SIZES);
            for (size_t i = 0; i < n; i++)
                if (sizes[i] == 0) abort();
        }
    }
    free(buf);
    return 0;
}
