/* The ring's arithmetic for context parallelism (cp.h): groups, which block
 * a rank holds at each step, what each exchange carries, bytes. */
#include "workload/cp.h"

#include "core/error.h"

#include <math.h>

int pb_cp_group_of(int world, int c, int rank, int *group, int *index)
{
    if (c < 1) return pb_error_usage("--cp", "a CP group of %d ranks; expected at least 1", c);
    if (world % c != 0)
        return pb_error_usage("--cp", "a CP group of %d ranks does not divide the %d ranks", c, world);
    *group = rank / c;
    *index = rank % c;
    return PB_OK;
}

int pb_cp_check_seq(int64_t seq, int c)
{
    if (c < 1 || seq % c != 0)
        return pb_error_usage("--cp", "%d ranks do not divide the sequence of %lld tokens into equal blocks (--seq)",
                              c, (long long)seq);
    return PB_OK;
}

int64_t pb_cp_check_rows(int64_t b, int64_t heads, int64_t seq, int c, int64_t head_dim, int64_t request)
{
    int64_t rows = seq / c;
    if (request == PB_CP_CHECK_ALL) return rows;
    if (request > 0) return request < rows ? request : rows;
    double per_row = (double)b * (double)heads * (double)seq * (double)head_dim;
    double fit = floor(PB_CP_CHECK_BUDGET / per_row);
    return fit >= (double)rows ? rows : fit < 1 ? 1 : (int64_t)fit;
}

int64_t pb_cp_check_row(int64_t k, int64_t n, int64_t block_rows) { return k * block_rows / n; }

int pb_cp_block_at(int c, int index, int step) { return ((index - step) % c + c) % c; }

pb_cp_exchange pb_cp_exchange_at(int c, int step, int backward)
{
    pb_cp_exchange x = {.kv = step < c - 1, .dkv = backward && c > 1 && step >= 1 && step <= c};
    return x;
}

uint64_t pb_cp_block_bytes(int64_t b, int64_t seq, int c, int64_t kv_heads, int64_t head_dim, size_t elem)
{
    return 2 * (uint64_t)b * (uint64_t)(seq / c) * (uint64_t)kv_heads * (uint64_t)head_dim * elem;
}

int pb_cp_transfers(int c) { return c > 1 ? 3 * c - 2 : 0; }
