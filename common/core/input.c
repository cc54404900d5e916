#include "core/input.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int wait_ms(void)
{
    const char *env = getenv("PARABENCH_INPUT_WAIT_S");
    if (!env) return (int)(PB_INPUT_WAIT_S * 1000);
    char *end = NULL;
    errno = 0;
    double s = strtod(env, &end);
    if (errno || end == env || *end || !isfinite(s) || s < 0.1 || s > 3600) return -1;
    return (int)(s * 1000);
}

FILE *pb_input_open(const char *path)
{
    int ms = wait_ms();
    if (ms < 0) {
        errno = EINVAL;
        return NULL;
    }
    /* O_NONBLOCK: opening a FIFO for reading returns at once, writer or not. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) goto fail;
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n;
        do n = poll(&p, 1, ms);
        while (n < 0 && errno == EINTR);
        if (n < 0) goto fail;
        if (n == 0) {
            close(fd);
            errno = ETIMEDOUT;
            return NULL;
        }
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) goto fail; /* then read as a file is read */
    FILE *f = fdopen(fd, "r");
    if (f) return f;
fail:;
    int saved = errno;
    close(fd);
    errno = saved;
    return NULL;
}

const char *pb_input_why(int err)
{
    if (err == ETIMEDOUT) return "nothing to read arrived in time (a FIFO with no writer?)";
    if (err == EINVAL) return "PARABENCH_INPUT_WAIT_S is not accepted; expected seconds from 0.1 to 3600";
    return strerror(err);
}
