"""OS isolation for `shell_command`: the child runs under bubblewrap (`bwrap`).

Checking a command's words can't hold (`tar --checkpoint-action=exec=...`, git aliases,
a symlink named like a file), so the child runs in its own mount, PID, IPC, UTS, user
and network namespaces: it sees the system's programs and libraries read-only, a private
/tmp, /proc and /dev, the sandbox's readable paths read-only and its writable paths
writable, and nothing else (no home directories, no project, no credentials files); no
network unless the sandbox allows it; it dies with its parent, so killing the process
group at the timeout ends everything it started.

bubblewrap is looked for in fixed system directories (not `$PATH`: the library reads no
environment) and probed once by running `true` under the same kind of namespace set.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

BWRAP_LOCATIONS = ("/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap")
SAFE_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
"""PATH inside the child, and where allowed command names are resolved."""
# System directories the child needs to run programs; bound read-only when they exist.
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# The parts of /etc programs read to start (linker, users, locale, certificates); the
# rest of /etc (and so any credentials kept there) stays out of sight.
_ETC = ("alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "passwd", "group",
        "nsswitch.conf", "localtime", "ssl", "ca-certificates", "mime.types", "magic",
        "gitconfig")
_ETC_NETWORK = ("resolv.conf", "hosts", "host.conf", "gai.conf")


@dataclass(frozen=True, slots=True)
class Isolation:
    """What `detect_bwrap` found: the executable and its version, or why not."""

    path: str | None
    version: str | None = None
    problem: str | None = None

    @property
    def available(self) -> bool:
        return self.path is not None and self.problem is None

    def describe(self) -> str:
        if self.available:
            return f"bubblewrap {self.version or '(unknown version)'} at {self.path}"
        return f"none ({self.problem})"


@lru_cache(maxsize=4)
def detect_bwrap(locations: tuple[str, ...] = BWRAP_LOCATIONS) -> Isolation:
    """Find bubblewrap and check that it can build a sandbox here. Blocking (it runs
    `bwrap` twice); the answer is cached for the process."""
    path = next((p for p in locations if os.access(p, os.X_OK)), None)
    if path is None:
        return Isolation(None, problem="bubblewrap not found; install the 'bubblewrap' "
                                       "package")
    try:
        version = subprocess.run([path, "--version"], capture_output=True, text=True,
                                 timeout=10, check=False).stdout.strip().split()[-1:]
        probe = subprocess.run(
            [path, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
             "--unshare-all", "--die-with-parent", "--cap-drop", "ALL", "true"],
            capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return Isolation(path, problem=f"bubblewrap at {path} failed to start: {exc}")
    if probe.returncode != 0:
        detail = probe.stderr.strip().splitlines()[-1:] or [f"status {probe.returncode}"]
        return Isolation(path, problem=f"bubblewrap at {path} cannot create namespaces "
                                       f"here: {detail[0]}")
    return Isolation(path, version=version[0] if version else None)


def bwrap_argv(bwrap: str, command: list[str], *, cwd: str, readable: Iterable[Path],
               writable: Iterable[Path], network: bool) -> list[str]:
    """The bwrap command line that runs `command` (argv[0] absolute) in `cwd`."""
    # As root, bwrap would leave the child its capabilities (mount, mknod...): drop all.
    args = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if network:
        args.append("--share-net")
    for d in _SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    for name in (*_ETC, *(_ETC_NETWORK if network else ())):
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    # Parents before children, so a read-only path inside a writable one stays read-only.
    mounts = sorted({(p, False) for p in readable} | {(p, True) for p in writable},
                    key=lambda m: (len(m[0].parts), m[1]))
    for path, rw in mounts:
        args += ["--bind-try" if rw else "--ro-bind-try", str(path), str(path)]
    args += ["--chdir", cwd, "--", *command]
    return args


def child_env(home: str, extra: Iterable[str], source: Mapping[str, str]) -> dict[str, str]:
    """The whole environment the child gets: PATH, HOME, LANG, TMPDIR, and the
    `sandbox.env` entries (`NAME` copied from `source` if set there, `NAME=value` as
    written). Nothing else of the parent's environment (keys, tokens) gets through."""
    env = {"PATH": SAFE_PATH, "HOME": home, "LANG": "C.UTF-8", "TMPDIR": "/tmp"}
    for entry in extra:
        name, sep, value = entry.partition("=")
        if sep:
            env[name] = value
        elif name in source:
            env[name] = source[name]
    return env
