"""What pullback trusts on disk: the cache directory, its entries, artifacts.

Both the on-disk cache and ``pullback compile``'s artifacts hold code that
pullback runs, so a file is read only if nobody but its owner could have
written it, as pip and pytest treat their caches:

- the file, and the directory it is in, belong to the current user (or to
  root, who could change anything anyway) and neither group nor others may
  write them;
- the file is a regular file, opened without following a symbolic link and
  without blocking (a FIFO is refused, not waited on), and at most
  ``MAX_BYTES`` long (a link to ``/dev/zero`` cannot grow memory).

What fails the first rule is skipped with one ``UntrustedFileWarning`` per
directory; the second is an entry's own fault, which the caller discards.
Where the platform has no owners and modes (Windows) only the second rule
applies.
"""
from __future__ import annotations

import os
import stat
import warnings

__all__ = ["UntrustedFileWarning", "BadFile", "MAX_BYTES", "untrusted", "read_bytes",
           "make_private_dir"]

#: The largest cache entry or artifact read (bytes).
MAX_BYTES = 16 * 1024 * 1024

_POSIX = hasattr(os, "getuid")
_warned = set()         # directories warned about (once each)


class UntrustedFileWarning(UserWarning):
    """A cache directory, cache entry or artifact that pullback does not read
    because another user could have written it."""


class BadFile(OSError):
    """A file that is not a regular file of a sane size (or vanished)."""


def _owners():
    return {os.getuid(), 0}


def untrusted(st):
    """Why the file or directory whose ``os.stat`` result is ``st`` is not
    trusted (a few words), or None."""
    if not _POSIX:
        return None
    if st.st_uid not in _owners():
        return f"it belongs to user id {st.st_uid}, not to you"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"others can write it (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def warn(path, why, what):
    """Warn, once per directory, that ``what`` at ``path`` is ignored."""
    where = os.path.dirname(os.path.abspath(path)) if what != "directory" else \
        os.path.abspath(path)
    if where in _warned:
        return
    _warned.add(where)
    fix = (f"`chmod go-w {path}`" if "write" in why else
           "remove it, or `chown` it to yourself")
    warnings.warn(f"pullback ignores the {what} {path}: {why}. Nothing is read from it; "
                  f"{fix} if you trust it.", UntrustedFileWarning, stacklevel=4)


def trusted_dir(path, what="directory"):
    """Whether pullback may read files in the directory ``path`` (warning
    once if not); False if it does not exist."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    why = "it is not a directory" if not stat.S_ISDIR(st.st_mode) else untrusted(st)
    if why is not None:
        warn(path, why, what)
        return False
    return True


def read_bytes(path, what="file", limit=None):
    """The bytes of the regular file ``path``, or None where it is not
    trusted (warned about once per directory).  Raises ``FileNotFoundError``
    if it is missing and ``BadFile`` if it is a link, not a regular file, or
    larger than ``limit`` (default ``MAX_BYTES``)."""
    limit = MAX_BYTES if limit is None else limit
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) \
        | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    if not getattr(os, "O_NOFOLLOW", 0) and os.path.islink(path):
        raise BadFile(f"{path} is a symbolic link")
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as err:          # ELOOP: a symbolic link; or unreadable
        raise BadFile(f"cannot open {path}: {err}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BadFile(f"{path} is not a regular file")
        why = untrusted(st)
        if why is not None:
            warn(path, why, what)
            return None
        if st.st_size > limit:
            raise BadFile(f"{path} is larger than {limit} bytes")
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise BadFile(f"{path} grew past {limit} bytes while being read")
        return data
    finally:
        os.close(fd)


def make_private_dir(path):
    """Create the directory ``path`` (and its parents) if missing, itself
    readable and writable by its owner only (0700, whatever the umask)."""
    if not os.path.isdir(path):
        parent = os.path.dirname(os.path.abspath(path))
        os.makedirs(parent, exist_ok=True)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            return
        os.chmod(path, 0o700)           # (mkdir's mode is masked by the umask)
