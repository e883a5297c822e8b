"""Running a command with its output on a terminal (a pty), for tests of what a person at
a terminal sees (colour, control characters)."""

from __future__ import annotations

import os
import pty
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path


def run_on_a_pty(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
                 stdout: bool = True) -> tuple[int, bytes]:
    """The exit code, and what the command wrote to stderr (and stdout, with `stdout`)
    with the pty as that stream; the other one goes nowhere."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(list(argv), cwd=cwd, env=dict(env), timeout=60, check=False,
                              stdout=follower if stdout else subprocess.DEVNULL,
                              stderr=follower)
        os.close(follower)
        follower = -1
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the follower side closed: all was read
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
    return proc.returncode, b"".join(chunks)
