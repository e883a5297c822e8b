# mypy: ignore-errors
# (runs under agentloop's own Python 3.12 venv, whose packages our checker does not see)
"""Runs scenarios through spec 002's library, agentloop 0.6.1, inside its own Python 3.12
venv; `test_agentloop_differential.py` runs the same scenarios through ours and compares.

Reads a JSON job on stdin: {"base_url": "http://127.0.0.1:PORT", "scenarios": [...]}
(each scenario as `SCENARIOS` in the test module describes it) and prints one JSON line
per scenario: {"name", "summary", "error", "warnings", "stalls", "retries", "text",
"stdout"}. agentloop has no base-URL setting, so its HTTP client gets a transport that
sends api.openai.com's requests to the loopback server; nothing else is changed.

This file is not imported by pytest (no test_ prefix) and imports nothing of ours.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import time
from typing import Any

import httpx
from agentloop import Agent, ConversationSummary, NullObserver, SummaryOptions
from agentloop.agent import tool


class ToLoopback(httpx.HTTPTransport):
    def __init__(self, base_url: str) -> None:
        super().__init__()
        self._base = httpx.URL(base_url)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.url = request.url.copy_with(scheme=self._base.scheme, host=self._base.host,
                                            port=self._base.port)
        return super().handle_request(request)


@tool({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
       "required": ["a", "b"], "additionalProperties": False})
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"],
       "additionalProperties": False})
def broken(x: int) -> int:
    """Always fails."""
    raise RuntimeError("no")


@tool({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"],
       "additionalProperties": False})
def slow(x: int) -> int:
    """Takes a while."""
    time.sleep(1.2)
    return x


TOOLS = {"add": add, "broken": broken, "slow": slow}


class Watcher(NullObserver):
    def __init__(self, raises: bool) -> None:
        self.raises = raises
        self.warnings: list[list[Any]] = []
        self.stalls: list[list[Any]] = []
        self.retries: list[list[Any]] = []

    def on_budget_warning(self, kind: str, used: float, limit: float) -> None:
        self.warnings.append([kind, used, limit])

    def on_stall(self, tool_name: str, count: int) -> None:
        self.stalls.append([tool_name, count])

    def on_retry(self, attempt: int, error: Exception) -> None:
        self.retries.append([attempt, type(error).__name__])
        if self.raises:
            raise RuntimeError("observer failure")

    def on_response(self, response: Any) -> None:
        if self.raises:
            raise RuntimeError("observer failure")

    def on_conversation_end(self, summary: ConversationSummary) -> None:
        if self.raises:
            raise RuntimeError("observer failure")


ENV = {"LLM_PROVIDER": "openai", "OPENAI_API_KEY": "k", "OPENAI_API": "completions",
       "OPENAI_MODEL": "gpt-5.1"}


def spec_examples(http: httpx.Client) -> str:
    """The three examples of spec 002, word for word but for `http_client=`."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        with Agent.from_env(ENV, tools=[], http_client=http) as agent:
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
        with Agent.from_env(ENV, tools=[], observer=observer, http_client=http) as agent:
            result = agent.run_result("Reply with exactly ready.")

        print("observer received summary:", observer.latest == result.summary)
        print("status:", result.summary.status)

        with Agent.from_env(
            ENV,
            tools=[],
            summary_options=SummaryOptions(timeline=True, stall_threshold=3, warn_at=(0.8,)),
            http_client=http,
        ) as agent:
            result = agent.run_result("Reply with exactly ready.")

        print("timeline entries:", len(result.summary.timeline or ()))
        print("first stop reason:", result.summary.timeline[0].stop_reason)
    return out.getvalue()


def run(scenario: dict[str, Any], http: httpx.Client) -> dict[str, Any]:
    watcher = Watcher(raises=scenario.get("observer_raises", False))
    options = scenario.get("summary_options") or {}
    kwargs: dict[str, Any] = {
        "name": "bot", "observer": watcher, "http_client": http,
        "summary_options": SummaryOptions(timeline=True, **options),
        "max_iterations": scenario.get("max_iterations", 5),
        "max_tokens": scenario.get("max_tokens", 16_000),
        "deadline_seconds": scenario.get("deadline_seconds", 600.0),
    }
    out: dict[str, Any] = {"name": scenario["name"], "error": None, "text": None}
    with Agent.from_env(ENV, tools=[TOOLS[t] for t in scenario.get("tools", [])],
                        **kwargs) as agent:
        try:
            result = agent.run_result(scenario["prompt"], correlation_id=scenario["name"])
            summary = result.summary
            out["text"] = result.text
        except Exception as exc:
            out["error"] = type(exc).__name__
            summary = getattr(exc, "summary", None)
    out["summary"] = summary.model_dump(mode="json") if summary is not None else None
    out.update(warnings=watcher.warnings, stalls=watcher.stalls, retries=watcher.retries)
    return out


def main() -> None:
    job = json.load(sys.stdin)
    with httpx.Client(transport=ToLoopback(job["base_url"]), trust_env=False) as http:
        for scenario in job["scenarios"]:
            if scenario["name"] == "spec_examples":
                line = {"name": "spec_examples", "stdout": spec_examples(http)}
            else:
                line = run(scenario, http)
            print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
