"""The code examples of spec 002 ("Conversation summaries"), with `agentloop` read as
`agentloom`, run against the fake OpenAI server through OPENAI_BASE_URL in the mapping,
once over the Responses API (gpt-5.1's default) and once over chat completions."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from agentloom import Agent, ConversationSummary, NullObserver, SummaryOptions
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer


@pytest.fixture(params=["responses", "chat_completions"])
def server(request: pytest.FixtureRequest) -> Iterator[FakeOpenAIServer]:
    srv = FakeOpenAIServer()
    srv.api = request.param  # type: ignore[attr-defined]
    srv.start_in_thread()
    try:
        yield srv
    finally:
        srv.stop_thread()


def env(server: FakeOpenAIServer) -> dict[str, str]:
    return {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": server.base_url + "/v1",
            "AGENTLOOM_MODEL": "gpt-5.1", "OPENAI_API": server.api}  # type: ignore[attr-defined]


SPEC_OUTPUT_1 = (
    'ready\n{"correlation_id":"example-1","provider":"openai","model":"gpt-5.1-2025-11-13",'
    '"status":"completed","iterations":1,"tool_calls":{},"provider_retries":0,"usage":'
    '{"input_tokens":11,"output_tokens":11,"cache_read_tokens":0,"cache_write_tokens":null,'
    '"reasoning_tokens":0,"cost_usd":null,"input_includes_cached":true}}\n')

READY = FakeReply(text="ready", model="gpt-5.1-2025-11-13", input_tokens=11, output_tokens=11,
                  cached_tokens=0, reasoning_tokens=0)


def test_run_result_prints_the_summary(server: FakeOpenAIServer,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    server.script(READY)
    with Agent.from_env(env(server), tools=[]) as agent:
        result = agent.run_result("Reply with exactly ready.", correlation_id="example-1")

    print(result.text)
    print(result.summary.model_dump_json(include={
        "correlation_id", "provider", "model", "status", "iterations",
        "tool_calls", "provider_retries", "usage",
    }))
    # The spec's output, byte for byte: cost_usd is null because the provider reported
    # none (the price table's figure is the summary's estimated_cost_usd).
    assert capsys.readouterr().out == SPEC_OUTPUT_1
    assert isinstance(result.summary.estimated_cost_usd, float)
    full = json.loads(result.summary.model_dump_json())
    assert full["conversation_id"] and full["elapsed_seconds"] >= 0
    assert full["iteration_limit"] == agent.max_iterations


def test_observer_receives_the_summary(server: FakeOpenAIServer,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    class SummaryObserver(NullObserver):
        def __init__(self) -> None:
            self.latest: ConversationSummary | None = None

        def on_conversation_end(self, summary: ConversationSummary) -> None:
            self.latest = summary

    server.script(READY)
    observer = SummaryObserver()
    with Agent.from_env(env(server), tools=[], observer=observer) as agent:
        result = agent.run_result("Reply with exactly ready.")

    print("observer received summary:", observer.latest == result.summary)
    print("status:", result.summary.status)
    assert capsys.readouterr().out.splitlines() == [
        "observer received summary: True", "status: completed"]


def test_summary_options_timeline(server: FakeOpenAIServer,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    server.script(READY)
    with Agent.from_env(
        env(server),
        tools=[],
        summary_options=SummaryOptions(timeline=True, stall_threshold=3, warn_at=(0.8,)),
    ) as agent:
        result = agent.run_result("Reply with exactly ready.")

    print("timeline entries:", len(result.summary.timeline or ()))
    print("first stop reason:", result.summary.timeline[0].stop_reason)  # type: ignore[index]
    # Normalized, so an OpenAI model's `stop` prints as the spec shows.
    assert capsys.readouterr().out == "timeline entries: 1\nfirst stop reason: end_turn\n"


def test_provider_failure_has_summary_with_retries(server: FakeOpenAIServer) -> None:
    from agentloom.errors import AgentLoopError, AuthError
    from agentloom.testing._server import FakeError

    server.script(FakeError(status=401, body={"error": {"message": "bad key"}}))
    with Agent.from_env(env(server), tools=[]) as agent, \
            pytest.raises(AuthError) as info:
        agent.run_result("x", correlation_id="c-1")
    assert isinstance(info.value, AgentLoopError) and info.value.status == 401
    s = info.value.summary
    assert s is not None and s.error_type == "AuthError"
    assert s is not None and s.status == "provider_error"
    assert s.provider_status_code == 401 and s.error_request_sent is True
    assert s.correlation_id == "c-1" and s.iterations == 1
    assert "bad key" not in s.model_dump_json()
