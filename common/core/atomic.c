#include "core/atomic.h"

#include "core/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

FILE *pb_atomic_open(const char *path, char *tmp, size_t len)
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

int pb_atomic_commit(FILE *f, const char *tmp, const char *path, int ok)
{
    ok = (fclose(f) == 0) && ok;
    if (ok && rename(tmp, path) == 0) return PB_OK;
    int st = pb_fail(PB_ERR_ENV, "cannot write %s: %s", path, strerror(errno));
    unlink(tmp); /* a failed write leaves no stray temporary file */
    return st;
}
