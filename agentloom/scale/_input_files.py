"""The bytes of a batch's inputs, read with every size bounded and no path followed where
it shouldn't be: what `_inputs` parses records from.

- The inputs file is opened as `agentloom._files` opens one, without blocking and checked
  before a byte is read: a FIFO, socket or device named as the inputs is refused rather
  than waited on.
- A line is read at most `MAX_RECORD_BYTES` at a time: a longer one is reported by its
  line number and skipped, so one endless line can't take the memory.
- A folder is walked by descriptor (`os.fwalk`, links not followed) and each file opened
  relative to its directory with `O_NOFOLLOW`: a symbolic link below the folder is
  reported, never followed (a link to `~/.ssh/id_rsa` in a folder of uploads must not
  send the key to a model), and a directory swapped for a link during the walk can't
  lead it outside.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from agentloom._files import NotRegularFile, open_regular, size_text
from agentloom.errors import ConfigError

MAX_RECORD_BYTES = 8 * 1024 * 1024
"""The most one input may hold, in bytes: a JSONL line, a CSV line, a folder's file."""

_SKIP_CHUNK = 1024 * 1024
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def open_inputs(path: Path) -> BinaryIO:
    """The inputs file opened for reading; a ConfigError for anything but a regular file.
    The path itself may be a link: the user named it on the command line."""
    try:
        return open_regular(path)
    except FileNotFoundError:
        raise ConfigError(f"inputs not found: {path}") from None
    except NotRegularFile:
        raise ConfigError(f"inputs {path}: not a regular file or a folder") from None
    except OSError as exc:
        raise ConfigError(f"inputs {path}: cannot read: {exc.strerror or exc}") from None


def bounded_lines(handle: BinaryIO, limit: int = MAX_RECORD_BYTES
                  ) -> Iterator[tuple[int, bytes | None]]:
    """(line number, the line with its newline) for each line of `handle`, 1 first;
    None for a line longer than `limit` bytes, which is read past in chunks, never held."""
    lineno = 0
    while True:
        line = handle.readline(limit + 1)
        if not line:
            return
        lineno += 1
        if len(line) <= limit or line.endswith(b"\n"):
            yield lineno, line
            continue
        while True:  # the rest of the long line
            rest = handle.readline(_SKIP_CHUNK)
            if not rest or rest.endswith(b"\n"):
                break
        yield lineno, None


@dataclass(frozen=True, slots=True)
class FolderEntry:
    """One file below a batch's folder: its bytes, or why it has none."""

    rel: str
    """Its path below the folder, `/`-separated."""
    data: bytes | None = None
    problem: str | None = None


def folder_entries(folder: Path, limit: int = MAX_RECORD_BYTES,
                   *, read: bool = True) -> Iterator[FolderEntry]:
    """Every non-hidden file below `folder` in sorted order, a link among them as a
    problem; FIFOs, sockets and devices are passed over. With `read=False` no file is
    opened (counting), so a link or an oversized file is not told apart from the rest."""
    for root, dirs, files, root_fd in os.fwalk(folder, follow_symlinks=False):
        # A link to a directory is listed with the directories (and not walked into).
        linked = [d for d in dirs if _is_link(d, root_fd)]
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in linked)
        rel_root = Path(root).relative_to(folder)
        for name in sorted([*files, *linked]):
            if name.startswith("."):
                continue
            rel = (rel_root / name).as_posix()
            try:
                mode = os.stat(name, dir_fd=root_fd, follow_symlinks=False).st_mode
            except FileNotFoundError:
                continue  # gone since the listing
            if stat.S_ISLNK(mode):
                yield FolderEntry(rel, problem="a symbolic link, not followed")
            elif stat.S_ISREG(mode):
                yield _read_entry(root_fd, name, rel, limit) if read else FolderEntry(rel)


def _regular(fd: int) -> bool:
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        return False


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def _read_entry(root_fd: int, name: str, rel: str, limit: int) -> FolderEntry:
    try:
        fd = os.open(name, _OPEN_FLAGS | _NOFOLLOW, dir_fd=root_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # swapped for a link since the listing
            return FolderEntry(rel, problem="a symbolic link, not followed")
        return FolderEntry(rel, problem=f"cannot read: {exc.strerror or exc}")
    if not _regular(fd):  # swapped for a directory or a FIFO since the listing
        os.close(fd)
        return FolderEntry(rel, problem="not a regular file")
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        return FolderEntry(rel, problem=f"larger than {size_text(limit)}")
    return FolderEntry(rel, data=data)
