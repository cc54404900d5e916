/* libFuzzer target: the rank-map reader (hybrid_3d --rankmap FILE) on any
 * text, for a 2 x 2 x 2 grid: it either refuses it (usage, FILE:LINE) or
 * returns a placement that is a permutation of the 8 ranks. */
#include "core/error.h"
#include "workload/placement.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) pb_error_set_quiet_usage(quiet = 1);
    char *text = malloc(size + 1); /* the reader takes a C string, as getdelim hands it over */
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    int rank_at[8], seen[8] = {0};
    int rc = pb_placement_rankmap_parse("fuzz", text, 2, 2, 2, rank_at);
    free(text);
    if (rc == PB_OK) {
        for (int i = 0; i < 8; i++) {
            if (rank_at[i] < 0 || rank_at[i] >= 8 || seen[rank_at[i]]++) abort();
        }
    } else if (rc != PB_ERR_USAGE) {
        abort();
    }
    return 0;
}
