"""Code blocks of README.md and docs/, with the directives that say how each is tested.

A directive is an HTML comment on the line(s) just above a fence, invisible where the
Markdown is rendered:

    <!-- test: skip an illustration: it needs a real API key -->
    <!-- test: file triage.yaml -->         write the block to this file of the page's folder
                                            (a first line `# triage.yaml` is its title)
    <!-- test: replies We are on it. | call get_weather {"city": "Paris"} -->
                                            what the fake model answers next, in order
                                            (`call NAME ARGS` is a tool call, `error 400` an
                                            HTTP error)
    <!-- test: env local -->                no provider keys: the embedded model answers
    <!-- test: invalid -->                  (on a workflow) a bad file: it must fail to load
    <!-- test: output -->                   (on a text block) what the python block above printed

Without a directive: `yaml` with `steps:` must load as a workflow (and is written to the
file the prose names, if any); other `yaml` must parse; `python` runs; `console` runs
each `$ command` and compares what it printed with the lines below it; `bash` runs its
`agentloom ...` lines. Anything else (`text`, `json`, ...) is shown output or data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_FENCE = re.compile(r"^```(\w*)\s*$")
_DIRECTIVE = re.compile(r"^<!--\s*test:\s*(\w+)\s*(.*?)\s*-->\s*$")


@dataclass(slots=True)
class Block:
    path: Path
    line: int
    lang: str
    text: str
    directives: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.path.name}:{self.line}"


def blocks_of(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        directives: dict[str, str] = {}
        j = i - 1
        while j >= 0 and (found := _DIRECTIVE.match(lines[j])):
            directives.setdefault(found.group(1), found.group(2))
            j -= 1
        end = i + 1
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        out.append(Block(path, i + 1, match.group(1), "\n".join(lines[i + 1:end]) + "\n",
                         directives))
        i = end + 1
    return out


def console_steps(text: str) -> list[tuple[str, list[str]]]:
    """`$ command` lines and the lines each printed."""
    steps: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
    return [(cmd, _trim(out)) for cmd, out in steps]


def _trim(lines: list[str]) -> list[str]:
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


_VOLATILE = [
    (re.compile(r"\b\d+(\.\d+)?(ms|s)\b"), "<T>"),  # durations
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d+)?\b"), "<DATE>"),
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:<PORT>"),
    (re.compile(r"\b\d+(\.\d+)? runs/s\b"), "<N> runs/s"),
    (re.compile(r" {2,}"), " "),  # table columns move with the widths of what they hold
]


def normalize(line: str) -> str:
    line = line.rstrip()
    for pattern, repl in _VOLATILE:
        line = pattern.sub(repl, line)
    return line


def matches(expected: list[str], actual: list[str]) -> bool:
    """Line by line after `normalize`; `...` inside a line matches any text, and a line
    that is only `...` matches any number of lines."""
    exp = [normalize(x) for x in expected]
    act = [normalize(x) for x in actual if x.strip() or True]
    return _match(exp, act)


def _match(exp: list[str], act: list[str]) -> bool:
    if not exp:
        return not act
    head = exp[0]
    if head.strip() == "...":
        return any(_match(exp[1:], act[k:]) for k in range(len(act) + 1))
    if not act:
        return False
    pattern = "^" + ".*".join(re.escape(p) for p in head.split("...")) + "$"
    return re.match(pattern, act[0]) is not None and _match(exp[1:], act[1:])
