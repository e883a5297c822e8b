"""Side by side with spec 002's library itself: agentloop 0.6.1 (`based-models-agentloop`
from the registry, in its own Python 3.12 venv, made once and reused) and our `Agent` run
the same scenarios against one loopback fake OpenAI server with the same scripted replies,
and their summaries are compared field by field. The only differences allowed are the
documented ones (`DOCUMENTED` here, and docs/agents.md, "Differences from spec 002's
library"); a documented difference that stops happening fails too, so the list stays true.

The scenario driver that runs inside the 3.12 venv is `agentloop_driver.py` beside this
file; it imports nothing of ours.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentloom import Agent, NullObserver, SummaryOptions
from agentloom.testing._server import FakeError, FakeReply, Scripted
from agentloom.testing.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.differential

AGENTLOOP_VERSION = "0.6.1"
DRIVER = Path(__file__).with_name("agentloop_driver.py")


def python312() -> str:
    """A Python 3.12 interpreter (agentloop needs >= 3.12; ours runs on 3.11).

    Each candidate is run once: a pyenv shim is on PATH as python3.12 even when pyenv's
    global version is another one, and then it exits 127."""
    candidates = [os.environ.get("AGENTLOOM_PYTHON312"), shutil.which("python3.12"),
                  *sorted(glob.glob(str(Path.home() / ".pyenv/versions/3.12*/bin/python")))]
    for found in filter(None, candidates):
        probe = subprocess.run([found, "-c", "import sys; print(sys.version_info >= (3, 12))"],
                               capture_output=True, text=True, timeout=60)
        if probe.returncode == 0 and probe.stdout.strip() == "True":
            return found
    raise RuntimeError("the agentloop differential tests need a Python 3.12 "
                       "interpreter: set AGENTLOOM_PYTHON312 or put python3.12 on PATH")


def agentloop_venv() -> Path:
    """The venv holding agentloop; created and installed on first use, then reused."""
    root = Path(os.environ.get("AGENTLOOM_AGENTLOOP_VENV") or Path.home() / ".cache" /
                "agentloom-tests" / f"agentloop-{AGENTLOOP_VERSION}")
    marker = root / ".installed"
    if (root / "bin" / "python").exists() and marker.exists():
        return root
    if not (root / "bin" / "python").exists():
        subprocess.run([python312(), "-m", "venv", str(root)], check=True, timeout=120)
    done = subprocess.run(
        [str(root / "bin" / "python"), "-m", "pip", "install", "-q",
         "--disable-pip-version-check",
         f"based-models-agentloop[openai-compat]=={AGENTLOOP_VERSION}"],
        capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"pip install based-models-agentloop=={AGENTLOOP_VERSION} into "
                           f"{root} failed:\n{done.stderr[-2000:]}")
    marker.write_text(AGENTLOOP_VERSION)
    return root


# --- the scenarios ---------------------------------------------------------------------

READY = FakeReply(text="ready", model="gpt-5.1-2025-11-13", input_tokens=11, output_tokens=11,
                  cached_tokens=0, reasoning_tokens=0)
NOW = {"Retry-After": "0"}  # both libraries honour it: no real waits between attempts


def reply(text: str = "", calls: list[tuple[str, Any]] | None = None, finish: str | None = None,
          tokens: tuple[int, int] = (12, 7)) -> FakeReply:
    return FakeReply(text=text, tool_calls=list(calls or []), finish_reason=finish,
                     model="gpt-5.1-2025-11-13", input_tokens=tokens[0],
                     output_tokens=tokens[1])


def add_call(a: int = 1, b: int = 2) -> tuple[str, Any]:
    return ("add", {"a": a, "b": b})


@dataclass
class Scenario:
    name: str
    script: Sequence[Scripted]
    tools: tuple[str, ...] = ()
    max_iterations: int = 5
    deadline_seconds: float = 600.0
    summary_options: dict[str, Any] | None = None
    observer_raises: bool = False

    def job(self) -> dict[str, Any]:
        return {"name": self.name, "prompt": f"[theirs] {self.name}", "tools": self.tools,
                "max_iterations": self.max_iterations,
                "deadline_seconds": self.deadline_seconds, "max_tokens": 16_000,
                "summary_options": self.summary_options,
                "observer_raises": self.observer_raises}


SCENARIOS = [
    Scenario("tool_then_answer", [reply(calls=[add_call()]), reply("3")], tools=("add",)),
    Scenario("iteration_limit", [reply(calls=[add_call(i, i)]) for i in range(3)],
             tools=("add",), max_iterations=3),
    Scenario("deadline", [reply(calls=[("slow", {"x": 1})]), reply("late")],
             tools=("slow",), deadline_seconds=0.5),
    Scenario("truncated_tool_call",
             [reply(calls=[("add", '{"a": 1, "b')], finish="length"),
              reply(calls=[add_call()]), reply("3")], tools=("add",)),
    Scenario("token_limit",
             [reply(calls=[("add", '{"a": 1')], finish="length") for _ in range(3)],
             tools=("add",)),
    Scenario("failing_tools",
             [reply(calls=[("broken", {"x": 1}), add_call()]), reply("sorry")],
             tools=("add", "broken")),
    Scenario("500_then_success", [FakeError(status=500, headers=NOW), reply("ok")]),
    Scenario("500_exhausted", [FakeError(status=500, headers=NOW) for _ in range(3)]),
    Scenario("401", [FakeError(status=401, body={"error": {"message": "bad key"}})]),
    Scenario("stall", [reply(calls=[add_call()]) for _ in range(3)] + [reply("3")],
             tools=("add",), summary_options={"stall_threshold": 3}),
    Scenario("warn_at", [reply(calls=[add_call()]), reply(calls=[add_call(2, 2)]),
                         reply("done")],
             tools=("add",), max_iterations=4, summary_options={"warn_at": (0.5, 1.0)}),
    Scenario("refusal", [reply("I can't help with that.", finish="content_filter")]),
    Scenario("observer_raises", [FakeError(status=500, headers=NOW), reply("ok")],
             observer_raises=True),
]

SPEC_OUTPUT = (
    'ready\n{"correlation_id":"example-1","provider":"openai","model":"gpt-5.1-2025-11-13",'
    '"status":"completed","iterations":1,"tool_calls":{},"provider_retries":0,"usage":'
    '{"input_tokens":11,"output_tokens":11,"cache_read_tokens":0,"cache_write_tokens":null,'
    '"reasoning_tokens":0,"cost_usd":null,"input_includes_cached":true}}\n'
    "observer received summary: True\nstatus: completed\n"
    "timeline entries: 1\nfirst stop reason: end_turn\n")

NO_ANSWER = ("a run in which no call answered: theirs sums no usage into zeros (and "
             "input_includes_cached true), ours keeps None, spec 002's 'None means "
             "unknown, never zero'")
DOCUMENTED: dict[str, tuple[frozenset[str], str]] = {
    "deadline": (frozenset({"tool_calls"}),
                 "ours cancels the tool in flight at the deadline (theirs checks between "
                 "turns and lets the slow tool finish), so the tool isn't counted"),
    "500_exhausted": (frozenset({"usage"}), NO_ANSWER),
    "401": (frozenset({"usage"}), NO_ANSWER),
}


# --- running both sides ----------------------------------------------------------------

class Scripts:
    """The fake server's responder: each scenario's replies in order, keyed by the run's
    first user message, so both libraries get the same replies whatever order they run in."""

    def __init__(self) -> None:
        self.queues: dict[str, list[Scripted]] = {}

    def add(self, prompt: str, entries: Sequence[Scripted]) -> None:
        self.queues[prompt] = list(entries)

    def __call__(self, body: Any) -> Scripted:
        first = next((m.get("content") for m in body.get("messages", [])
                      if m.get("role") == "user"), "")
        if isinstance(first, list):
            first = " ".join(str(p.get("text", "")) for p in first if isinstance(p, dict))
        queue = self.queues.get(str(first))
        if queue is None:
            return READY  # the spec's examples
        return queue.pop(0) if queue else reply("(script exhausted)")


class Watcher(NullObserver):
    def __init__(self, raises: bool) -> None:
        self.raises = raises
        self.warnings: list[list[Any]] = []
        self.stalls: list[list[Any]] = []
        self.retries: list[list[Any]] = []

    def on_budget_warning(self, kind: str, used: float, limit: float) -> None:
        self.warnings.append([kind, used, limit])

    def on_stall(self, tool_name: str, repeats: int) -> None:
        self.stalls.append([tool_name, repeats])

    def on_retry(self, attempt: int, error: BaseException) -> None:
        self.retries.append([attempt, type(error).__name__])
        if self.raises:
            raise RuntimeError("observer failure")

    def on_response(self, *args: Any) -> None:
        if self.raises:
            raise RuntimeError("observer failure")

    def on_conversation_end(self, summary: Any) -> None:
        if self.raises:
            raise RuntimeError("observer failure")


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def broken(x: int) -> int:
    """Always fails."""
    raise RuntimeError("no")


def slow(x: int) -> int:
    """Takes a while."""
    time.sleep(1.2)
    return x


TOOLS = {"add": add, "broken": broken, "slow": slow}


def env(server: FakeOpenAIServer) -> dict[str, str]:
    return {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": server.base_url + "/v1",
            "AGENTLOOM_MODEL": "gpt-5.1", "OPENAI_API": "chat_completions"}


def run_ours(scenario: Scenario, server: FakeOpenAIServer) -> dict[str, Any]:
    watcher = Watcher(scenario.observer_raises)
    out: dict[str, Any] = {"error": None, "text": None}
    summary: Any
    with Agent.from_env(
        env(server), tools=[TOOLS[t] for t in scenario.tools], name="bot", observer=watcher,
        summary_options=SummaryOptions(timeline=True, **(scenario.summary_options or {})),
        max_iterations=scenario.max_iterations, max_tokens=16_000,
        deadline_seconds=scenario.deadline_seconds,
    ) as agent:
        try:
            result = agent.run_result(f"[ours] {scenario.name}", correlation_id=scenario.name)
            summary = result.summary
            out["text"] = result.text
        except Exception as exc:
            out["error"] = type(exc).__name__
            summary = getattr(exc, "summary", None)
    out["summary"] = summary.model_dump(mode="json") if summary is not None else None
    out.update(warnings=watcher.warnings, stalls=watcher.stalls, retries=watcher.retries)
    return out


def spec_examples_ours(server: FakeOpenAIServer) -> str:
    """The spec's three examples through ours, as tests/test_agent_spec_examples.py runs
    them one by one; here printed together to compare with theirs."""
    import contextlib
    import io

    from agentloom import ConversationSummary

    out = io.StringIO()
    e = env(server)
    with contextlib.redirect_stdout(out):
        with Agent.from_env(e, tools=[]) as agent:
            result = agent.run_result("Reply with exactly ready.", correlation_id="example-1")
        print(result.text)
        print(result.summary.model_dump_json(include={
            "correlation_id", "provider", "model", "status", "iterations",
            "tool_calls", "provider_retries", "usage",
        }))

        class SummaryObserver(NullObserver):
            def __init__(self) -> None:
                self.latest: ConversationSummary | None = None

            def on_conversation_end(self, summary: ConversationSummary) -> None:
                self.latest = summary

        observer = SummaryObserver()
        with Agent.from_env(e, tools=[], observer=observer) as agent:
            result = agent.run_result("Reply with exactly ready.")
        print("observer received summary:", observer.latest == result.summary)
        print("status:", result.summary.status)
        with Agent.from_env(
            e, tools=[],
            summary_options=SummaryOptions(timeline=True, stall_threshold=3, warn_at=(0.8,)),
        ) as agent:
            result = agent.run_result("Reply with exactly ready.")
        print("timeline entries:", len(result.summary.timeline or ()))
        print("first stop reason:", result.summary.timeline[0].stop_reason)  # type: ignore[index]
    return out.getvalue()


@dataclass
class SideBySide:
    theirs: dict[str, dict[str, Any]]
    ours: dict[str, dict[str, Any]]
    spec_theirs: str
    spec_ours: str


@pytest.fixture(scope="module")
def side_by_side() -> Iterator[SideBySide]:
    venv = agentloop_venv()  # made once per machine; reused after
    scripts = Scripts()
    for s in SCENARIOS:
        scripts.add(f"[theirs] {s.name}", s.script)
        scripts.add(f"[ours] {s.name}", s.script)
    server = FakeOpenAIServer(responder=scripts)
    server.start_in_thread()
    try:
        job = {"base_url": server.base_url,
               "scenarios": [{"name": "spec_examples"}, *(s.job() for s in SCENARIOS)]}
        clean = {k: v for k, v in os.environ.items()
                 if not k.upper().endswith("_PROXY") and not k.endswith("_API_KEY")}
        done = subprocess.run([str(venv / "bin" / "python"), str(DRIVER)],
                              input=json.dumps(job), capture_output=True, text=True,
                              timeout=180, env=clean)
        assert done.returncode == 0, done.stderr[-3000:]
        lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        theirs = {line["name"]: line for line in lines}
        ours = {s.name: run_ours(s, server) for s in SCENARIOS}
        yield SideBySide(theirs, ours, theirs["spec_examples"]["stdout"],
                         spec_examples_ours(server))
    finally:
        server.stop_thread()


# --- the comparison ----------------------------------------------------------------------

SAME = ("status", "iterations", "iteration_limit", "deadline_seconds", "correlation_id",
        "agent_name", "provider", "model", "tool_calls", "tool_errors", "provider_retries",
        "error_type", "provider_status_code", "error_phase", "error_request_sent",
        "error_attempts_sent", "max_repeated_tool_calls", "stalled", "cache_hit_rate")
USAGE = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
         "reasoning_tokens", "cost_usd", "input_includes_cached")
TURN = ("index", "stop_reason", "error_type", "input_tokens", "output_tokens", "cost_usd",
        "attempts", "discarded", "tools", "tool_errors")
"""Not compared, by design (docs/agents.md lists them): ids and times (conversation_id,
started_at, elapsed/model/tool/retry-wait seconds, a turn's duration), per-attempt
detail in a different shape (theirs groups failed_attempts into counts, keeps
tool_duration_seconds per tool and attempt_log per turn: compared below as counts),
error_request_id, and fields only ours has (finish_reason, estimated_cost_usd)."""


def _failures(summary: dict[str, Any], theirs: bool) -> Counter[tuple[Any, ...]]:
    if theirs:
        return Counter({(f["error_type"], f["phase"], f["request_sent"]): f["count"]
                        for f in summary["failed_attempts"]})
    return Counter((f["error_type"], f["phase"], f["request_sent"])
                   for f in summary["failed_attempts"])


def differences(theirs: dict[str, Any], ours: dict[str, Any]) -> dict[str, str]:
    """Field -> 'theirs vs ours' for every compared field that differs."""
    found: dict[str, str] = {}
    for key in ("error", "text", "warnings", "stalls", "retries"):
        if theirs[key] != ours[key]:
            found[key] = f"{theirs[key]!r} vs {ours[key]!r}"
    t, o = theirs["summary"], ours["summary"]
    if t is None or o is None:
        found["summary"] = f"{t!r} vs {o!r}"
        return found
    for key in SAME:
        if t[key] != o[key]:
            found[key] = f"{t[key]!r} vs {o[key]!r}"
    usage = [f"{k}: {t['usage'][k]!r} vs {o['usage'][k]!r}" for k in USAGE
             if t["usage"][k] != o["usage"][k]]
    if usage:
        found["usage"] = "; ".join(usage)
    if _failures(t, True) != _failures(o, False):
        found["failed_attempts"] = f"{_failures(t, True)} vs {_failures(o, False)}"
    tt, ot = t["timeline"] or [], o["timeline"] or []
    turns = [f"turn {i + 1} {k}: {a[k]!r} vs {b[k]!r}"
             for i, (a, b) in enumerate(zip(tt, ot, strict=False))
             for k in TURN if a[k] != b[k]]
    if len(tt) != len(ot):
        turns.append(f"{len(tt)} turns vs {len(ot)}")
    if turns:
        found["timeline"] = "; ".join(turns)
    return found


def test_every_scenario_the_issue_names_is_run() -> None:
    names = {s.name for s in SCENARIOS}
    assert {"iteration_limit", "deadline", "truncated_tool_call", "token_limit",
            "failing_tools", "500_then_success", "500_exhausted", "401", "stall", "warn_at",
            "refusal", "observer_raises"} <= names
    assert set(DOCUMENTED) <= names


def test_the_spec_examples_print_what_the_spec_shows(side_by_side: SideBySide) -> None:
    assert side_by_side.spec_theirs == SPEC_OUTPUT
    assert side_by_side.spec_ours == SPEC_OUTPUT


@pytest.mark.parametrize("name", [s.name for s in SCENARIOS])
def test_both_libraries_agree(side_by_side: SideBySide, name: str) -> None:
    theirs, ours = side_by_side.theirs[name], side_by_side.ours[name]
    found = differences(theirs, ours)
    allowed, reason = DOCUMENTED.get(name, (frozenset(), ""))
    detail = "\n".join(f"  {k}: {v}" for k, v in found.items())
    assert set(found) == set(allowed), (
        f"{name}: differences {sorted(found)} but documented {sorted(allowed)} ({reason})\n"
        f"{detail}")


def test_the_comparison_catches_a_difference() -> None:
    summary = {k: None for k in SAME} | {
        "usage": dict.fromkeys(USAGE), "failed_attempts": [], "timeline": []}
    base: dict[str, Any] = {"error": None, "text": "x", "warnings": [], "stalls": [], "retries": [],
            "summary": summary}
    assert differences(base, base) == {}
    other = {**base, "summary": {**summary, "status": "error"}}
    assert set(differences(base, other)) == {"status"}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
