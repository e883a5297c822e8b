"""The sandbox rules a mutation run found untested: `~` arguments, settings read from a
YAML block (strings where booleans belong, limits at their boundary, base_dir, an IPv6
address with a port), `enabled: false`, and the command checks one by one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentloom.errors import ConfigError
from agentloom.loop import ToolContext
from agentloom.tools import SandboxPolicy, SandboxViolation
from agentloom.tools._isolation import detect_bwrap
from agentloom.tools.builtins import FileReadTool, FileWriteTool, ShellCommandTool

CTX = ToolContext()


def from_yaml(text: str) -> SandboxPolicy:
    block: dict[str, Any] = yaml.safe_load(text)
    return SandboxPolicy.from_config(block)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    inside = tmp_path / "work"
    inside.mkdir()
    (inside / "notes.txt").write_text("inside")
    (tmp_path / "secret.txt").write_text("outside")
    return inside


# --- `~` and the other path-looking arguments -------------------------------------------


def test_a_tilde_argument_outside_the_allowed_paths_is_refused(
    work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    policy = SandboxPolicy(allowed_commands=("cat",), allowed_paths=(str(work),))
    with pytest.raises(SandboxViolation, match=r"refused argument '~/secret.txt'"):
        policy.check_command(["cat", "~/secret.txt"], str(work))


def test_a_tilde_argument_inside_the_allowed_paths_passes(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(work))
    policy = SandboxPolicy(allowed_commands=("cat",), allowed_paths=(str(work),))
    assert policy.check_command(["cat", "~/notes.txt"], str(work)) == work.resolve()


@pytest.mark.parametrize("arg", ["../secret.txt", "--file=../secret.txt", "--file=/etc/passwd"])
def test_arguments_reaching_outside_are_refused(work: Path, arg: str) -> None:
    policy = SandboxPolicy(allowed_commands=("cat",), allowed_paths=(str(work),))
    with pytest.raises(SandboxViolation, match="refused argument"):
        policy.check_command(["cat", arg], str(work))


@pytest.mark.parametrize("arg", ["notes.txt", "-n", "--number", "--file=notes.txt", "a=b/../c"])
def test_arguments_inside_the_working_directory_pass(work: Path, arg: str) -> None:
    policy = SandboxPolicy(allowed_commands=("cat",), allowed_paths=(str(work),))
    assert policy.check_command(["cat", arg], str(work)) == work.resolve()


def test_an_argument_resolves_against_base_dir_without_a_cwd(work: Path) -> None:
    policy = SandboxPolicy(
        allowed_commands=("cat",), allowed_paths=(str(work),), base_dir=str(work)
    )
    assert policy.check_command(["cat", "sub/../notes.txt"], None) is None
    with pytest.raises(SandboxViolation, match="refused argument"):
        policy.check_command(["cat", "../secret.txt"], None)


def test_a_working_directory_outside_is_refused(work: Path, tmp_path: Path) -> None:
    policy = SandboxPolicy(allowed_commands=("ls",), readable_paths=(str(work),))
    with pytest.raises(SandboxViolation, match="refused working directory"):
        policy.check_command(["ls"], str(tmp_path))
    assert policy.check_command(["ls"], str(work)) == work.resolve()


def test_an_empty_command_is_refused_even_when_disabled() -> None:
    for policy in (SandboxPolicy(), SandboxPolicy(enabled=False)):
        with pytest.raises(SandboxViolation, match="empty command"):
            policy.check_command([], None)


def test_a_command_not_listed_names_the_setting(work: Path) -> None:
    with pytest.raises(SandboxViolation, match=r"shell_command is off; list the commands"):
        SandboxPolicy().check_command(["ls"], None)
    policy = SandboxPolicy(allowed_commands=("echo",))
    with pytest.raises(SandboxViolation, match=r"not in sandbox.allowed_commands \(echo\)$"):
        policy.check_command(["ls"], None)


def test_a_command_given_by_its_resolved_path_is_the_same_command() -> None:
    policy = SandboxPolicy(allowed_commands=("echo",))
    exe = policy.executable("echo")
    assert exe is not None and os.path.isabs(exe)
    assert policy.executable(exe) == exe
    assert policy.check_command([exe, "hi"], None) is None
    assert policy.executable("ls") is None  # not allowed, so not looked up
    assert SandboxPolicy(enabled=False).executable("ls") is not None
    assert SandboxPolicy(enabled=False).executable("bin/ls") is None  # relative: never
    assert SandboxPolicy(enabled=False).executable("/nonexistent/ls") is None


def test_roots_lists_readable_paths_programs_and_writable_paths(work: Path) -> None:
    ro = work / "ro"
    ro.mkdir()
    policy = SandboxPolicy(
        allowed_commands=("echo",), readable_paths=(str(ro),), allowed_paths=(str(work),)
    )
    readable, writable = policy.roots()
    assert readable == [ro.resolve(), Path(str(policy.executable("echo")))]
    assert writable == [work.resolve()]


def test_a_program_inside_a_readable_path_is_seen_through_it(work: Path) -> None:
    tools = work / "tools"
    (tools / "bin").mkdir(parents=True)
    program = tools / "bin" / "tool"
    program.write_text("#!/bin/sh\necho tool\n")
    program.chmod(0o755)
    (work / "own").mkdir()
    policy = SandboxPolicy(allowed_commands=(str(program),), readable_paths=(str(tools),))
    assert policy.roots() == ([tools.resolve()], [])
    # Under a writable path it keeps its own read-only mount: not rewritable in the box.
    writable = SandboxPolicy(allowed_commands=(str(program),), allowed_paths=(str(tools),))
    assert writable.roots() == ([program], [tools.resolve()])
    elsewhere = SandboxPolicy(allowed_commands=(str(program),),
                              readable_paths=(str(work / "own"),))
    assert elsewhere.roots() == ([(work / "own").resolve(), program], [])


def test_default_workdir_is_the_first_existing_directory(work: Path) -> None:
    file_root = work / "notes.txt"
    policy = SandboxPolicy(
        allowed_paths=(str(file_root), str(work / "missing")), readable_paths=(str(work),)
    )
    assert policy.default_workdir() == work.resolve()
    assert SandboxPolicy(readable_paths=(str(file_root),)).default_workdir() is None


async def test_a_tilde_argument_is_refused_under_bubblewrap_too(
    work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = detect_bwrap()
    assert found.available, found.problem  # scripts/ensure-bwrap.sh installs it
    monkeypatch.setenv("HOME", str(tmp_path))
    tool = ShellCommandTool(
        policy=SandboxPolicy(allowed_commands=("cat",), allowed_paths=(str(work),)), timeout=30
    )
    with pytest.raises(SandboxViolation, match="refused argument"):
        await tool({"command": ["cat", "~/secret.txt"], "cwd": str(work)}, CTX)
    assert str(await tool({"command": ["cat", "notes.txt"], "cwd": str(work)}, CTX)).startswith(
        "inside"
    )


# --- settings from YAML ---------------------------------------------------------------


@pytest.mark.parametrize("value", ['"false"', '"true"', "0", "1", "no_such"])
def test_allow_network_must_be_a_boolean(value: str) -> None:
    with pytest.raises(ConfigError, match=r"sandbox\.allow_network: expected true or false"):
        from_yaml(f"allow_network: {value}")


def test_allow_network_false_holds_and_null_follows_enabled() -> None:
    assert from_yaml("allow_network: false").network_allowed is False
    assert from_yaml("allow_network: true").network_allowed is True
    assert from_yaml("allow_network: null").network_allowed is False
    assert from_yaml("{enabled: false, allow_network: null}").network_allowed is True
    assert from_yaml("{enabled: false, allow_network: false}").network_allowed is False


@pytest.mark.parametrize("key", ["enabled", "allow_private_addresses"])
def test_boolean_switches_refuse_strings(key: str) -> None:
    with pytest.raises(ConfigError, match=rf"sandbox\.{key}: expected true or false"):
        from_yaml(f'{key}: "false"')


async def test_enabled_false_from_yaml_lifts_path_and_command_limits(
    work: Path, tmp_path: Path
) -> None:
    policy = from_yaml("enabled: false")
    outside = tmp_path / "elsewhere" / "out.txt"
    writer = FileWriteTool(policy=policy)
    assert (await writer({"path": str(outside), "content": "free"}, CTX)).startswith("wrote 4")
    assert outside.read_text() == "free"
    assert await FileReadTool(policy=policy)({"path": str(outside)}, CTX) == "free"
    assert policy.read_roots() is None and policy.write_roots() is None
    assert policy.check_write(str(outside)) == outside.resolve()
    assert policy.check_command(["ls", "/etc"], str(tmp_path)) == tmp_path.resolve()
    assert policy.network_allowed


def test_enabled_true_keeps_the_roots(work: Path) -> None:
    policy = from_yaml(f"{{readable_paths: ['{work / 'ro'}'], allowed_paths: ['{work}']}}")
    assert policy.read_roots() == [(work / "ro").resolve(), work.resolve()]
    assert policy.write_roots() == [work.resolve()]
    with pytest.raises(SandboxViolation, match="refused to write"):
        policy.check_write(str(work.parent / "x"))


@pytest.mark.parametrize("key", ["max_output_bytes", "max_write_bytes"])
@pytest.mark.parametrize("bad", ["0", "-1", "true", '"10"', "1.5"])
def test_byte_limits_must_be_positive_integers(key: str, bad: str) -> None:
    with pytest.raises(ConfigError, match=rf"sandbox\.{key}: expected a positive integer"):
        from_yaml(f"{key}: {bad}")


@pytest.mark.parametrize("field_name", ["max_output_bytes", "max_write_bytes"])
def test_byte_limits_of_one_are_accepted_and_zero_is_not(field_name: str) -> None:
    assert getattr(SandboxPolicy(**{field_name: 1}), field_name) == 1
    with pytest.raises(ConfigError, match="must be positive"):
        SandboxPolicy(**{field_name: 0})


async def test_max_output_bytes_from_yaml_cuts_a_read_just_over_it(work: Path) -> None:
    (work / "ten.txt").write_text("x" * 10)
    (work / "eleven.txt").write_text("y" * 11)
    policy = from_yaml(f"{{readable_paths: ['{work}'], max_output_bytes: 10}}")
    tool = FileReadTool(policy=policy)
    assert await tool({"path": str(work / "ten.txt")}, CTX) == "x" * 10
    assert await tool({"path": str(work / "eleven.txt")}, CTX) == (
        "y" * 10 + "\n[output truncated at 10 bytes]"
    )


async def test_max_write_bytes_from_yaml_allows_exactly_the_limit(work: Path) -> None:
    policy = from_yaml(f"{{allowed_paths: ['{work}'], max_write_bytes: 4}}")
    writer = FileWriteTool(policy=policy)
    assert (await writer({"path": str(work / "a.txt"), "content": "abcd"}, CTX)).startswith(
        "wrote 4 bytes"
    )
    with pytest.raises(Exception, match=r"max_write_bytes \(4\)"):
        await writer({"path": str(work / "b.txt"), "content": "abcde"}, CTX)
    assert not (work / "b.txt").exists()


async def test_base_dir_from_yaml_anchors_relative_paths(work: Path) -> None:
    policy = from_yaml(f"{{base_dir: '{work.parent}', readable_paths: [work]}}")
    assert policy.base_dir == str(work.parent)
    assert await FileReadTool(policy=policy)({"path": "work/notes.txt"}, CTX) == "inside"
    with pytest.raises(SandboxViolation):
        await FileReadTool(policy=policy)({"path": "secret.txt"}, CTX)
    assert from_yaml("base_dir: null").base_dir is None
    assert from_yaml("base_dir: 7").base_dir == "7"


async def test_an_ipv6_address_with_a_port_allows_that_port_only() -> None:
    policy = from_yaml("{allow_network: true, allowed_addresses: ['[::1]:8080']}")
    assert await policy.check_url("http://[::1]:8080/x") == ["::1"]
    with pytest.raises(SandboxViolation, match="private, loopback or link-local"):
        await policy.check_url("http://[::1]:8081/x")
    with pytest.raises(SandboxViolation, match="private, loopback or link-local"):
        await policy.check_url("http://127.0.0.1:8080/x")


async def test_a_plain_address_allows_every_port() -> None:
    policy = from_yaml("{allow_network: true, allowed_addresses: ['127.0.0.1']}")
    assert await policy.check_url("http://127.0.0.1:1/") == ["127.0.0.1"]
    assert await policy.check_url("http://127.0.0.1:65535/") == ["127.0.0.1"]


async def test_network_off_is_refused_before_any_lookup() -> None:
    with pytest.raises(SandboxViolation, match=r"network access is off"):
        await from_yaml("allowed_addresses: ['127.0.0.1']").check_url("http://127.0.0.1/")


async def test_schemes_compare_without_case() -> None:
    policy = from_yaml("{allow_network: true, allowed_schemes: [HTTPS], allowed_addresses: "
                       "['127.0.0.1']}")
    assert await policy.check_url("https://127.0.0.1/") == ["127.0.0.1"]
    with pytest.raises(SandboxViolation, match=r"scheme 'http' is not in"):
        await policy.check_url("http://127.0.0.1/")
    with pytest.raises(SandboxViolation, match=r"scheme '\(none\)'"):
        await policy.check_url("127.0.0.1/")


async def test_allowed_domains_take_subdomains_and_nothing_else() -> None:
    policy = from_yaml(
        "{allow_network: true, allowed_domains: [localhost], allow_private_addresses: true}"
    )
    assert await policy.check_url("http://localhost:9/") != []
    with pytest.raises(SandboxViolation, match=r"not in sandbox.allowed_domains \(localhost\)"):
        await policy.check_url("http://127.0.0.1:9/")


def test_isolation_null_keeps_the_default_and_a_bad_value_is_named() -> None:
    assert from_yaml("isolation: null").isolation == "auto"
    assert from_yaml("isolation: none").isolation == "none"
    with pytest.raises(ConfigError, match=r"sandbox\.isolation: expected one of auto, bwrap"):
        from_yaml("isolation: docker")
    with pytest.raises(ConfigError, match=r"sandbox\.isolation: expected one of"):
        SandboxPolicy(isolation="docker")


def test_lists_take_a_single_string_numbers_and_refuse_the_rest() -> None:
    assert from_yaml("allowed_commands: echo").allowed_commands == ("echo",)
    assert from_yaml("allowed_domains: [a.com, 8]").allowed_domains == ("a.com", "8")
    assert from_yaml("allowed_domains: null").allowed_domains == ()
    with pytest.raises(ConfigError, match=r"sandbox\.allowed_domains: expected strings"):
        from_yaml("allowed_domains: [{a: 1}]")
    with pytest.raises(ConfigError, match=r"expected a list of strings, got 5"):
        from_yaml("allowed_domains: 5")
    with pytest.raises(ConfigError, match="expected a mapping, got a list"):
        SandboxPolicy.from_config([])  # type: ignore[arg-type]


def test_the_webhook_setting_is_ignored_and_an_unknown_one_gets_no_bad_hint() -> None:
    assert from_yaml("allow_internal_webhook_targets: true") == SandboxPolicy()
    with pytest.raises(ConfigError, match=r"unknown setting 'zzz'$"):
        from_yaml("zzz: 1")


@pytest.mark.parametrize("entry", ["A", "_A1", "A=", "A=x y", "A=line\nbreak"])
def test_env_entries_that_are_names_or_assignments(entry: str) -> None:
    assert SandboxPolicy(env=(entry,)).env == (entry,)


@pytest.mark.parametrize("entry", ["1A", "A-B", "", "=x"])
def test_env_entries_that_are_not(entry: str) -> None:
    with pytest.raises(ConfigError, match=r"sandbox\.env"):
        SandboxPolicy(env=(entry,))


def test_a_danger_opt_in_for_one_interpreter_does_not_cover_another() -> None:
    with pytest.raises(ConfigError, match=r"^sandbox.allowed_commands: perl can run"):
        SandboxPolicy(allowed_commands=("bash", "perl"), danger_opt_in=("bash",))
