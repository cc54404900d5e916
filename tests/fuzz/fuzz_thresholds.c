/* libFuzzer target: the acceptance threshold-file parser on any bytes. A
 * parse either succeeds with sane rules or fails with a FILE:LINE message. */
#include "core/error.h"
#include "plan/thresholds.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) pb_error_set_quiet_usage(quiet = 1);
    pb_thresholds_set set;
    char err[256];
    int rc = pb_thresholds_parse("fuzz", (const char *)data, size, &set, err, sizeof err);
    if (rc == PB_OK) {
        if (set.n < 1 || set.n > PB_TH_RULES_MAX) abort();
        for (int i = 0; i < set.n; i++) {
            const pb_thresholds_rule *r = &set.rules[i];
            if (!r->metric || r->line < 1 || !isfinite(r->value) || r->value < 0) abort();
            if ((r->metric->required & ~r->keys) != 0) abort();
            if (memchr(r->source_text, '\0', sizeof r->source_text) == NULL) abort();
        }
        pb_thresholds_free(&set);
    } else if (rc != PB_ERR_USAGE || strncmp(err, "fuzz:", 5) != 0 || set.rules != NULL) {
        abort();
    }
    return 0;
}
