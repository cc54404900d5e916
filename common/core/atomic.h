/* Files written whole or not at all: the text goes to a new temporary file
 * beside the target and is renamed over it once complete, so a reader (or a
 * crash) never sees half a file, and the old file stays intact until then.
 * The temporary's name is made by mkstemp in the target's directory
 * (".BASE.XXXXXX"): a fixed "PATH.tmp" could be a file the user named as
 * another output, which the rename would then take away. */
#ifndef PB_ATOMIC_H
#define PB_ATOMIC_H

#include <stdio.h>

/* A new temporary beside `path`, open for writing (mode 0666 less the umask,
 * as fopen would give); its name in tmp. NULL after pb_fail (PB_ERR_ENV). */
FILE *pb_atomic_open(const char *path, char *tmp, size_t len);

/* Close `f` and rename tmp over path: PB_OK, or PB_ERR_ENV after pb_fail,
 * with the temporary removed. `ok` = 0 (a write already failed) only cleans up. */
int pb_atomic_commit(FILE *f, const char *tmp, const char *path, int ok);

#endif
