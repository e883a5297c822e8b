"""Reading a file somebody else may have put there, and writing one only its user may read.

Reading: a regular file only, opened without blocking and read up to a bound.

A plain `open` of a FIFO with no writer waits for ever, and a plain `read()` of a
multi-gigabyte file (or of `/dev/zero`) takes the memory. Here the file is opened with
`O_NONBLOCK` and checked with `fstat` before a byte is read, so a FIFO, socket or device
is refused at once (`NotRegularFile`), and at most `limit` bytes are read: a longer file
is refused (`FileTooLarge`). Both are OSErrors, so a caller's `except OSError` words them
as it words a missing file.

Writing: what a run writes (its store, trace, batch results, recordings) holds prompts,
replies and state, so a file created here is the owner's alone (0600) and so is a folder
created for it (0700), whatever the umask; on a machine several people share, nobody else
reads a run. A file that already exists keeps the mode its owner gave it. It is opened
without blocking too: opening a FIFO to write waits for a reader, so a FIFO nobody reads
is refused at once (`NoReader`) instead of hanging the run before its first step. A FIFO
that is read (`--trace >(jq .)`) or a terminal stays usable as a stream; a file only a
regular one can be (a database) is made with `create_private`, which refuses the rest.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import IO, BinaryIO

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_MIB = 1024 * 1024
PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700
_WRITE = os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)


class NotRegularFile(OSError):
    """A FIFO, socket, device or directory where a file was expected."""


class FileTooLarge(OSError):
    """A file over the reader's bound."""


class NoReader(OSError):
    """A FIFO opened to be written that nobody has open to read."""


def size_text(n: int) -> str:
    """`8 MiB`, or `100 bytes` for a bound that is no whole number of MiB."""
    return f"{n // _MIB} MiB" if n >= _MIB and n % _MIB == 0 else f"{n} bytes"


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """The regular file `path` open for reading, checked before a byte is read."""
    fd = os.open(path, _FLAGS)
    try:
        mode = os.fstat(fd).st_mode
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        what = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise NotRegularFile(errno.EINVAL, what, os.fspath(path))
    return os.fdopen(fd, "rb")


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them."""
    with open_regular(path) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise FileTooLarge(errno.EFBIG, f"larger than {size_text(limit)}", os.fspath(path))
    return data


def make_private_dir(path: str | os.PathLike[str]) -> None:
    """Create the folder `path` (and missing parents) if absent; the folder itself gets
    `PRIVATE_DIR`. An existing folder is left as it is."""
    folder = Path(path)
    if not folder.is_dir():
        folder.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)


def create_private(path: str | os.PathLike[str]) -> None:
    """Create the empty file `path` with `PRIVATE_FILE` unless it exists (for a file another
    library then opens, as SQLite does its database: its journals take the file's mode).

    A file that exists is looked at, never opened: closing any descriptor of a database
    drops every POSIX lock this process holds on it, the locks of a connection SQLite has
    open on it included, and another process then takes the database for unused (its last
    close deletes the write-ahead log the connection is still writing to: those writes
    are lost). So a second store opened in a process beside a first lost the first's
    later writes."""
    make_private_dir(Path(path).parent)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        try:
            fd = os.open(path, _WRITE | os.O_EXCL | os.O_NONBLOCK, PRIVATE_FILE)
        except FileExistsError:  # made meanwhile by another process: looked at, as above
            mode = os.stat(path).st_mode
        else:
            os.close(fd)  # new and empty: nobody holds a lock on it yet
            return
    if not stat.S_ISREG(mode):
        raise NotRegularFile(errno.EINVAL, "not a regular file", os.fspath(path))


def open_private(path: str | os.PathLike[str], *, append: bool = False) -> IO[str]:
    """`path` open for writing UTF-8 text (truncated, or appended to), created with
    `PRIVATE_FILE` if absent."""
    fd = _open_to_write(path, os.O_APPEND if append else os.O_TRUNC)
    return os.fdopen(fd, "a" if append else "w", encoding="utf-8")


def _open_to_write(path: str | os.PathLike[str], flags: int) -> int:
    try:
        fd = os.open(path, _WRITE | os.O_NONBLOCK | flags, PRIVATE_FILE)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # what a FIFO without a reader answers O_NONBLOCK
            raise NoReader(errno.ENXIO, "a FIFO nobody reads", os.fspath(path)) from None
        raise
    os.set_blocking(fd, True)  # writes to a FIFO or terminal wait as a shell's would
    return fd
