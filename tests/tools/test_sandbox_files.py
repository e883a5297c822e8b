"""The sandbox's file and command rules, with hostile paths and command lines."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from agentloom.errors import ConfigError, ToolError
from agentloom.loop import ToolContext
from agentloom.tools import SandboxPolicy, SandboxViolation
from agentloom.tools.builtins import FileReadTool, FileWriteTool, ShellCommandTool

CTX = ToolContext()


@pytest.fixture
def jail(tmp_path: Path) -> Path:
    inside = tmp_path / "jail"
    inside.mkdir()
    (inside / "notes.txt").write_text("inside")
    (tmp_path / "secret.txt").write_text("outside secret")
    return inside


def test_defaults_are_safe() -> None:
    policy = SandboxPolicy()
    assert policy.enabled and not policy.network_allowed
    assert policy.allowed_commands == () and policy.readable_paths == ()
    # Disabled: network on unless explicitly off.
    assert SandboxPolicy(enabled=False).network_allowed
    assert not SandboxPolicy(enabled=False, allow_network=False).network_allowed


def test_from_config_reads_the_yaml_block() -> None:
    policy = SandboxPolicy.from_config(
        {
            "enabled": True,
            "allowed_commands": ["echo", "cat"],
            "allowed_paths": ["/tmp/x"],
            "writable_paths": ["/tmp/y"],
            "allow_network": True,
            "allowed_domains": ["a.com"],
            "allowed_schemes": ["https"],
            "allowed_addresses": ["127.0.0.1:8080"],
        }
    )
    assert policy.allowed_commands == ("echo", "cat")
    assert policy.allowed_paths == ("/tmp/x", "/tmp/y")
    assert policy.allowed_schemes == ("https",) and policy.network_allowed
    assert SandboxPolicy.from_config(None) == SandboxPolicy()


def test_from_config_rejects_typos_and_bad_values() -> None:
    with pytest.raises(
        ConfigError, match="unknown setting 'allowed_comands'; did you mean 'allowed_commands'"
    ):
        SandboxPolicy.from_config({"allowed_comands": ["ls"]})
    with pytest.raises(ConfigError, match=r"sandbox\.enabled: expected true or false"):
        SandboxPolicy.from_config({"enabled": "yes"})


def test_commands_that_run_other_commands_need_an_explicit_opt_in() -> None:
    with pytest.raises(ConfigError, match="bash can run any other command"):
        SandboxPolicy(allowed_commands=("echo", "bash"))
    assert SandboxPolicy(allowed_commands=("bash",), danger_opt_in=("bash",))


async def test_read_inside_readable_paths(jail: Path) -> None:
    tool = FileReadTool(policy=SandboxPolicy(readable_paths=(str(jail),)))
    assert await tool({"path": str(jail / "notes.txt")}, CTX) == "inside"


@pytest.mark.parametrize(
    "hostile",
    [
        "{jail}/../secret.txt",
        "{jail}/./sub/../../secret.txt",
        "{jail}/link_out",  # a symlink inside the jail pointing outside
        "{jail}/dirlink/secret.txt",  # a directory symlink inside the jail
        "/etc/passwd",
        "~/.ssh/id_rsa",
    ],
)
async def test_reads_outside_are_refused(jail: Path, hostile: str) -> None:
    (jail / "link_out").symlink_to(jail.parent / "secret.txt")
    (jail / "dirlink").symlink_to(jail.parent, target_is_directory=True)
    tool = FileReadTool(policy=SandboxPolicy(readable_paths=(str(jail),)))
    with pytest.raises(SandboxViolation, match="refused to read"):
        await tool({"path": hostile.format(jail=jail)}, CTX)


async def test_a_relative_path_resolves_against_base_dir(jail: Path) -> None:
    policy = SandboxPolicy(readable_paths=("jail",), base_dir=str(jail.parent))
    tool = FileReadTool(policy=policy)
    assert await tool({"path": "jail/notes.txt"}, CTX) == "inside"
    with pytest.raises(SandboxViolation):
        await tool({"path": "secret.txt"}, CTX)


async def test_reads_are_cut_at_the_output_limit(jail: Path) -> None:
    (jail / "big.txt").write_text("x" * 100)
    tool = FileReadTool(policy=SandboxPolicy(readable_paths=(str(jail),), max_output_bytes=10))
    assert await tool({"path": str(jail / "big.txt")}, CTX) == (
        "x" * 10 + "\n[output truncated at 10 bytes]"
    )


async def test_write_needs_allowed_paths_and_readable_is_not_enough(jail: Path) -> None:
    reader_only = FileWriteTool(policy=SandboxPolicy(readable_paths=(str(jail),)))
    with pytest.raises(SandboxViolation, match="refused to write"):
        await reader_only({"path": str(jail / "out.txt"), "content": "x"}, CTX)
    writer = FileWriteTool(policy=SandboxPolicy(allowed_paths=(str(jail),)))
    msg = await writer({"path": str(jail / "sub" / "out.txt"), "content": "héllo"}, CTX)
    assert msg.startswith("wrote 6 bytes")
    assert (jail / "sub" / "out.txt").read_text() == "héllo"
    await writer({"path": str(jail / "sub" / "out.txt"), "content": "!", "append": True}, CTX)
    assert (jail / "sub" / "out.txt").read_text() == "héllo!"
    with pytest.raises(SandboxViolation):
        await writer({"path": str(jail / ".." / "escape.txt"), "content": "x"}, CTX)
    assert not (jail.parent / "escape.txt").exists()
    # Writable implies readable.
    reader = FileReadTool(policy=SandboxPolicy(allowed_paths=(str(jail),)))
    assert await reader({"path": str(jail / "sub" / "out.txt")}, CTX) == "héllo!"


async def test_write_over_the_size_limit_is_refused(jail: Path) -> None:
    writer = FileWriteTool(policy=SandboxPolicy(allowed_paths=(str(jail),), max_write_bytes=3))
    with pytest.raises(ToolError, match="max_write_bytes"):
        await writer({"path": str(jail / "o.txt"), "content": "abcd"}, CTX)


async def test_disabled_sandbox_lifts_path_limits(jail: Path) -> None:
    tool = FileReadTool(policy=SandboxPolicy(enabled=False))
    assert await tool({"path": str(jail.parent / "secret.txt")}, CTX) == "outside secret"


# --- shell_command ----------------------------------------------------------------------


def shell(tmp: Path, *commands: str, **kw: object) -> ShellCommandTool:
    policy = SandboxPolicy(allowed_commands=commands, readable_paths=(str(tmp),), **kw)  # type: ignore[arg-type]
    return ShellCommandTool(policy=policy)


async def test_shell_is_off_by_default() -> None:
    with pytest.raises(SandboxViolation, match="shell_command is off"):
        await ShellCommandTool()({"command": "echo hi"}, CTX)


async def test_commands_outside_the_allow_list_are_refused(jail: Path) -> None:
    tool = shell(jail, "echo")
    with pytest.raises(SandboxViolation, match="refused command 'curl'"):
        await tool({"command": "curl https://example.com"}, CTX)
    with pytest.raises(SandboxViolation, match="refused command '/bin/echo'"):
        await tool({"command": ["/bin/echo", "hi"]}, CTX)


@pytest.mark.parametrize(
    "hostile",
    [
        "echo hi; rm -rf notes.txt",
        "echo $(rm -rf notes.txt)",
        "echo `rm -rf notes.txt`",
        "echo hi | rm -rf *",
        "echo hi && rm -rf notes.txt",
        "echo hi > notes.txt",
        "echo 'quoted; words' \"$HOME\"",
    ],
)
async def test_shell_metacharacters_are_literal_arguments(jail: Path, hostile: str) -> None:
    import shlex

    tool = shell(jail, "echo")
    command = hostile
    out = await tool({"command": command, "cwd": str(jail)}, CTX)
    # echo printed the metacharacters; nothing was removed or overwritten.
    assert out.strip() == " ".join(shlex.split(command)[1:])
    assert "$" in out or "`" in out or ";" in out or "|" in out or "&" in out or ">" in out
    assert (jail / "notes.txt").read_text() == "inside"


async def test_path_arguments_outside_the_sandbox_are_refused(jail: Path) -> None:
    tool = shell(jail, "cat")
    assert await tool({"command": ["cat", "notes.txt"], "cwd": str(jail)}, CTX) == "inside"
    for hostile in ("/etc/passwd", "../secret.txt", "--file=/etc/passwd"):
        with pytest.raises(SandboxViolation, match="refused argument"):
            await tool({"command": ["cat", hostile], "cwd": str(jail)}, CTX)
    with pytest.raises(SandboxViolation, match="refused working directory"):
        await tool({"command": ["cat", "x"], "cwd": "/etc"}, CTX)


async def test_without_cwd_commands_run_inside_the_sandbox(
    jail: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The process's own directory holds a secret; a relative name must not reach it.
    monkeypatch.chdir(jail.parent)
    tool = shell(jail, "cat", "ls")
    assert await tool({"command": "cat notes.txt"}, CTX) == "inside"
    with pytest.raises(ToolError, match="No such file"):
        await tool({"command": "cat secret.txt"}, CTX)
    # No paths allowed at all: an empty scratch directory.
    bare = ShellCommandTool(policy=SandboxPolicy(allowed_commands=("ls",)))
    assert await bare({"command": "ls -a"}, CTX) == ".\n..\n"


async def test_a_failing_command_reports_its_status_and_stderr(jail: Path) -> None:
    tool = shell(jail, "cat")
    with pytest.raises(ToolError, match=r"cat exited with status 1: .*missing"):
        await tool({"command": "cat missing", "cwd": str(jail)}, CTX)


async def test_the_timeout_kills_the_whole_process_group(jail: Path) -> None:
    # A child that would outlive its parent if only the parent were killed.
    script = ("import subprocess,threading; subprocess.Popen(['sleep','30']); "
              "threading.Event().wait()")
    # An interpreter outside /usr (a virtualenv's, pyenv's) needs its installation
    # mounted too: the sandbox gives an allowed program its own file only.
    policy = SandboxPolicy(
        allowed_commands=(sys.executable,),
        danger_opt_in=(sys.executable,),
        readable_paths=(str(jail), sys.prefix, sys.base_prefix),
    )
    tool = ShellCommandTool(policy=policy, timeout=0.2)
    start = time.monotonic()
    with pytest.raises(ToolError, match=r"timed out after 0.2 s and was killed"):
        await tool({"command": [sys.executable, "-c", script]}, CTX)
    assert time.monotonic() - start < 5
    # The call's own smaller timeout wins too.
    sleeper = ShellCommandTool(policy=SandboxPolicy(allowed_commands=("sleep",)), timeout=30)
    with pytest.raises(ToolError, match=r"timed out after 0.1 s"):
        await sleeper({"command": "sleep 5", "timeout": 0.1}, CTX)


async def test_an_interpreter_inside_a_readable_path_runs_its_own_installation() -> None:
    # A virtualenv's bin/python is a symlink into the base installation. With both
    # mounted it resolves inside the box as it does outside, and the interpreter that
    # runs is this one, its packages included (a mount of its own on that path would
    # keep bubblewrap from starting).
    policy = SandboxPolicy(
        allowed_commands=(sys.executable,),
        danger_opt_in=(sys.executable,),
        readable_paths=(sys.prefix, sys.base_prefix),
    )
    tool = ShellCommandTool(policy=policy, timeout=60)
    script = "import sys, pydantic; print(sys.prefix); print(sys.version)"
    out = await tool({"command": [sys.executable, "-c", script]}, CTX)
    assert out.splitlines() == [sys.prefix, sys.version]


async def test_output_is_capped(jail: Path) -> None:
    policy = SandboxPolicy(allowed_commands=("seq",), max_output_bytes=20)
    out = await ShellCommandTool(policy=policy)({"command": "seq 1 100000"}, CTX)
    assert out.endswith("[output truncated at 20 bytes; the program was stopped]")
    assert out.startswith("1\n2\n3\n")


async def test_disabled_sandbox_runs_any_command_but_still_without_a_shell() -> None:
    tool = ShellCommandTool(policy=SandboxPolicy(enabled=False))
    assert (await tool({"command": "echo a;b"}, CTX)).strip() == "a;b"
    assert os.path.exists("/bin/echo")
