"""A workflow function's body runs inside its caller's run: it takes the file's step
defaults (model, provider, retries, ...), and the run-wide settings (`prices`, rate
limits, breaker, deadline, caps) stay the caller's run's, handed to the runtime once per
run, not again at every call the model makes. Real HTTP to loopback."""

from __future__ import annotations

from typing import Any

from agentloom.routing.runtime import Runtime
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer
from agentloom.workflow import arun_workflow, load_workflow

FLOW = """\
name: priced
providers:
  primary: {type: openai, api_key: k, base_url: BASE}
config: {provider: primary, model: gpt-4o-mini, rate_limits: {primary: {rpm: 6000}},
         prices: {primary: {gpt-4o-mini: {input: 1, output: 2}}}}
functions:
  note:
    description: Ask the model to note a word.
    args: {word: {type: str, description: The word.}}
    steps:
      - {id: inner, type: llm_call, prompt: "note {args.word}"}
    return: "{steps.inner.output}"
steps:
  - {id: ask, type: llm_call, prompt: "note three words", functions: [note]}
"""


def _answer(body: dict[str, Any]) -> FakeReply:
    last = body["messages"][-1]
    if body.get("tools") and last["role"] == "user":
        return FakeReply(tool_calls=[("note", {"word": w}) for w in ("a", "b", "c")])
    return FakeReply(text="noted")


async def test_the_runs_settings_are_handed_over_once_not_at_every_function_call() -> None:
    async with FakeOpenAIServer(responder=_answer) as server, Runtime() as runtime:
        wf = load_workflow(FLOW.replace("BASE", server.openai_base_url))
        first = await arun_workflow(wf, clients=runtime)
        assert first.ok, first.error
        revision = runtime.revision
        second = await arun_workflow(wf, clients=runtime)
        assert second.ok, second.error
        prompts = [r.json["messages"][-1].get("content") for r in server.requests]
        assert prompts.count("note a") == 2  # each run's model called the function
        # Each run reads its price table once (a new table: one revision); its three
        # function calls read none, and the unchanged rate limit changes nothing.
        assert runtime.revision == revision + 1
        # The body's call is priced by the run's table, as the caller's is.
        inner = second.steps["ask"].usage
        assert inner is not None and inner.cost_usd is not None
