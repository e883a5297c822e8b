"""Names from outside (a tool name the model chose) as one safe line of a console.

A model names the tools it calls, and `ConsoleObserver` prints the name on a terminal:
an escape sequence in it would be obeyed (a window title, a clipboard write, a cleared
screen, a report typed back into the shell), a newline would forge a line of its own, and
a 10 KB name would flood the console once per call. Here every character that is not
printable (controls, C1, bidi and other format characters, line breaks) is shown as its
escape, and the name is cut to `MAX_SHOWN` characters with a note.
"""

from __future__ import annotations

MAX_SHOWN = 100
"""Characters of a name shown; a provider's tool names hold at most 64."""


def printable(name: str) -> str:
    """`name` as it may be printed: escapes for what a terminal would act on, cut."""
    if len(name) <= MAX_SHOWN and name.isprintable():
        return name
    head = name[:MAX_SHOWN]
    shown = "".join(ch if ch.isprintable() else _escape(ch) for ch in head)
    rest = len(name) - len(head)
    return f"{shown}...[+{rest} chars]" if rest else shown


def _escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
