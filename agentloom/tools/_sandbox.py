"""The sandbox: what the built-in tools may touch (paths, network, commands).

Safe by default: with no `sandbox:` block, the sandbox is enabled and allows nothing (no
network, no shell, no files), and each refusal says which setting would allow it.

Two layers. This module checks each request against the allow-lists (a clear refusal,
before anything runs); the operating system then holds the line the checks can't:
file tools open paths beneath their root with no symlink followed (`agentloom.tools._safefs`),
and `shell_command` runs its child under bubblewrap (`_isolation`), which sees only the
allowed paths. `isolation: auto` (the default) uses bubblewrap when it works here and
refuses `shell_command` when it doesn't; `bwrap` requires it; `none` runs commands with
the word checks only (a warning says so). Commands are an allow-list resolved to
absolute executables when the policy is built; the child gets a minimal environment.

`enabled: false` lifts the path and command limits (any file, any command; commands still
run without a shell and without isolation). Two things hold even then (spec 000):
`allow_network: false` and `allowed_domains` still restrict URLs, and private, loopback
and link-local addresses are refused on every redirect hop unless
`allow_private_addresses` or `allowed_addresses` name them. An `allowed_addresses` entry
is a host, an IP, a network (`10.0.0.0/8`) or an address with a port (`127.0.0.1:8080`,
`[::1]:8080`), which allows that one port only: the way tests open exactly one loopback
server.

The address check resolves the name, and the transport resolves it again when it
connects; a DNS server that answers differently the second time (rebinding) would slip
past the check alone. So `http_request` sends each hop inside `policy.pin()`: the aiohttp
transport then connects only to addresses these same rules allow, judged on the lookup the
connection itself uses (`agentloom.http.netguard.pinned`). docs/security.md has the whole
threat model.
"""

from __future__ import annotations

import difflib
import ipaddress
import os
import re
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agentloom.errors import ConfigError, ToolError, kind_of
from agentloom.http.netguard import (
    AddressPolicy,
    AddressRefused,
    host_matches,
    parse_host,
    pinned,
    resolve,
    split_port,
)
from agentloom.tools._isolation import SAFE_PATH
from agentloom.tools._safefs import BadPath, resolve_under

# Programs that run whatever their arguments say: allowing one allows every command.
DANGEROUS_COMMANDS = frozenset(
    {
        "sh",
        "bash",
        "zsh",
        "dash",
        "ksh",
        "fish",
        "csh",
        "tcsh",
        "env",
        "xargs",
        "sudo",
        "su",
        "doas",
        "python",
        "python3",
        "perl",
        "ruby",
        "node",
        "php",
        "lua",
        "awk",
        "gawk",
        "find",
        "nohup",
        "timeout",
        "nice",
        "ionice",
        "setsid",
        "stdbuf",
        "exec",
        "eval",
        "busybox",
        "ssh",
        "docker",
        "kubectl",
    }
)
# Versioned and variant names of the interpreters above (python3.11, mawk, nawk, pypy3,
# perl5.36, node20, ...): the rule is on the program's family, not one spelling.
_INTERPRETER = re.compile(
    r"(?:python|pypy|perl|ruby|node|nodejs|php|lua|luajit|tclsh|wish|expect|guile|"
    r"[gmn]?awk|busybox|(?:ba|da|z|k|mk|pdk|c|tc|fi|a|y|r|rb|es|rc)?sh)[0-9._-]*m?"
)
ISOLATION_MODES = ("auto", "bwrap", "none")


def is_dangerous(program: str) -> bool:
    """True for a program that runs whatever its arguments say (a shell, an
    interpreter, a launcher), under any version suffix or symlinked name."""
    names = {os.path.basename(program)}
    try:
        names.add(os.path.basename(os.path.realpath(program)))
    except OSError:
        pass
    return any(n in DANGEROUS_COMMANDS or _INTERPRETER.fullmatch(n) for n in names)


class SandboxViolation(ToolError):
    """The sandbox refused a tool action. The message names the setting that allows it."""


def _tuple(value: Any, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Iterable):
        out = []
        for v in value:
            if not isinstance(v, str | int):
                raise ConfigError(f"sandbox.{key}: expected strings, got {v!r}")
            out.append(str(v))
        return tuple(out)
    raise ConfigError(f"sandbox.{key}: expected a list of strings, got {value!r}")


@dataclass(slots=True, frozen=True, kw_only=True)
class SandboxPolicy:
    """What built-in tools may do.

    SandboxPolicy()                                        # nothing: the default
    SandboxPolicy(readable_paths=("./data",))              # file_read under ./data
    SandboxPolicy(allow_network=True, allowed_domains=("api.example.com",))
    SandboxPolicy(allowed_commands=("echo", "ls"))         # shell_command, no shell
    SandboxPolicy(enabled=False)                           # any path or command
    SandboxPolicy.from_config(yaml_dict["sandbox"])
    """

    enabled: bool = True
    allow_network: bool | None = None
    """None: off when enabled, on when disabled. An explicit False always holds."""
    allowed_domains: tuple[str, ...] = ()
    """If not empty, URLs must be at one of these hosts or their subdomains."""
    allowed_schemes: tuple[str, ...] = ("http", "https")
    readable_paths: tuple[str, ...] = ()
    allowed_paths: tuple[str, ...] = ()
    """Writable (and so readable) directories or files."""
    allowed_commands: tuple[str, ...] = ()
    danger_opt_in: tuple[str, ...] = ()
    """Commands from DANGEROUS_COMMANDS the author allows knowingly."""
    allow_private_addresses: bool = False
    allowed_addresses: tuple[str, ...] = ()
    max_output_bytes: int = 1_000_000
    """Tool output (response bodies, command output, file reads) is cut here."""
    max_write_bytes: int = 10_000_000
    isolation: str = "auto"
    """How shell_command's child is isolated: auto (bubblewrap if it works, else
    shell_command is refused), bwrap (required), none (word checks only)."""
    env: tuple[str, ...] = ()
    """Variables the child gets besides PATH, HOME, LANG and TMPDIR: `NAME` (copied from
    the environment if set) or `NAME=value`."""
    base_dir: str | None = None
    """Relative paths resolve against this (the directory runs start from); None: cwd."""
    _address_policy: AddressPolicy = field(init=False, repr=False, compare=False)
    _port_rules: tuple[tuple[str, int], ...] = field(init=False, repr=False, compare=False)
    _executables: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_output_bytes <= 0 or self.max_write_bytes <= 0:
            raise ConfigError("sandbox: max_output_bytes and max_write_bytes must be positive")
        if self.isolation not in ISOLATION_MODES:
            raise ConfigError(f"sandbox.isolation: expected one of {', '.join(ISOLATION_MODES)}"
                              f", got {self.isolation!r}")
        for entry in self.env:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(=.*)?", entry, re.S):
                raise ConfigError(f"sandbox.env: {entry!r} is not NAME or NAME=value")
        executables = {c: exe for c in self.allowed_commands if (exe := _executable(c))}
        object.__setattr__(self, "_executables", executables)
        risky = sorted(
            c
            for c in self.allowed_commands
            if (is_dangerous(c) or is_dangerous(executables.get(c, c)))
            and c not in self.danger_opt_in
        )
        if risky:
            raise ConfigError(
                f"sandbox.allowed_commands: {', '.join(risky)} can run any other command; "
                f"list them in sandbox.danger_opt_in too if you mean it"
            )
        plain: list[str] = []
        ports: list[tuple[str, int]] = []
        for entry in self.allowed_addresses:
            split = split_port(entry)
            if split is None:
                plain.append(entry)
            else:
                ports.append(split)
        object.__setattr__(
            self,
            "_address_policy",
            AddressPolicy(allow_private=self.allow_private_addresses, allowed=tuple(plain)),
        )
        object.__setattr__(self, "_port_rules", tuple(ports))

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None) -> SandboxPolicy:
        """The YAML `sandbox:` block. Unknown keys are errors (with a suggestion);
        `writable_paths` is taken as `allowed_paths`."""
        if config is None:
            return cls()
        if not isinstance(config, Mapping):
            raise ConfigError(f"sandbox: expected a mapping, got {kind_of(config)}")
        known = {f.name for f in fields(cls) if not f.name.startswith("_")}
        aliases = {"writable_paths": "allowed_paths"}
        ignored = {"allow_internal_webhook_targets"}  # webhooks' concern, not the tools'
        values: dict[str, Any] = {}
        for key, value in config.items():
            target = aliases.get(key, key)
            if key in ignored:
                continue
            if target not in known:
                close = difflib.get_close_matches(key, sorted(known | set(aliases)), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ConfigError(f"sandbox: unknown setting {key!r}{hint}")
            if target in ("enabled", "allow_private_addresses"):
                if not isinstance(value, bool):
                    raise ConfigError(f"sandbox.{key}: expected true or false, got {value!r}")
                values[target] = value
            elif target == "allow_network":
                if value is not None and not isinstance(value, bool):
                    raise ConfigError(f"sandbox.{key}: expected true or false, got {value!r}")
                values[target] = value
            elif target in ("max_output_bytes", "max_write_bytes"):
                if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                    raise ConfigError(f"sandbox.{key}: expected a positive integer, got {value!r}")
                values[target] = value
            elif target == "base_dir":
                values[target] = None if value is None else str(value)
            elif target == "isolation":
                if value is None:
                    continue
                if value not in ISOLATION_MODES:
                    raise ConfigError(f"sandbox.isolation: expected one of "
                                      f"{', '.join(ISOLATION_MODES)}, got {value!r}")
                values[target] = value
            else:
                values[target] = values.get(target, ()) + _tuple(value, key)
        return cls(**values)

    # --- network --------------------------------------------------------------------

    @property
    def network_allowed(self) -> bool:
        return self.allow_network if self.allow_network is not None else not self.enabled

    async def check_url(self, url: str) -> list[str]:
        """Refuse a URL this policy does not allow; returns its resolved addresses.
        Call it on every hop of a redirect chain."""
        try:
            scheme = urlsplit(url).scheme.lower()
        except ValueError as exc:  # `http://[::1/`: an unclosed bracket
            raise SandboxViolation(f"refused {url!r}: URL is not valid ({exc})") from None
        if scheme not in {s.lower() for s in self.allowed_schemes}:
            raise SandboxViolation(
                f"refused {url!r}: scheme {scheme or '(none)'!r} is not in "
                f"sandbox.allowed_schemes ({', '.join(self.allowed_schemes) or 'none'})"
            )
        if not self.network_allowed:
            raise SandboxViolation(
                f"refused {url!r}: network access is off (set sandbox.allow_network: true)"
            )
        try:
            host, port = parse_host(url)
        except AddressRefused as exc:
            raise SandboxViolation(f"refused {url!r}: {exc}") from None
        if self.allowed_domains and not host_matches(host, self.allowed_domains):
            raise SandboxViolation(
                f"refused {url!r}: host {host!r} is not in sandbox.allowed_domains "
                f"({', '.join(self.allowed_domains)})"
            )
        try:
            # An IP literal needs no lookup; other forms (2130706433, 0x7f.1) go through
            # the resolver, which reads them the way the connection would.
            addresses = [str(ipaddress.ip_address(host))]
        except ValueError:
            addresses = []
        try:
            addresses = addresses or await resolve(host, port)
        except OSError as exc:
            raise SandboxViolation(f"refused {url!r}: cannot resolve {host!r}: {exc}") from None
        denied = [a for a in addresses if not self._address_ok(host, port, a)]
        if denied:
            raise SandboxViolation(
                f"refused {url!r}: {host} is a private, loopback or link-local address "
                f"({', '.join(denied)}); allow it with sandbox.allowed_addresses or "
                f"sandbox.allow_private_addresses"
            )
        return addresses

    def pin(self) -> AbstractContextManager[None]:
        """The block a request runs in so that its connection goes only to an address
        these rules allow, judged on the connection's own lookup (no second, unchecked
        one). A refusal there is netguard's AddressRefused."""
        return pinned(self._address_ok)

    def _address_ok(self, host: str, port: int, address: str) -> bool:
        if self._address_policy.permits(host, address):
            return True
        for entry, allowed_port in self._port_rules:
            if allowed_port == port and AddressPolicy(allowed=(entry,)).permits(host, address):
                return True
        return False

    # --- files ----------------------------------------------------------------------

    def resolve_path(self, path: str) -> Path:
        """The path with `~`, `..` and every symlink resolved (the file need not exist).
        A NUL byte or a symlink loop is a SandboxViolation that says so."""
        try:
            return resolve_under(path, Path(self.base_dir or os.getcwd()))
        except BadPath as exc:
            raise SandboxViolation(f"refused path {path!r}: {exc.strerror}") from None

    def _roots(self, entries: Iterable[str]) -> list[Path]:
        return [self.resolve_path(e) for e in entries]

    def check_read(self, path: str) -> Path:
        """The resolved path if reading it is allowed; else SandboxViolation."""
        resolved = self.resolve_path(path)
        if not self.enabled:
            return resolved
        roots = self._roots((*self.readable_paths, *self.allowed_paths))
        if not any(_under(resolved, r) for r in roots):
            raise SandboxViolation(
                f"refused to read {path!r} (resolves to {str(resolved)!r}): not under "
                f"sandbox.readable_paths or sandbox.allowed_paths "
                f"({', '.join(self.readable_paths + self.allowed_paths) or 'none set'})"
            )
        return resolved

    def read_roots(self) -> list[Path] | None:
        """The roots a read must stay beneath (resolved); None when not enabled."""
        if not self.enabled:
            return None
        return self._roots((*self.readable_paths, *self.allowed_paths))

    def write_roots(self) -> list[Path] | None:
        return self._roots(self.allowed_paths) if self.enabled else None

    def check_write(self, path: str) -> Path:
        resolved = self.resolve_path(path)
        if not self.enabled:
            return resolved
        if not any(_under(resolved, r) for r in self._roots(self.allowed_paths)):
            raise SandboxViolation(
                f"refused to write {path!r} (resolves to {str(resolved)!r}): not under "
                f"sandbox.allowed_paths ({', '.join(self.allowed_paths) or 'none set'})"
            )
        return resolved

    # --- commands -------------------------------------------------------------------

    def default_workdir(self) -> Path | None:
        """Where a command without `cwd` runs when the sandbox is enabled: the first
        readable or writable directory; None for an empty temporary directory (so a
        relative file name never reaches the process's own working directory).
        Blocking (it stats paths): call it in a thread."""
        for root in self._roots((*self.allowed_paths, *self.readable_paths)):
            if root.is_dir():
                return root
        return None

    def check_command(self, argv: list[str], cwd: str | None) -> Path | None:
        """Refuse a command line this policy does not allow; returns the resolved cwd.

        When enabled: the program must be in allowed_commands, the working directory
        under the readable or writable paths, and every argument that looks like a
        path outside the working directory (absolute, `~`, `..`, `--flag=/path`) must
        be under them as well. Blocking (it resolves paths, so a hung mount blocks it):
        `shell_command` calls it in a worker thread."""
        if not argv:
            raise SandboxViolation("refused: empty command")
        resolved_cwd = self.resolve_path(cwd) if cwd else None
        if not self.enabled:
            return resolved_cwd
        program = argv[0]
        if program not in self.allowed_commands and program not in self._executables.values():
            allowed = ", ".join(self.allowed_commands)
            raise SandboxViolation(
                f"refused command {program!r}: not in sandbox.allowed_commands"
                + (
                    f" ({allowed})"
                    if allowed
                    else " (shell_command is off; list the "
                    "commands it may run in sandbox.allowed_commands)"
                )
            )
        roots = self._roots((*self.readable_paths, *self.allowed_paths))
        if resolved_cwd is not None and not any(_under(resolved_cwd, r) for r in roots):
            raise SandboxViolation(
                f"refused working directory {cwd!r}: not under sandbox.readable_paths or "
                "sandbox.allowed_paths"
            )
        base = resolved_cwd or Path(self.base_dir or os.getcwd())
        for arg in argv[1:]:
            candidate = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
            if not _looks_like_outside_path(candidate):
                continue
            try:
                target = resolve_under(candidate, base)
            except BadPath as exc:
                raise SandboxViolation(f"refused argument {arg!r}: {exc.strerror}") from None
            if not any(_under(target, r) for r in roots):
                raise SandboxViolation(
                    f"refused argument {arg!r}: the path is not under sandbox.readable_paths "
                    "or sandbox.allowed_paths"
                )
        return resolved_cwd


    def executable(self, program: str) -> str | None:
        """The absolute executable `program` runs: the one resolved for it when the
        policy was built (an allowed name, or the path it resolved to); with the sandbox
        disabled, looked up on the fixed system PATH. None: not found."""
        if program in self._executables:
            return self._executables[program]
        if program in self._executables.values():
            return program
        return None if self.enabled else _executable(program)

    def roots(self) -> tuple[list[Path], list[Path]]:
        """(readable, writable) paths, resolved, and the allowed executables: what a
        command's sandbox mounts. A program inside a readable path is seen through that
        mount, as it is on the host: a mount of its own there would be made on its path
        inside the box, where a symlink (a virtualenv's `bin/python`) leads nowhere and
        bubblewrap fails to start. One inside a writable path keeps its read-only mount,
        so the command can't rewrite a program it is allowed to run."""
        readable = self._roots(self.readable_paths)
        programs = [Path(p) for p in self._executables.values()]
        mounted_apart = [p for p in programs if not any(_under(p, r) for r in readable)]
        return [*readable, *mounted_apart], self._roots(self.allowed_paths)


def _executable(program: str) -> str | None:
    """`program` as an absolute, executable file: as given if absolute, else the first
    match on the fixed system PATH (never the caller's $PATH)."""
    if os.path.isabs(program):
        candidates = [program]
    elif os.sep in program:
        return None
    else:
        candidates = [os.path.join(d, program) for d in SAFE_PATH.split(":")]
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _looks_like_outside_path(arg: str) -> bool:
    return arg.startswith(("/", "~")) or ".." in Path(arg).parts
