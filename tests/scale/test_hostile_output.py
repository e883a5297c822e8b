"""Hostile inputs and outputs at the batch's two ends: an input id is whatever the inputs
file says (escape sequences, line breaks, 100 KB), and reaches the terminal escaped and
cut, while the results file keeps it whole; an output a float JSON can't spell (NaN,
Infinity) still makes a strict JSON line; a batch of many failures lists a bounded few."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scale_helpers import EchoFactory, read_lines

from agentloom.scale import BatchInput, BatchItemResult, JsonProgress, PlainProgress, batch

HOSTILE = "a\x1b]0;PWNED\x07\x1b[2J\x1b[31mred\nforged: line\u202e"
LONG = "L" * 100_000


def strict(line: str) -> Any:
    def refuse(word: str) -> Any:
        raise ValueError(f"not JSON: {word}")

    return json.loads(line, parse_constant=refuse)


async def test_hostile_ids_reach_the_terminal_escaped_and_cut(tmp_path: Path) -> None:
    inputs = tmp_path / "in.jsonl"
    inputs.write_text("\n".join(json.dumps({"id": i}) for i in (HOSTILE, LONG, LONG)) + "\n",
                      encoding="utf-8")
    out = io.StringIO()
    b = batch(None, inputs, runner_factory=EchoFactory(fail_ids=(HOSTILE, LONG)),
              output=tmp_path / "out.jsonl", progress=PlainProgress(out))
    await b.results()
    text = out.getvalue()
    assert "\x1b" not in text and "\u202e" not in text
    assert "\nforged: line" not in text  # no line of its own
    assert "a\\x1b]0;PWNED\\x07\\x1b[2J" in text  # shown, as escapes
    assert max(len(line) for line in text.splitlines()) < 2_000
    assert "[+99800 chars]" in text  # the long id, cut with a note
    ids = [r["id"] for r in read_lines(tmp_path / "out.jsonl")]
    assert HOSTILE in ids and LONG in ids  # the file keeps them whole


async def test_many_failures_list_a_bounded_few_on_the_terminal(tmp_path: Path) -> None:
    inputs = tmp_path / "in.jsonl"
    inputs.write_text("\n".join(json.dumps({"id": f"x{i}"}) for i in range(1000)) + "\n",
                      encoding="utf-8")
    fail = tuple(f"x{i}" for i in range(1000))
    out = io.StringIO()
    b = batch(None, inputs, runner_factory=EchoFactory(fail_ids=fail),
              output=tmp_path / "out.jsonl", progress=PlainProgress(out))
    await b.results()
    text = out.getvalue()
    assert "1000 input(s) did not succeed:" in text
    listed = [line for line in text.splitlines() if line.startswith("  x")]
    assert len(listed) == 100
    assert "... and 900 more (every one is in the output file)" in text
    assert len(b.stats.failures) == 1000  # --json's summary and the file have them all


@dataclass(frozen=True)
class NanFactory:
    def open(self) -> Any:
        return _open_nan()


@asynccontextmanager
async def _open_nan() -> AsyncIterator[Any]:
    async def run_one(inp: BatchInput) -> BatchItemResult:
        return BatchItemResult(id=inp.id, status="success", source=inp.source,
                               outputs={"score": float("nan"),
                                        "range": [float("-inf"), 1.5, float("inf")],
                                        "text": "NaN"},
                               tokens=1, cost_usd=0.0)

    yield run_one


async def test_a_nan_output_still_makes_a_strict_json_line(tmp_path: Path) -> None:
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"id": "a"}\n', encoding="utf-8")
    events = io.StringIO()
    b = batch(None, inputs, runner_factory=NanFactory(), output=tmp_path / "out.jsonl",
              progress=JsonProgress(events))
    await b.results()
    (line,) = (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()
    assert strict(line)["outputs"] == {"score": None, "range": [None, 1.5, None],
                                       "text": "NaN"}
    result = [strict(e) for e in events.getvalue().splitlines()][1]
    assert result["event"] == "result" and result["outputs"]["score"] is None
