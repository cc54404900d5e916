"""Whole files or none: the Python writers of the suite and of scripts/ write
through here. A fixed temporary name (PATH.tmp) destroyed a user's file of that
name and let two writers overwrite each other's half-written file; mkstemp in
the target's own directory gives each writer its own temporary on the same
filesystem, so that os.replace makes the new file appear whole, and a failed
write (a full disk) leaves the previous file as it was and no temporary."""
import contextlib
import os
import tempfile


def _mode_for(path):
    """The mode the file would have had if opened plainly: the old file's, else 0666 less the umask."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@contextlib.contextmanager
def replace(path, mode="w", **kwargs):
    """with replace(PATH) as f: ... writes PATH whole when the block ends, or
    leaves it untouched (and no temporary) when the block or the write raises."""
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
