"""A reply (or any text from outside) printed on a terminal is shown, never obeyed: no
window title, clipboard write, screen clear or report typed back into the shell. A pipe
gets the bytes as they are (`agentloom/cli/_terminal.py`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agentloom.cli._terminal import neutralize
from tests.pty_run import run_on_a_pty

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = ("Hi \x1b]0;PWNED\x07 \x1b[2J\x1b[6n \x1b]52;c;ZWNobyBwd25lZA==\x07 \x9b31m "
           "\x1b[31mred\x1b[0m end")


def test_only_colours_erases_and_cursor_moves_pass() -> None:
    assert neutralize(HOSTILE) == (
        "Hi \u241b]0;PWNED\u2407 \u241b[2J\u241b[6n \u241b]52;c;ZWNobyBwd25lZA==\u2407 "
        "\\x9b31m \x1b[31mred\x1b[0m end")
    kept = "\x1b[1;32mok\x1b[0m\x1b[2K\x1b[1A\x1b[?25l\x1b[?25h\r\ttab\nline"
    assert neutralize(kept) == kept
    assert neutralize("a\x00b\x08c\x7fd\x1b") == "a\u2400b\u2408c\u2421d\u241b"


def _run(tmp_path: Path, *, terminal: bool) -> bytes:
    mock = tmp_path / "mock.json"
    mock.write_text(json.dumps({"greet": HOSTILE}), encoding="utf-8")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "ANTHROPIC_", "GEMINI_", "NO_COLOR", "AGENTLOOM_"))}
    env.update(TERM="xterm", HOME=str(tmp_path))
    argv = [sys.executable, "-m", "agentloom.cli", "run", str(ROOT / "examples/hello.yaml"),
            "--mock-responses", str(mock), "--no-checkpoint"]
    if not terminal:
        done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout
    code, shown = run_on_a_pty(argv, cwd=tmp_path, env=env)
    assert code == 0
    return shown


def test_a_reply_on_a_terminal_is_shown_not_obeyed(tmp_path: Path) -> None:
    shown = _run(tmp_path, terminal=True).decode()
    assert "\u241b]52;c;ZWNobyBwd25lZA==\u2407" in shown  # the clipboard write, as text
    assert "\u241b]0;PWNED" in shown and "\u241b[6n" in shown and "\u241b[2J" in shown
    assert "\x1b]" not in shown and "\x07" not in shown and "\x9b" not in shown
    assert "\x1b[32msuccess" in shown  # the command's own colours still show


def test_a_reply_through_a_pipe_keeps_its_bytes(tmp_path: Path) -> None:
    assert HOSTILE.encode() in _run(tmp_path, terminal=False)
