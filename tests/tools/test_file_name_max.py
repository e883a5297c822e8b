"""file_write at the file system's name limit: a replacing write's temporary file has a
short name of its own, so every name the folder takes (NAME_MAX, 255 bytes on Linux file
systems) can be written, replaced and read back. Real files under tmp_path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentloom.errors import ToolError
from agentloom.loop import ToolContext
from agentloom.tools import SandboxPolicy
from agentloom.tools._safefs import write_file
from agentloom.tools.builtins import FileReadTool, FileWriteTool

CTX = ToolContext()
NAMES = {
    "ascii": "a" * 255,
    "utf-8": "é" * 127 + "a",  # 254 + 1 bytes: the limit counts bytes, not characters
    "dotted": "." + "n" * 250 + ".txt",
}


@pytest.fixture
def allowed(tmp_path: Path) -> Path:
    folder = tmp_path / "allowed"
    folder.mkdir()
    assert os.pathconf(folder, "PC_NAME_MAX") == 255  # the limit these tests stand at
    return folder


@pytest.mark.parametrize("kind", sorted(NAMES))
async def test_a_name_of_exactly_255_bytes_is_written_and_replaced(
        allowed: Path, kind: str) -> None:
    name = NAMES[kind]
    assert len(os.fsencode(name)) == 255
    policy = SandboxPolicy(allowed_paths=(str(allowed),))
    write, read = FileWriteTool(policy=policy), FileReadTool(policy=policy)
    target = allowed / "sub" / name
    await write({"path": str(target), "content": "first"}, CTX)  # a new file
    await write({"path": str(target), "content": "second"}, CTX)  # replacing it
    await write({"path": str(target), "content": "+", "append": True}, CTX)
    assert await read({"path": str(target)}, CTX) == "second+"
    assert os.listdir(allowed / "sub") == [name]  # no temporary file left behind


def test_the_opener_replaces_a_255_byte_name_in_the_root_itself(allowed: Path) -> None:
    target = allowed / ("z" * 255)
    target.write_text("old")  # the folder takes the name: so must a replacing write
    write_file(target, [allowed], b"new", append=False)
    assert target.read_text() == "new"
    assert os.listdir(allowed) == [target.name]


async def test_a_name_past_the_limit_is_a_tool_error(allowed: Path) -> None:
    write = FileWriteTool(policy=SandboxPolicy(allowed_paths=(str(allowed),)))
    with pytest.raises(ToolError, match=r"writing .* failed: File name too long"):
        await write({"path": str(allowed / ("a" * 256)), "content": "x"}, CTX)
    assert os.listdir(allowed) == []
