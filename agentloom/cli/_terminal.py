"""What reaches a terminal: text from outside shown, never obeyed.

A model's reply, a server's error body, a workflow file's line and a batch input are all
printed by the command line, and each may hold escape sequences a terminal acts on:
retitle the window (`ESC ] 0;`), set the clipboard (`ESC ] 52;`, a command planted for
the next paste), clear the screen, or ask the terminal to type a report back into the
shell (`ESC [ 6n`). On a terminal, `TerminalGuard` lets through only what the command's
own output uses, colours (`ESC [ ... m`) and the cursor moves, line erases and hidden
cursor of a live progress display, and shows every other control character as its control picture
(`␛`, `␇`): the text stays readable, the terminal does nothing. A pipe or a file gets the
bytes as they are (`agentloom run flow.yaml | cat` for a raw reply).
"""

from __future__ import annotations

import re
from typing import IO, Any

_KEPT = r"\x1b\[(?:[0-9;]{0,32}[mKABCDG]|\?25[hl])"
"""Colours and styles, line erases, cursor moves within the screen, the cursor hidden and
shown again (what rich's live progress writes)."""
_CONTROL = re.compile(rf"{_KEPT}|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x80-\x9f]")
"""Any other C0 control but tab, newline and carriage return; DEL; the C1 controls."""
_PICTURES = {**{chr(c): chr(0x2400 + c) for c in range(32)}, "\x7f": "\u2421",
             **{chr(c): f"\\x{c:02x}" for c in range(0x80, 0xA0)}}


def neutralize(text: str) -> str:
    """`text` with every control sequence but the kept ones shown, not acted on."""
    return _CONTROL.sub(_shown, text)


def _shown(match: re.Match[str]) -> str:
    found = match.group(0)
    return found if len(found) > 1 else _PICTURES[found]


class TerminalGuard:
    """A text stream that writes to a terminal through `neutralize`."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(neutralize(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding, ...
        return getattr(self._stream, name)


def guarded(stream: Any) -> Any:
    """`stream` wrapped in a TerminalGuard if it is a terminal, else itself."""
    isatty = getattr(stream, "isatty", None)
    if isinstance(stream, TerminalGuard) or not (isatty is not None and isatty()):
        return stream
    return TerminalGuard(stream)
