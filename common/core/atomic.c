#include "core/atomic.h"

#include "core/error.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The file `path` names: a symbolic link's target (in buf), else path itself
 * (a dangling link is replaced, as a missing file would be created). */
static const char *followed(const char *path, char *buf)
{
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && realpath(path, buf)) return buf;
    return path;
}

/* A character device, a FIFO or a socket: written through, never replaced. */
static int written_through(mode_t mode) { return S_ISCHR(mode) || S_ISFIFO(mode) || S_ISSOCK(mode); }

/* Open a special file for writing. A FIFO is opened without blocking, so that
 * no reader gives ENXIO at once instead of a hang; writes then block as usual. */
static FILE *open_through(const char *path)
{
    int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        pb_fail(PB_ERR_ENV, "cannot write %s: %s", path,
                errno == ENXIO ? "no process is reading it (a FIFO without a reader, or a socket)" : strerror(errno));
        return NULL;
    }
    FILE *f = fcntl(fd, F_SETFL, 0) == 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        pb_fail(PB_ERR_ENV, "cannot write %s: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

static FILE *open_temporary(const char *path, char *tmp, size_t len)
{
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    if ((size_t)snprintf(tmp, len, "%.*s.%s.XXXXXX", dirlen, path, slash ? slash + 1 : path) >= len) {
        pb_fail(PB_ERR_ENV, "cannot write %s: the name is too long", path);
        return NULL;
    }
    int fd = mkstemp(tmp);
    if (fd < 0) {
        pb_fail(PB_ERR_ENV, "cannot write %s: %s", path, strerror(errno));
        return NULL;
    }
    mode_t mask = umask(0); /* mkstemp makes 0600; the result is a file like any other */
    umask(mask);
    FILE *f = fchmod(fd, 0666 & ~mask) == 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        pb_fail(PB_ERR_ENV, "cannot write %s: %s", path, strerror(errno));
        close(fd);
        unlink(tmp);
    }
    return f;
}

FILE *pb_atomic_open(const char *path, char *tmp, size_t len)
{
    char buf[PATH_MAX];
    const char *target = followed(path, buf);
    struct stat st;
    if (len) tmp[0] = '\0';
    if (stat(target, &st) == 0 && S_ISDIR(st.st_mode)) {
        pb_fail(PB_ERR_USAGE, "cannot write %s: is a directory; expected a file name", path);
        return NULL;
    }
    if (stat(target, &st) == 0 && written_through(st.st_mode)) return open_through(target);
    return open_temporary(target, tmp, len);
}

int pb_atomic_rename(const char *tmp, const char *path)
{
    char buf[PATH_MAX];
    return tmp[0] ? rename(tmp, followed(path, buf)) : 0;
}

int pb_atomic_commit(FILE *f, const char *tmp, const char *path, int ok)
{
    ok = (fclose(f) == 0) && ok;
    if (ok && pb_atomic_rename(tmp, path) == 0) return PB_OK;
    int st = pb_fail(PB_ERR_ENV, "cannot write %s: %s", path, strerror(errno));
    if (tmp[0]) unlink(tmp); /* a failed write leaves no stray temporary file */
    return st;
}
