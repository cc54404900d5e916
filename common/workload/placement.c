#include "workload/placement.h"

#include "core/error.h"
#include "core/parse.h"

#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {"tp-inner", "dp-inner", "naive", "rankmap", NULL};

const char *pb_placement_name(pb_placement p) { return names[p]; }

int pb_placement_parse(const char *option, const char *text, pb_placement *out)
{
    int k;
    PB_TRY(pb_parse_choice(option, text, names, &k));
    *out = (pb_placement)k;
    return PB_OK;
}

/* World ranks ordered by node, keeping rank order within a node: a stable
 * insertion sort, so that every entry is written whatever the node numbers. */
static void by_node(int world, const int *node_of, int *sorted)
{
    for (int r = 0; r < world; r++) {
        int k = r;
        for (; k > 0 && node_of[sorted[k - 1]] > node_of[r]; k--) sorted[k] = sorted[k - 1];
        sorted[k] = r;
    }
}

int pb_placement_grid_place(pb_placement policy, int T, int P, int D, int world, const int *node_of, int *rank_at)
{
    PB_CHECK(T > 0 && P > 0 && D > 0 && T * P * D == world, PB_ERR_USAGE,
             "placement: %d x %d x %d grid on %d ranks", T, P, D, world);
    int *sorted = malloc(sizeof(int) * (size_t)world);
    PB_CHECK(sorted, PB_ERR_ENV, "placement: out of memory for %d ranks", world);
    by_node(world, node_of, sorted);
    /* The i-th rank in node order takes the i-th position in the policy's order:
     * tp-inner walks positions as numbered (t fastest), dp-inner with d fastest,
     * i = d + D * (t + T * p). */
    for (int i = 0; i < world; i++) {
        int d = i % D, t = (i / D) % T, p = i / (D * T);
        int pos = policy == PB_PLACE_DP_INNER ? pb_placement_grid_pos(T, P, t, p, d) : i;
        rank_at[pos] = policy == PB_PLACE_NAIVE ? pos : sorted[i];
    }
    free(sorted);
    return PB_OK;
}

int pb_placement_grid_coords(const int *rank_at, int T, int P, int D, int rank, int *t, int *p, int *d)
{
    for (int pos = 0; pos < T * P * D; pos++) {
        if (rank_at[pos] != rank) continue;
        *t = pos % T;
        *p = (pos / T) % P;
        *d = pos / (T * P);
        return 0;
    }
    return -1;
}

/* Four blank-separated decimal integers of at most 9 digits (no sign, no hex):
 * sscanf's %d wrapped 4294967297 round to rank 1. */
static int four_numbers(const char *text, int v[4])
{
    const char *s = text;
    for (int k = 0; k < 4; k++) {
        s += strspn(s, " \t");
        size_t n = strspn(s, "0123456789");
        if (n == 0 || n > 9 || (s[n] && s[n] != ' ' && s[n] != '\t')) return 0;
        v[k] = atoi(s);
        s += n;
    }
    return s[strspn(s, " \t")] == '\0';
}

/* One "RANK T P D" line into rank_at; seen[] tracks ranks already placed. */
static int parse_line(const char *path, int line, const char *text, int T, int P, int D, int *rank_at, char *seen)
{
    int v[4], world = T * P * D;
    if (!four_numbers(text, v))
        return pb_error_usage("--rankmap", "%s:%d: expected 'RANK T P D' (four non-negative decimal integers), got '%s'",
                              path, line, text);
    int r = v[0], t = v[1], p = v[2], d = v[3];
    if (r < 0 || r >= world) return pb_error_usage("--rankmap", "%s:%d: rank %d is not in 0..%d", path, line, r, world - 1);
    if (t < 0 || t >= T || p < 0 || p >= P || d < 0 || d >= D)
        return pb_error_usage("--rankmap", "%s:%d: position (%d, %d, %d) is outside the %d x %d x %d grid", path, line, t, p,
                        d, T, P, D);
    int pos = pb_placement_grid_pos(T, P, t, p, d);
    if (seen[r]) return pb_error_usage("--rankmap", "%s:%d: rank %d is placed twice", path, line, r);
    if (rank_at[pos] >= 0)
        return pb_error_usage("--rankmap", "%s:%d: position (%d, %d, %d) is taken by rank %d already", path, line, t, p, d,
                        rank_at[pos]);
    seen[r] = 1;
    rank_at[pos] = r;
    return PB_OK;
}

int pb_placement_rankmap_parse(const char *path, const char *text, int T, int P, int D, int *rank_at)
{
    int world = T * P * D, line = 0, status = PB_OK;
    char *seen = calloc((size_t)world, 1), *copy = strdup(text);
    if (!seen || !copy) {
        free(seen);
        free(copy);
        return pb_fail(PB_ERR_ENV, "out of memory reading %s", path);
    }
    for (int i = 0; i < world; i++) rank_at[i] = -1;
    for (char *l = copy, *next; status == PB_OK && l; l = next) {
        next = strchr(l, '\n');
        if (next) *next++ = '\0';
        line++;
        char *hash = strchr(l, '#');
        if (hash) *hash = '\0';
        char *s = l;
        while (*s == ' ' || *s == '\t' || *s == '\r') s++;
        size_t n = strlen(s);
        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) s[--n] = '\0';
        if (*s) status = parse_line(path, line, s, T, P, D, rank_at, seen);
    }
    for (int r = 0; status == PB_OK && r < world; r++)
        if (!seen[r]) status = pb_error_usage("--rankmap", "%s: rank %d is not placed; every rank 0..%d needs a line", path, r,
                                        world - 1);
    free(seen);
    free(copy);
    return status;
}

int pb_placement_rankmap_read(const char *path, int T, int P, int D, int *rank_at)
{
    /* Every rank reads the map: a FIFO would feed one rank and leave the others waiting forever. */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return pb_error_usage("--rankmap", "'%s' is not a regular file; every rank reads the map, so give a file", path);
    FILE *f = fopen(path, "r");
    if (!f) return pb_error_usage("--rankmap", "cannot read '%s': %m", path);
    char *text = NULL;
    size_t cap = 0;
    ssize_t n = getdelim(&text, &cap, '\0', f);
    fclose(f);
    if (n < 0) {
        free(text);
        return pb_error_usage("--rankmap", "'%s' is empty", path);
    }
    int status = pb_placement_rankmap_parse(path, text, T, P, D, rank_at);
    free(text);
    return status;
}
