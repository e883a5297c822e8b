"""Spec 004's profile rules, as a user runs them: `profile` names a top-level profile
from inside a function body too; `max_tools` counts vendor tools; a call through a
profile has a 60 s timeout unless the profile sets one (the `total` of the call's
`HttpTimeout`, the bound every call has)."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai_thread import cli_serving

from agentloom.cli import main
from agentloom.http import AiohttpTransport, Fault, FaultTransport
from agentloom.routing.runtime import Runtime
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer
from agentloom.transport import HttpTimeout
from agentloom.workflow import arun_workflow, load_workflow_text


def _run(capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _reply(body: dict[str, Any]) -> FakeReply:
    """Calls `summarize` when offered, else answers (a function's own call included)."""
    names = [t.get("function", {}).get("name") for t in body.get("tools") or ()]
    if "summarize" in names and not any(m["role"] == "tool" for m in body["messages"]):
        return FakeReply(tool_calls=[("summarize", {"text": "tea"})])
    return FakeReply(text="re " + str(body["messages"][-1]["content"])[:40])


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeOpenAIServer]:
    with cli_serving(monkeypatch, tmp_path, _reply) as fake:
        yield fake


# --- profile: the literal name of a profile, inside a function's steps too -------------

PROFILE_IN_A_FUNCTION = """\
name: profiled-function
config: {model: gpt-4o, provider: openai}
profiles:
  terse: {provider: openai, model: gpt-4o-mini, params: {seed: 7}, max_tokens: 50}
functions:
  summarize:
    description: Summarize a text.
    args: {text: {type: str, description: The text.}}
    steps:
      - {id: s, type: llm_call, profile: terse, prompt: "summarize {args.text}"}
    return: "{steps.s.output}"
steps:
  - {id: go, type: llm_call, prompt: "go", functions: [summarize], output: answer}
"""


def test_a_function_body_names_a_top_level_profile(server: FakeOpenAIServer, tmp_path: Path,
                                                   capsys: Any) -> None:
    (tmp_path / "flow.yaml").write_text(PROFILE_IN_A_FUNCTION)
    code, out, err = _run(capsys, "run", "flow.yaml", "--json")
    assert code == 0, err
    inner = [r.json for r in server.requests if "summarize tea" in json.dumps(r.json)
             and not r.json.get("tools")]
    assert len(inner) == 1
    # The profile's model and request settings reached the body's call.
    assert inner[0]["model"] == "gpt-4o-mini" and inner[0]["seed"] == 7
    assert json.loads(out)["state"]["answer"].startswith("re ")


def test_an_unknown_profile_in_a_function_body_is_still_a_load_error(
        server: FakeOpenAIServer, tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "flow.yaml").write_text(PROFILE_IN_A_FUNCTION.replace("profile: terse",
                                                                      "profile: tesre"))
    code, _, err = _run(capsys, "run", "flow.yaml")
    assert code == 1
    assert ("flow.yaml:10: function 'summarize': step 's', profile: unknown profile 'tesre' "
            "(profiles: terse); did you mean 'terse'?") in err
    assert server.requests == []


# --- max_tools counts vendor tools -----------------------------------------------------

MAX_TOOLS = """\
name: capped
config: {model: gpt-4o-mini, provider: openai}
profiles:
  two: {provider: openai, model: gpt-4o-mini, max_tools: 2}
functions:
  a: {description: Say a., return: "a"}
  b: {description: Say b., return: "b"}
steps:
  - id: go
    type: llm_call
    profile: two
    prompt: "hi"
    functions: [a, b]
    vendor_tools: [web_search]
"""


def test_vendor_tools_count_against_max_tools_at_load(server: FakeOpenAIServer,
                                                      tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "flow.yaml").write_text(MAX_TOOLS)
    code, _, err = _run(capsys, "run", "flow.yaml")
    assert code == 1
    assert ("flow.yaml:14: step 'go': 3 tools declared (1 of them vendor tools), but the "
            "profile allows 2 per call") in err
    assert server.requests == []  # nothing went out
    code, _, err = _run(capsys, "validate", "flow.yaml")
    assert code != 0 and "1 of them vendor tools" in err


def test_within_max_tools_vendor_tools_go_out(server: FakeOpenAIServer, tmp_path: Path,
                                              capsys: Any) -> None:
    (tmp_path / "flow.yaml").write_text(MAX_TOOLS.replace("[a, b]", "[a]"))
    code, _, err = _run(capsys, "run", "flow.yaml")
    assert code == 0, err
    tools = server.requests[0].json["tools"]
    assert len(tools) == 2 and {"type": "web_search"} in tools


def test_a_function_body_step_is_held_to_max_tools_too(server: FakeOpenAIServer,
                                                       tmp_path: Path, capsys: Any) -> None:
    flow = """\
name: capped-body
config: {model: gpt-4o-mini, provider: openai}
profiles:
  one: {provider: openai, model: gpt-4o-mini, max_tools: 1}
functions:
  inner:
    description: Ask with a vendor tool.
    steps:
      - {id: s, type: llm_call, profile: one, prompt: "x", tools: [file_read],
         vendor_tools: [web_search]}
    return: "{steps.s.output}"
steps:
  - {id: go, type: llm_call, prompt: "hi", functions: [inner]}
"""
    (tmp_path / "flow.yaml").write_text(flow)
    code, _, err = _run(capsys, "run", "flow.yaml")
    assert code == 1
    assert ("function 'inner', step 's': 2 tools declared (1 of them vendor tools), but the "
            "profile allows 1 per call") in err
    assert server.requests == []


def test_an_mcp_server_named_whole_counts_its_tools_and_the_vendor_tools_at_start(
        server: FakeOpenAIServer, tmp_path: Path, capsys: Any) -> None:
    flow = f"""\
name: capped-mcp
config: {{model: gpt-4o-mini, provider: openai}}
mcp_servers:
  calc: {{command: {sys.executable}, args: [-m, agentloom.testing.mcp_server]}}
profiles:
  four: {{provider: openai, model: gpt-4o-mini, max_tools: 4}}
steps:
  - {{id: go, type: llm_call, profile: four, prompt: "hi", mcp: [calc],
     vendor_tools: [web_search], retry: {{max_retries: 0}}}}
"""
    (tmp_path / "flow.yaml").write_text(flow)
    code, _, err = _run(capsys, "run", "flow.yaml")  # the server has four tools
    assert code == 1
    assert ("step 'go' failed: 5 tools declared (1 of them vendor tools), but the profile "
            "allows at most 4 per call") in err
    assert server.requests == []


# --- timeout: 60 s per call unless the profile sets one --------------------------------

TIMED = """\
name: timed
config: {model: gpt-4o-mini, provider: openai}
profiles:
  p: {provider: openai, model: gpt-4o-mini}
steps:
  - {id: ask, type: llm_call, profile: p, prompt: "hi", retry: {max_retries: 0}}
"""


@pytest.fixture
def silent(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    """A server that takes connections and never answers (the kernel accepts them into
    the backlog; nobody reads): the OpenAI base URL of it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{sock.getsockname()[1]}/v1")
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    finally:
        sock.close()


def test_a_profiles_timeout_ends_a_call_that_never_answers(silent: str, tmp_path: Path,
                                                           capsys: Any) -> None:
    (tmp_path / "flow.yaml").write_text(TIMED.replace("gpt-4o-mini}", "gpt-4o-mini, "
                                                      "timeout: 0.2}", 1))
    code, out, err = _run(capsys, "run", "flow.yaml", "--json")
    assert code == 1
    step = json.loads(out)["steps"]["ask"]
    assert step["status"] == "failed"
    assert "no full reply within the call's timeout of 0.2 s" in step["error"]
    code, _, err = _run(capsys, "run", "flow.yaml")
    assert code == 1 and "step 'ask' failed" in err and "timeout of 0.2 s" in err


async def _effective_timeouts(flow: str) -> list[HttpTimeout | None]:
    """The timeout of each request the run sent, read at the transport seam."""
    seen: list[HttpTimeout | None] = []

    def look(_n: int, request: Any) -> bool:
        seen.append(request.timeout)
        return False  # read only: every request goes through

    async with FakeOpenAIServer() as fake:
        faults = FaultTransport(AiohttpTransport())
        faults.add(look, Fault.timeout())
        runtime = Runtime(transport=faults)
        runtime.add_providers({"openai": {"type": "openai", "base_url": fake.openai_base_url,
                                          "api_key": "k"}})
        try:
            result = await arun_workflow(load_workflow_text(flow), clients=runtime)
        finally:
            await runtime.aclose()
            await faults.aclose()
    assert result.ok, result.error
    return seen


async def test_a_call_through_a_profile_without_timeout_gets_60_seconds() -> None:
    (timeout,) = await _effective_timeouts(TIMED)
    assert timeout is not None and timeout.total == 60.0
    # The other bounds every call has stay as they are.
    assert (timeout.connect, timeout.read) == (HttpTimeout().connect, HttpTimeout().read)


async def test_a_profiles_own_timeout_wins_and_a_call_without_profile_keeps_the_bound(
        ) -> None:
    (timeout,) = await _effective_timeouts(TIMED.replace("gpt-4o-mini}", "gpt-4o-mini, "
                                                         "timeout: 90}", 1))
    assert timeout is not None and timeout.total == 90.0
    (timeout,) = await _effective_timeouts(TIMED.replace("profile: p, ", ""))
    assert timeout is not None and timeout.total == HttpTimeout().total
