"""Exit codes and the usage error every command shares (kept apart from the parser so
commands import them without importing the command line's entry point)."""

from __future__ import annotations

import argparse
import re
import sys

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_PAUSED = 3
"""A run that stopped to wait for a person (`paused`, `needs_decision`): not a success a
CI script should take for one, not a failure either."""
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """A bad command line: reported as one line, exit code 2."""


class RunRefused(Exception):
    """A run that can't start as asked (exit code 1): `message` says why, `hint` what
    to do instead."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        from agentloom.cli._style import error_line

        message = " ".join(message.split())
        found = _CHOICE.search(message)
        if found is not None:  # a misspelt command or choice: the closest one, if any
            choices = [c.strip(" '") for c in found.group(2).split(",")]
            import difflib  # on an error only (its import is ~2 M instructions)
            close = difflib.get_close_matches(found.group(1), choices, n=1)
            if close:
                message += f"; did you mean {close[0]!r}?"
        sys.stderr.write(error_line(sys.stderr, message, prog=self.prog))
        raise SystemExit(EXIT_USAGE)
