"""Race-free file access beneath an allowed root, shared by the file tools and attachments.

A path check followed by a plain `open` has a window: a directory or file swapped for a
symlink after the check is followed by the open, out of the allowed tree. Here the check
and the open are one walk: the root is opened as a directory descriptor and every
component below it is opened relative to its parent's descriptor with `O_NOFOLLOW`, so a
symlink met anywhere on the way is refused (`UnsafePath`) instead of followed. Callers
pass the path already resolved (so a legitimate link inside the tree was followed while
checking, and the walk sees only real directories).

The last component is opened with `O_NONBLOCK` and checked with `fstat` before a byte is
read: a FIFO, socket or device is refused (`NotRegularFile`) without blocking, so a FIFO
planted in an allowed directory can't hang a run. `run_detached` runs such blocking work
in a daemon thread, so a call that outlives its timeout never keeps the process alive.

Beneath roots, an append refuses a regular file with more than one hard link
(`LinkedFile`), judged on the `fstat` of the opened descriptor (so no link made between a
check and the open slips by): writing in place would change the file under every one of
its names, some of which may be outside the roots. A read follows it: a hard link can't be
made from inside the sandbox to a file outside it (bind mounts refuse links across them),
so one beneath the roots was made by someone who could read the file anyway, and stores
that share files by hard link (pnpm, `git clone --local`, backups) stay readable. A
replacing write never opens the target (it renames a new file over the name, leaving the
other names' content as it was). Its temporary file has a short name of its own
(`.agentloom-<random>.tmp`), never the target's name with more around it, so any name the
file system takes, up to NAME_MAX (255 bytes), can be written.
"""

from __future__ import annotations

import asyncio
import errno
import os
import queue
import secrets
import stat
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC


class UnsafePath(OSError):
    """A symlink (or a non-directory) was met where the walk needs a real directory."""


class NotRegularFile(OSError):
    """The path is a FIFO, socket, device or directory: only regular files are opened."""


class LinkedFile(OSError):
    """A regular file beneath the roots with more than one hard link, opened to append:
    another of its names may be outside them (`filename` is the name opened)."""

    def __init__(self, links: int, name: str) -> None:
        super().__init__(errno.EMLINK, f"the file has {links} hard links", name)
        self.links = links


class OutsideRoots(OSError):
    """The path is under none of the allowed roots."""


class BadPath(OSError):
    """A path no file can have (a NUL byte), or one whose symlinks form a loop."""


def resolve_under(text: str, base: Path) -> Path:
    """`text` with `~` expanded, made absolute against `base`, and its `..` and symlinks
    resolved (the file need not exist). A NUL byte or a symlink loop is `BadPath`, where
    pathlib would raise ValueError or RuntimeError."""
    if "\x00" in text:
        raise BadPath(errno.EINVAL, "a path can't contain a NUL byte")
    path = Path(text).expanduser()
    try:
        return (path if path.is_absolute() else base / path).resolve(strict=False)
    except RuntimeError:  # Python before 3.13 names a symlink loop so
        raise BadPath(errno.ELOOP, "its symlinks form a loop") from None


def root_of(path: Path, roots: Sequence[Path]) -> Path:
    """The longest root `path` sits under (both resolved); else OutsideRoots."""
    best: Path | None = None
    for root in roots:
        if (path == root or root in path.parents) and (best is None or len(root.parts) > len(
                best.parts)):
            best = root
    if best is None:
        raise OutsideRoots(errno.EACCES, "not under an allowed root", str(path))
    return best


def _walk_dirs(root: Path, parts: Sequence[str], *, create: bool) -> int:
    """A descriptor of root/parts[0]/.../parts[-1], no symlink followed below root."""
    fd = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for part in parts:
            if create:
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafePath(exc.errno, "a symlink or non-directory on the way",
                                     part) from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _split(path: Path, roots: Sequence[Path] | None) -> tuple[Path, list[str], str]:
    """(root, directories below it, final name). With no roots the parent is the root."""
    if roots is None:
        return path.parent, [], path.name
    root = root_of(path, roots)
    rel = path.relative_to(root).parts
    if not rel:  # the root itself: an allowed file (a directory fails the fstat check)
        return root.parent, [], root.name
    return root, list(rel[:-1]), rel[-1]


def _open_final(dir_fd: int, name: str, flags: int, *, one_link: bool = False,
                mode: int = 0o666) -> int:
    """A descriptor of the regular file `name` in `dir_fd`, no symlink followed, opened
    without blocking; with `one_link`, one with a single hard link only."""
    try:
        fd = os.open(name, flags | _NOFOLLOW | os.O_NONBLOCK | _CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath(exc.errno, "the file is a symlink", name) from None
        if exc.errno == errno.ENXIO:  # a FIFO with no reader, opened for writing
            raise NotRegularFile(exc.errno, "not a regular file", name) from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise NotRegularFile(errno.EISDIR if stat.S_ISDIR(info.st_mode) else errno.EINVAL,
                             kind, name)
    if one_link and info.st_nlink > 1:  # the opened file's own count: no window
        os.close(fd)
        raise LinkedFile(info.st_nlink, name)
    return fd


def _temp_name() -> str:
    """A name for a replacing write's temporary file: 31 bytes whatever the target's
    name, so a target at NAME_MAX still has room beside it."""
    return f".agentloom-{secrets.token_hex(8)}.tmp"


def read_file(path: Path, roots: Sequence[Path] | None, limit: int) -> bytes:
    """At most `limit` bytes of the regular file `path` (resolved), opened beneath one of
    `roots` without following a symlink; `roots=None` allows any path (still no symlink
    after the caller resolved it, and regular files only)."""
    root, dirs, name = _split(path, roots)
    dir_fd = _walk_dirs(root, dirs, create=False)
    try:
        fd = _open_final(dir_fd, name, os.O_RDONLY)
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "rb") as handle:
        return handle.read(limit)


def write_file(path: Path, roots: Sequence[Path] | None, data: bytes, *,
               append: bool) -> None:
    """Write `data` to `path` (resolved) beneath one of `roots`, creating missing
    directories on the way, following no symlink. Replacing writes a temporary file in
    the same directory and renames it over the target (a reader never sees half a file,
    and a symlink or hard link at the target is replaced, not written through); appending
    opens the regular file itself, refused (`LinkedFile`) beneath roots when it has more
    than one hard link. `roots=None` allows any path."""
    root, dirs, name = _split(path, roots)
    if roots is None:
        root.mkdir(parents=True, exist_ok=True)
    dir_fd = _walk_dirs(root, dirs, create=True)
    try:
        if append:
            fd = _open_final(dir_fd, name, os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                             one_link=roots is not None)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            return
        try:
            if stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                raise NotRegularFile(errno.EISDIR, "a directory", name)
        except FileNotFoundError:
            pass
        tmp = _temp_name()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666,
                     dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dir_fd)
            except FileNotFoundError:
                pass
            raise
    finally:
        os.close(dir_fd)


class _DaemonPool:
    """Daemon worker threads that wait for jobs; a job that finds none idle starts one.
    A worker stuck in a call that never returns is simply lost (and never joined)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1  # that worker's next job is this one
                start = False
            else:
                start = True
        self._jobs.put(job)
        if start:
            threading.Thread(target=self._work, name="agentloom-file", daemon=True).start()

    def _work(self) -> None:
        while True:
            self._jobs.get()()
            with self._lock:
                self._idle += 1


_POOL = _DaemonPool()


async def run_detached(fn: Callable[..., T], *args: object) -> T:
    """`fn(*args)` in a daemon thread. Unlike `asyncio.to_thread`, a call still blocked
    when its caller gave up (a timeout) does not hold the interpreter at exit."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(ok: bool, value: object) -> None:
        if not future.done():
            if ok:
                future.set_result(value)  # type: ignore[arg-type]
            else:
                future.set_exception(value)  # type: ignore[arg-type]

    def work() -> None:
        try:
            result: object = fn(*args)
            ok = True
        except BaseException as exc:  # handed to the awaiting task
            result, ok = exc, False
        try:
            loop.call_soon_threadsafe(settle, ok, result)
        except RuntimeError:  # the loop is closed: nobody is waiting any more
            pass

    _POOL.submit(work)
    return await future
