"""File-access and isolation rules a mutation run found untested: no descriptor left open
by the walk, the refusal of a directory or a FIFO by name, the daemon pool's idle
accounting, and bubblewrap's detection (version, a failing probe) and command line."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from agentloom.tools._isolation import (
    SAFE_PATH,
    Isolation,
    bwrap_argv,
    child_env,
    detect_bwrap,
)
from agentloom.tools._safefs import (
    NotRegularFile,
    OutsideRoots,
    UnsafePath,
    _DaemonPool,
    read_file,
    root_of,
    write_file,
)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_reading_and_writing_deep_paths_leaves_no_descriptor_open(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "c"
    write_file(deep / "f.txt", [tmp_path], b"x", append=False)
    before = open_fds()
    for _ in range(20):
        assert read_file(deep / "f.txt", [tmp_path], 10) == b"x"
        write_file(deep / "g.txt", [tmp_path], b"y", append=True)
    assert open_fds() == before


def test_a_refused_walk_leaves_no_descriptor_open(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "link").symlink_to(tmp_path)
    before = open_fds()
    for _ in range(20):
        with pytest.raises(UnsafePath):
            read_file(tmp_path / "a" / "link" / "f", [tmp_path], 10)
    assert open_fds() == before


def test_a_directory_and_a_fifo_are_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(NotRegularFile, match="a directory") as info:
        read_file(tmp_path / "d", [tmp_path], 10)
    assert info.value.errno == 21  # EISDIR
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(NotRegularFile, match="not a regular file") as info:
        read_file(tmp_path / "fifo", [tmp_path], 10)
    assert info.value.errno == 22  # EINVAL
    assert stat.S_ISFIFO(os.stat(tmp_path / "fifo").st_mode)


def test_the_longest_root_wins_in_any_order(tmp_path: Path) -> None:
    inner = tmp_path / "in"
    assert root_of(inner / "x", [tmp_path, inner]) == inner
    assert root_of(inner / "x", [inner, tmp_path]) == inner
    assert root_of(inner, [tmp_path, inner]) == inner
    with pytest.raises(OutsideRoots):
        root_of(Path("/elsewhere"), [tmp_path])


def test_the_pool_starts_a_worker_when_the_idle_one_is_busy() -> None:
    pool = _DaemonPool()
    first = threading.Event()
    pool.submit(first.set)
    assert first.wait(10)
    release = threading.Event()
    blocked = threading.Event()

    def block() -> None:
        blocked.set()
        release.wait(30)

    pool.submit(block)  # takes the idle worker
    assert blocked.wait(10)
    ran = threading.Event()
    pool.submit(ran.set)  # none idle now: a new worker must start
    try:
        assert ran.wait(10)
    finally:
        release.set()


def test_pool_workers_are_daemon_threads() -> None:
    pool = _DaemonPool()
    seen: list[bool] = []
    done = threading.Event()

    def job() -> None:
        seen.append(threading.current_thread().daemon)
        done.set()

    pool.submit(job)
    assert done.wait(10)
    assert seen == [True]


# --- bubblewrap detection ----------------------------------------------------------------


def fake_bwrap(tmp_path: Path, version: str, probe_status: int, stderr: str = "") -> str:
    script = tmp_path / "bwrap"
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = --version ]; then printf "%b" "{version}"; exit 0; fi\n'
        f'printf "%b" "{stderr}" >&2\n'
        f"exit {probe_status}\n"
    )
    script.chmod(0o755)
    return str(script)


def test_detection_reads_the_version_as_text(tmp_path: Path) -> None:
    found = detect_bwrap((fake_bwrap(tmp_path, "bubblewrap 9.8.7\\n", 0),))
    assert found == Isolation(str(tmp_path / "bwrap"), version="9.8.7")
    assert found.available
    assert found.describe() == f"bubblewrap 9.8.7 at {tmp_path / 'bwrap'}"


def test_detection_without_a_version_still_works(tmp_path: Path) -> None:
    found = detect_bwrap((fake_bwrap(tmp_path, "", 0),))
    assert found.available and found.version is None
    assert found.describe().startswith("bubblewrap (unknown version) at ")


def test_a_failing_probe_names_its_last_error_line(tmp_path: Path) -> None:
    path = fake_bwrap(tmp_path, "bubblewrap 1", 1, "warming up\\\\nno user namespaces")
    found = detect_bwrap((path,))
    assert not found.available
    assert found.problem == f"bubblewrap at {path} cannot create namespaces here: " \
                            "no user namespaces"
    assert found.describe() == f"none ({found.problem})"


def test_a_silent_failing_probe_names_its_status(tmp_path: Path) -> None:
    path = fake_bwrap(tmp_path, "bubblewrap 1", 3)
    assert detect_bwrap((path,)).problem == (
        f"bubblewrap at {path} cannot create namespaces here: status 3")


def test_the_first_executable_location_is_used(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope")
    plain = tmp_path / "not-executable"
    plain.write_text("")
    found = detect_bwrap((missing, str(plain), fake_bwrap(tmp_path, "b 2", 0)))
    assert found.path == str(tmp_path / "bwrap")
    assert detect_bwrap((missing,)).problem == (
        "bubblewrap not found; install the 'bubblewrap' package")


def test_available_needs_a_path_and_no_problem() -> None:
    assert Isolation("/x").available
    assert not Isolation("/x", problem="p").available
    assert not Isolation(None).available


def test_the_command_line_shares_the_network_only_when_allowed(tmp_path: Path) -> None:
    off = bwrap_argv("/b", ["/bin/true"], cwd="/w", readable=[], writable=[], network=False)
    on = bwrap_argv("/b", ["/bin/true"], cwd="/w", readable=[], writable=[], network=True)
    assert "--share-net" not in off and "--share-net" in on
    assert "/etc/resolv.conf" not in off and "/etc/resolv.conf" in on
    assert "/etc/passwd" in off
    assert off[:6] == ["/b", "--unshare-all", "--die-with-parent", "--new-session",
                       "--cap-drop", "ALL"]
    assert off[-4:] == ["--chdir", "/w", "--", "/bin/true"]


def test_mounts_go_parents_first_and_read_only_before_writable_at_one_depth() -> None:
    ro, rw, inner = Path("/data/ro"), Path("/data/rw"), Path("/data/rw/sub/ro")
    argv = bwrap_argv("/b", ["/bin/true"], cwd="/w", readable=[inner, ro], writable=[rw],
                      network=False)
    binds = [(argv[i], argv[i + 1]) for i, a in enumerate(argv)
             if a in ("--bind-try", "--ro-bind-try") and argv[i + 1].startswith("/data")]
    assert binds == [("--ro-bind-try", "/data/ro"), ("--bind-try", "/data/rw"),
                     ("--ro-bind-try", "/data/rw/sub/ro")]


def test_the_child_environment_is_built_from_scratch() -> None:
    env = child_env("/home/x", ["KEEP", "SET=1", "ABSENT", "EMPTY="], {"KEEP": "k",
                                                                   "SECRET": "s"})
    assert env == {"PATH": SAFE_PATH, "HOME": "/home/x", "LANG": "C.UTF-8", "TMPDIR": "/tmp",
                   "KEEP": "k", "SET": "1", "EMPTY": ""}
