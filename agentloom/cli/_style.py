"""Colour on the terminal, and only there.

`--color auto` (the default) colours a stream that is a terminal, unless `NO_COLOR` is
set and not empty (no-color.org) or `TERM=dumb`; `--color always` and `never` decide for
every stream. Lines are styled with rich, imported only when colour is on, so a pipe or a
CI log gets plain text and a fast start.
"""

from __future__ import annotations

import os
from typing import IO

COLOR_CHOICES = ("auto", "always", "never")
_choice = "auto"

_STATUS_STYLES = {"success": "green", "failed": "red", "paused": "yellow",
                  "needs_decision": "yellow", "deadline_exceeded": "red",
                  "budget_exceeded": "red", "cancelled": "yellow", "interrupted": "yellow"}


def set_color(choice: str) -> None:
    global _choice
    _choice = choice


def color_on(stream: IO[str]) -> bool:
    if _choice != "auto":
        return _choice == "always"
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


def styled(stream: IO[str], *pieces: str | tuple[str, str]) -> str:
    """The pieces (text, or (text, rich style)) as one string for `stream`: with ANSI
    colours when colour is on there, else plain."""
    if not color_on(stream):
        return "".join(p if isinstance(p, str) else p[0] for p in pieces)
    from rich.console import Console
    from rich.text import Text

    console = Console(file=stream, force_terminal=True, color_system="standard",
                      highlight=False, soft_wrap=True, width=10_000)
    text = Text.assemble(*pieces)
    with console.capture() as capture:
        console.print(text, end="")
    return capture.get()


def status_style(status: str) -> str:
    return _STATUS_STYLES.get(status, "bold")


def error_line(stream: IO[str], message: str, *, prog: str = "agentloom") -> str:
    """`agentloom: error: message`, `error` in red on a terminal."""
    return styled(stream, f"{prog}: ", ("error", "bold red"), f": {message}") + "\n"


def hint_line(stream: IO[str], message: str) -> str:
    return styled(stream, ("hint", "bold cyan"), f": {message}") + "\n"


def extract_color(argv: list[str]) -> tuple[list[str], str | None]:
    """`--color X` / `--color=X` wherever it is on the line (before a `--`), removed from
    it: the flag belongs to every command. Returns the rest and the value (None: not
    given); a bad value is the caller's usage error."""
    out: list[str] = []
    value: str | None = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out.extend(argv[i:])
            break
        if arg == "--color":
            value = argv[i + 1] if i + 1 < len(argv) else ""
            i += 2
            continue
        if arg.startswith("--color="):
            value = arg.partition("=")[2]
            i += 1
            continue
        out.append(arg)
        i += 1
    return out, value
