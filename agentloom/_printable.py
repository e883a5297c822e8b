"""Text from outside as one safe piece of a terminal line.

A model chooses the tool names it calls, a batch's inputs carry their own ids, a store
holds run ids somebody else wrote: printed as they are, an escape sequence in one is
obeyed by the terminal (a window title, a clipboard write, a cleared screen, the cursor
moved over the rows above), a newline forges a line of its own, and a 10 KB name floods
the console. `printable` shows every character that is not printable (controls, ESC, C1,
line breaks, bidi and other format characters) as its Python escape, and cuts the text
with a note of how much was left out.
"""

from __future__ import annotations


def printable(text: str, limit: int | None = None) -> str:
    """`text` as it may be printed: escapes for what a terminal would act on, and at most
    `limit` characters of it (None: all), then `...[+N chars]`."""
    cut = text if limit is None or len(text) <= limit else text[:limit]
    rest = len(text) - len(cut)
    if not cut.isprintable():
        cut = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in cut)
    return f"{cut}...[+{rest} chars]" if rest else cut
