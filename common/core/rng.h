/* Counter-based deterministic values for weights and inputs.
 *
 * A value is a pure function of (seed, stream, row, col): no state, no order.
 * That is what lets a tensor-parallel shard generate exactly its slice of the
 * full matrix (same global row/col -> same value), and lets a GPU engine
 * generate the same numbers in a kernel: the functions are header-only and
 * marked host+device under nvcc. */
#ifndef PB_RNG_H
#define PB_RNG_H

#include <stdint.h>

#if defined(__CUDACC__)
#define PB_HD __host__ __device__
#else
#define PB_HD
#endif

/* splitmix64's finaliser: a cheap bijective mixer with good avalanche. */
static inline PB_HD uint64_t pb_rng_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* Uniform in [-1, 1), 24 random bits, from a (seed, stream, row, col) key.
 * Chained mixing (not a sum of the parts) so that (row, col) and (col, row)
 * give unrelated values. */
static inline PB_HD float pb_rng_hash_uniform(uint64_t seed, uint64_t stream, uint64_t row, uint64_t col)
{
    uint64_t h = pb_rng_mix64(seed + 0x9e3779b97f4a7c15ULL);
    h = pb_rng_mix64(h ^ stream);
    h = pb_rng_mix64(h ^ row);
    h = pb_rng_mix64(h ^ col);
    return (float)((int64_t)(h >> 40) - ((int64_t)1 << 23)) * (1.0f / 8388608.0f);
}

#endif
