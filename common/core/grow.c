#include "core/grow.h"

#include <stdlib.h>
#include <string.h>

void *pb_grow(void *array, int *cap, int n, size_t elem, int first)
{
    if (n < *cap) return array;
    int ncap = *cap > 0 ? 2 * *cap : (first > n ? first : n + 1);
    char *grown = realloc(array, (size_t)ncap * elem);
    if (!grown) return NULL;
    memset(grown + (size_t)*cap * elem, 0, (size_t)(ncap - *cap) * elem);
    *cap = ncap;
    return grown;
}
