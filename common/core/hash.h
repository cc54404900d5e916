/* FNV-1a, 64 bits, over bytes: a fingerprint of a buffer, so that two ranks
 * can tell whether they hold the same bytes by exchanging 8 of them. Not for
 * adversaries; a single changed byte always changes it. */
#ifndef PB_HASH_H
#define PB_HASH_H

#include <stddef.h>
#include <stdint.h>

#define PB_HASH_FNV1A_START 14695981039346656037ULL

/* The hash h (PB_HASH_FNV1A_START to begin) continued over n bytes at p. */
static inline uint64_t pb_hash_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

#endif
