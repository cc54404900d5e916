"""Whole files or none: the Python writers of the suite and of scripts/ write
through here. A fixed temporary name (PATH.tmp) destroyed a user's file of that
name and let two writers overwrite each other's half-written file; mkstemp in
the target's own directory gives each writer its own temporary on the same
filesystem, so that os.replace makes the new file appear whole, and a failed
write (a full disk) leaves the previous file as it was and no temporary.

What the target is decides how (the same rules as common/core/atomic.c): nothing
or a regular file as above; a character device, a FIFO or a socket is written
through, never renamed over (/dev/null stays a device; a FIFO without a reader
is an error, not a hang); a symbolic link is followed; a directory is refused."""
import contextlib
import errno
import os
import stat
import tempfile


def _mode_for(path):
    """The mode the file would have had if opened plainly: the old file's, else 0666 less the umask."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _kind(path):
    """"dir", "through" (a device, FIFO or socket), or "file" (a regular file or nothing)."""
    try:
        st = os.stat(path)
    except OSError:
        return "file"
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    return "through" if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode) else "file"


@contextlib.contextmanager
def _through(path, mode, **kwargs):
    """Write into a device or FIFO as it is; no reader on a FIFO raises ENXIO at once."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ENXIO:
            raise OSError(e.errno, "no process is reading it (a FIFO without a reader, or a socket)", path) from e
        raise
    os.set_blocking(fd, True)
    with os.fdopen(fd, mode, **kwargs) as f:
        yield f


@contextlib.contextmanager
def replace(path, mode="w", **kwargs):
    """with replace(PATH) as f: ... writes PATH whole when the block ends, or
    leaves it untouched (and no temporary) when the block or the write raises."""
    if os.path.islink(path):
        path = os.path.realpath(path)
    kind = _kind(path)
    if kind == "dir":
        raise IsADirectoryError(errno.EISDIR, "is a directory; expected a file name", path)
    if kind == "through":
        with _through(path, mode, **kwargs) as f:
            yield f
        return
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".part")
    try:
        os.fchmod(fd, _mode_for(path))
        with os.fdopen(fd, mode, **kwargs) as f:
            fd = -1  # the file object owns it now
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path, text):
    with replace(path) as f:
        f.write(text)
