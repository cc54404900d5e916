/* Growable arrays. pb_grow makes room for element n of `array` (cap
 * elements of `elem` bytes), doubling the capacity (the first allocation
 * holds `first`), zero-filling the new slots. It returns the array, moved or
 * not, and updates *cap; on out-of-memory it returns NULL and leaves the old
 * array and *cap untouched. Typical use:
 *     T *a = pb_grow(v->items, &v->cap, v->n, sizeof *a, 64);
 *     PB_CHECK(a, PB_ERR_ENV, "out of memory for %d items", v->n + 1);
 *     v->items = a;                                                         */
#ifndef PB_GROW_H
#define PB_GROW_H

#include <stddef.h>

void *pb_grow(void *array, int *cap, int n, size_t elem, int first);

#endif
