"""The summary's per-tool counts against a hostile model: the model names the tools it
calls, so 2,000 made-up 1,000-character names over 16 turns made a 4 MB summary of 2,002
counts (in `--json`, a results line, every observer's summary), and a tool named after a
redacted state value put that secret in `agentloom run --json` (the run's redactor walks
values; tool names are the keys of `tool_calls` and `tool_errors`).

Now a name the run's tools declare is counted by its own name; any other is cut at 128
characters and, past 128 names, summed under `[other]`; a workflow run's redactor
redacts the names (a secret cut in half by the 128 characters included)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from loop_doubles import Tools, echo

from agentloom.loop import LoopOptions, NullObserver, run_loop
from agentloom.loop.collector import SummaryRecord
from agentloom.loop.status import SummaryOptions
from agentloom.messages import Message, ModelRequest
from agentloom.redact import Redactor
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer
from agentloom.testing.scripted import ScriptedModel, tool_call

ROOT = Path(__file__).resolve().parents[2]
SECRET = "tok-Very-Secret-9876"
MAX_NAME = MAX_NAMES = 128
"""Characters of a made-up name kept, and made-up names counted by name
(`collector.MAX_NAME`, `MAX_NAMES`)."""
OTHER = "[other]"
TURNS, PER_TURN = 16, 125
"""2,000 made-up names: 125 a turn, under the 128 calls a turn runs, so all are counted."""


def req() -> ModelRequest:
    return ModelRequest(model="m", messages=(Message.user("hi"),))


def made_up(n: int) -> str:
    return f"t{n:05d}-" + "x" * 993  # 1,000 characters, each one distinct


def flood() -> list[object]:
    """16 turns of 125 made-up names each; the declared tool `echo` only in the last."""
    replies: list[object] = []
    for turn in range(TURNS):
        calls = [tool_call(made_up(turn * PER_TURN + i), id=f"c{turn}_{i}")
                 for i in range(PER_TURN)]
        if turn == TURNS - 1:
            calls.append(tool_call("echo", id="echo"))
        replies.append(calls)
    replies.append("done")
    return replies


async def test_two_thousand_made_up_names_keep_the_counts_bounded() -> None:
    result = await run_loop(ScriptedModel(flood()), req(), tools=Tools(echo=echo),
                            options=LoopOptions(max_iterations=TURNS + 1,
                                                summary_options=SummaryOptions(timeline=True)))
    s = result.summary
    assert s.status == "completed"
    # Every call is counted, under at most 128 names, the declared one and `[other]`.
    assert sum(s.tool_calls.values()) == TURNS * PER_TURN + 1
    assert len(s.tool_calls) == MAX_NAMES + 2
    assert s.tool_calls[OTHER] == TURNS * PER_TURN - MAX_NAMES
    # The declared tool keeps its own name though 128 made-up ones came first.
    assert s.tool_calls["echo"] == 1 and "echo" not in s.tool_errors
    # The made-up ones are unknown tools: every one an error, under the same names.
    assert set(s.tool_errors) == set(s.tool_calls) - {"echo"}
    assert sum(s.tool_errors.values()) == TURNS * PER_TURN
    assert max(len(name) for name in s.tool_calls) <= MAX_NAME
    first = made_up(0)
    assert [n for n in s.tool_calls if n.startswith(first[:100])] == [
        first[:109] + "...[891 more chars]"]
    # The timeline names each call as the counts do.
    assert s.timeline is not None
    names = [n for t in s.timeline for n in (*t.tools, *t.tool_errors)]
    assert len(names) == 2 * TURNS * PER_TURN + 1
    assert set(names) <= set(s.tool_calls)
    # One name a call, as before (bounded by the turns and the 128 calls each runs):
    # the names are what is bounded now. The counts were 4 MB.
    assert len(s.model_dump_json(exclude={"timeline"})) < 40_000


async def test_a_normal_runs_counts_are_as_before() -> None:
    # A guard beside the fix (it passes before and after): declared names, short
    # made-up ones and their errors are counted as they always were.
    model = ScriptedModel([[tool_call("echo", id="a"), tool_call("echo", id="b"),
                            tool_call("nope", id="c")], [tool_call("echo", id="d")], "done"])
    result = await run_loop(model, req(), tools=Tools(echo=echo),
                            options=LoopOptions(summary_options=SummaryOptions(timeline=True)))
    s = result.summary
    assert s.tool_calls == {"echo": 3, "nope": 1} and s.tool_errors == {"nope": 1}
    assert s.timeline is not None
    assert [(t.tools, t.tool_errors) for t in s.timeline] == [
        (("echo", "echo", "nope"), ("nope",)), (("echo",), ()), ((), ())]


async def test_the_loops_own_unknown_tool_reply_cuts_the_name() -> None:
    # Without tools the loop answers a call itself; it repeated the whole name.
    model = ScriptedModel([[tool_call("y" * 10_000, id="a")], "done"])
    result = await run_loop(model, req(), tools=None)
    replies = [p for m in result.new_messages for p in m.parts
               if getattr(p, "call_id", None) == "a" and hasattr(p, "is_error")]
    assert len(replies) == 1 and replies[0].is_error
    assert len(replies[0].content) < 200
    assert result.summary.tool_calls == {"y" * 108 + "...[9892 more chars]": 1}


class Reader(NullObserver):
    """Builds the summary at the run's end, as a trace observer does."""

    def on_conversation_end(self, summary: object) -> None:
        self.summary = summary


async def test_a_summary_redacts_its_names_built_or_not() -> None:
    redactor = Redactor(secrets=[SECRET])
    straddling = "x" * 100 + SECRET + "y" * 30  # cut 10 characters into the secret
    for reader in (None, Reader()):
        kept: list[SummaryRecord] = []
        model = ScriptedModel([[tool_call(SECRET, id="a"), tool_call(straddling, id="b"),
                                tool_call("echo", id="c")], "done"])
        await run_loop(model, req(), tools=Tools(echo=echo), options=LoopOptions(
            observer=reader, on_summary=kept.append,
            summary_options=SummaryOptions(timeline=True)))
        (record,) = kept
        record.redact_names(redactor)
        text = record.summary.model_dump_json()
        assert SECRET[:8] not in text, reader
        assert record.summary.tool_calls == {
            "[REDACTED]": 1, "x" * 100 + "...[50 more chars]": 1, "echo": 1}


def _agentloom(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_", "AGENTLOOM_"))}
    return subprocess.run([sys.executable, "-m", "agentloom.cli", *args], capture_output=True,
                          text=True, env={**base, **env}, cwd=ROOT, timeout=120)


TOOLS = '''\
from agentloom import tool


@tool
def lookup(city: str) -> str:
    """Look a city up.

    Args:
        city: The city.
    """
    return f"{city}: sunny"
'''


def test_a_tool_named_after_a_redacted_state_value_stays_out_of_json_and_checkpoints(
        tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS, encoding="utf-8")
    flow = tmp_path / "flow.yaml"
    flow.write_text("name: h\nconfig: {model: gpt-4o-mini}\n"
                    "state_schema: {token: {redact: true}}\n"
                    "steps:\n  - {id: t, type: llm_call, prompt: \"weather? {state.token}\", "
                    "tools: [lookup], max_tool_iterations: 20}\n", encoding="utf-8")
    replies = []
    for turn in range(TURNS):
        calls: list[tuple[str, dict[str, object] | str]] = [
            (made_up(turn * PER_TURN + i), {}) for i in range(PER_TURN)]
        if turn == 0:
            calls += [(SECRET, {}), ("x" * 100 + SECRET + "y" * 30, {})]
        calls.append(("lookup", {"city": "Oslo"}))
        replies.append(FakeReply(tool_calls=calls))
    replies.append(FakeReply(text="done"))
    server = FakeOpenAIServer()
    server.start_in_thread()
    try:
        server.script(*replies)
        db = tmp_path / "runs.db"
        out = _agentloom("run", str(flow), "--json", "-s", f"token={SECRET}",
                         "--tools", str(tmp_path / "tools.py"), "--store", f"sqlite:///{db}",
                         env={"OPENAI_API_KEY": "test-key",
                              "OPENAI_BASE_URL": server.openai_base_url})
    finally:
        server.stop_thread()
    assert out.returncode == 0, out.stderr[-2000:]
    assert SECRET[:8] not in out.stdout and SECRET[:8] not in out.stderr
    summary = json.loads(out.stdout)["steps"]["t"]["summary"]
    assert summary["tool_calls"]["lookup"] == TURNS
    assert summary["tool_calls"]["[REDACTED]"] == 1
    assert len(summary["tool_calls"]) <= MAX_NAMES + 2
    assert len(json.dumps(summary)) < 60_000
    # The checkpoint (whole and deltas) holds neither the secret nor a summary of it.
    con = sqlite3.connect(db)
    try:
        for table in ("checkpoints", "checkpoint_deltas", "tool_calls"):
            rows = con.execute(f"SELECT * FROM {table}").fetchall()
            assert rows or table == "checkpoint_deltas"
            assert SECRET[:8] not in repr(rows), table
        # The tool-call journal keeps each name cut as the summary cuts it (it kept
        # 2,000 names of 1,000 characters, the secret among them).
        names = [n for (n,) in con.execute("SELECT name FROM tool_calls")]
        assert names and max(map(len, names)) <= 128
    finally:
        con.close()
