"""Hard links planted in an allowed folder against file_read, file_write and attachments.

A hard link is the outside file itself under a second name inside the allowed folder: no
walk or `O_NOFOLLOW` can tell it from an inside file. Writing in place through it would
change the outside file, so beneath roots an append refuses a regular file with more than
one link, judged on the opened descriptor's own `fstat`; a replacing write renames a new
file over the name and leaves the other name's content alone. Reads follow hard links
(none can be made from inside the sandbox to an outside file, and pnpm or git stores
share files by them). Real files and real links under tmp_path; the race test counts
writes through (which must be 0), it never times anything."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from agentloom.errors import ToolError
from agentloom.loop import ToolContext
from agentloom.tools import SandboxPolicy, SandboxViolation
from agentloom.tools._safefs import write_file
from agentloom.tools.builtins import FileReadTool, FileWriteTool

CTX = ToolContext()
SECRET = "TOP-SECRET-OUTSIDE"


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """allowed/ with inside.txt and `h`, a hard link to outside/secret.txt."""
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    (allowed / "inside.txt").write_text("inside")
    (outside / "secret.txt").write_text(SECRET)
    os.link(outside / "secret.txt", allowed / "h")
    assert (allowed / "h").stat().st_nlink == 2
    return allowed, outside


def tools(allowed: Path) -> tuple[FileReadTool, FileWriteTool]:
    policy = SandboxPolicy(allowed_paths=(str(allowed),))
    return FileReadTool(policy=policy), FileWriteTool(policy=policy)


async def test_a_read_follows_a_hard_link(tree: tuple[Path, Path]) -> None:
    # Stores that share files by hard link (pnpm's node_modules, `git clone --local`)
    # stay readable; no such link can be made from inside the sandbox.
    allowed, _ = tree
    read, _ = tools(allowed)
    assert await read({"path": str(allowed / "h")}, CTX) == SECRET
    read_only = FileReadTool(policy=SandboxPolicy(readable_paths=(str(allowed),)))
    assert await read_only({"path": str(allowed / "h")}, CTX) == SECRET


async def test_an_append_never_writes_through_a_hard_link(tree: tuple[Path, Path]) -> None:
    allowed, outside = tree
    _, write = tools(allowed)
    with pytest.raises(SandboxViolation, match="has 2 hard links"):
        await write({"path": str(allowed / "h"), "content": "X", "append": True}, CTX)
    assert (outside / "secret.txt").read_text() == SECRET
    # An append to a file of one link, new or not, still works.
    await write({"path": str(allowed / "inside.txt"), "content": "+", "append": True}, CTX)
    await write({"path": str(allowed / "new.txt"), "content": "n", "append": True}, CTX)
    assert (allowed / "inside.txt").read_text() == "inside+"
    assert (allowed / "new.txt").read_text() == "n"


async def test_a_replacing_write_replaces_the_name_not_the_outside_file(
        tree: tuple[Path, Path]) -> None:
    allowed, outside = tree
    read, write = tools(allowed)
    assert await write({"path": str(allowed / "h"), "content": "mine"}, CTX)
    assert (outside / "secret.txt").read_text() == SECRET
    assert (outside / "secret.txt").stat().st_nlink == 1
    assert (allowed / "h").stat().st_nlink == 1
    assert await read({"path": str(allowed / "h")}, CTX) == "mine"


async def test_two_inside_names_of_one_file_refuse_an_append_as_well(
        tree: tuple[Path, Path]) -> None:
    # Which folder a file's other names are in can't be known without scanning the
    # whole file system: the count alone decides, and the message says how to proceed.
    allowed, _ = tree
    os.link(allowed / "inside.txt", allowed / "twin.txt")
    _, write = tools(allowed)
    with pytest.raises(SandboxViolation, match="replacing write"):
        await write({"path": str(allowed / "twin.txt"), "content": "+", "append": True}, CTX)
    assert (allowed / "inside.txt").read_text() == "inside"


def test_the_count_is_taken_on_the_opened_file(tree: tuple[Path, Path]) -> None:
    # The race made deterministic: the path passes the check as a plain inside file,
    # then a hard link to the outside file is renamed over it before the open.
    allowed, outside = tree
    policy = SandboxPolicy(allowed_paths=(str(allowed),))
    checked = policy.check_read(str(allowed / "inside.txt"))
    os.link(outside / "secret.txt", allowed / ".swap")
    os.replace(allowed / ".swap", allowed / "inside.txt")
    # secret.txt, the fixture's `h` and now inside.txt: three names of one file.
    with pytest.raises(OSError, match="3 hard links") as append:
        write_file(checked, policy.write_roots(), b"X", append=True)
    assert append.value.errno == errno.EMLINK  # _safefs.LinkedFile
    assert (outside / "secret.txt").read_text() == SECRET


async def test_a_file_flipping_to_a_hard_link_is_never_appended_through(
        tree: tuple[Path, Path]) -> None:
    allowed, outside = tree
    target = allowed / "f"
    target.write_text("inside")
    stop, flips = threading.Event(), [0]

    def flip() -> None:  # f: a plain file, then a hard link to the secret, and back
        while not stop.is_set():
            if target.stat().st_nlink > 1:
                (allowed / ".plain").write_text("inside")
                os.replace(allowed / ".plain", target)
            else:
                (allowed / ".link").unlink(missing_ok=True)
                os.link(outside / "secret.txt", allowed / ".link")
                os.replace(allowed / ".link", target)
            flips[0] += 1

    _, write = tools(allowed)
    thread = threading.Thread(target=flip, daemon=True)
    thread.start()
    try:
        for _ in range(500):
            try:
                await write({"path": str(target), "content": "X", "append": True}, CTX)
            except ToolError:
                pass
    finally:
        stop.set()
        thread.join()
    assert flips[0] > 0
    assert (outside / "secret.txt").read_text() == SECRET  # never written through


async def test_enabled_false_appends_through_a_hard_link(tree: tuple[Path, Path]) -> None:
    # With no roots there is no outside: the sandbox lifts this limit with the others.
    allowed, outside = tree
    write = FileWriteTool(policy=SandboxPolicy(enabled=False))
    await write({"path": str(allowed / "h"), "content": "+", "append": True}, CTX)
    assert (outside / "secret.txt").read_text() == SECRET + "+"
