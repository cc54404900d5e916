/* Files written whole or not at all: the text goes to a new temporary file
 * beside the target and is renamed over it once complete, so a reader (or a
 * crash) never sees half a file, and the old file stays intact until then.
 * The temporary's name is made by mkstemp in the target's directory
 * (".BASE.XXXXXX"): a fixed "PATH.tmp" could be a file the user named as
 * another output, which the rename would then take away.
 *
 * What the target is decides how it is written (docs/reliability.md):
 * nothing or a regular file: the temporary and the rename above; a character
 * device, a FIFO or a socket: written through, never renamed over (a FIFO is
 * opened without blocking, so no reader is an error, not a hang), and a write
 * it refuses (/dev/full) is an error; a symbolic link: followed, its target
 * written as above; a directory: refused (PB_ERR_USAGE). */
#ifndef PB_ATOMIC_H
#define PB_ATOMIC_H

#include <stdio.h>

/* A new temporary beside `path`, open for writing (mode 0666 less the umask,
 * as fopen would give); its name in tmp, or "" when `path` is written through.
 * NULL after pb_fail (PB_ERR_ENV; PB_ERR_USAGE for a directory). */
FILE *pb_atomic_open(const char *path, char *tmp, size_t len);

/* Rename tmp over path (its link's target when path is a link); nothing when
 * tmp is "" (written through). 0, or -1 with errno set. */
int pb_atomic_rename(const char *tmp, const char *path);

/* Close `f` and rename tmp over path: PB_OK, or PB_ERR_ENV after pb_fail,
 * with the temporary removed. `ok` = 0 (a write already failed) only cleans up. */
int pb_atomic_commit(FILE *f, const char *tmp, const char *path, int ok);

#endif
