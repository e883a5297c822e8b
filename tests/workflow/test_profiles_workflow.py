"""LLM profiles (spec 004) and the workflow's resilience config: what a profile sets reaches
the wire, a step's own fields win, and every bad name is a load error at its line."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from agentloom.errors import WorkflowError
from agentloom.routing.runtime import Runtime
from agentloom.testing import FakeClock
from agentloom.testing.fake_openai import FakeOpenAIServer
from agentloom.workflow import arun_workflow, load_workflow, load_workflow_text


@pytest.fixture
async def served() -> AsyncIterator[tuple[FakeOpenAIServer, Runtime]]:
    async with FakeOpenAIServer() as server, Runtime(clock=FakeClock()) as runtime:
        runtime.add_provider("openai", {"base_url": server.openai_base_url, "api_key": "k"})
        yield server, runtime  # type: ignore[misc]


_PROFILED = """\
name: profiled
state: {user: ada}
profiles:
  small:
    provider: openai
    model: gpt-4o-mini
    headers: {X-Team: research}
    params: {user: "{state.user}", seed: 7}
    max_tokens: 300
    retries: 0
steps:
  - {id: a, type: llm_call, prompt: one, profile: small}
  - {id: b, type: llm_call, prompt: two, profile: small, model: gpt-4o, max_tokens: 900}
  - {id: c, type: llm_call, prompt: three, profile: small, max_tokens: 50}
"""


async def test_profile_settings_reach_the_wire_and_step_fields_win(
        served: tuple[FakeOpenAIServer, Runtime]) -> None:
    server, runtime = served
    result = await arun_workflow(load_workflow(_PROFILED), clients=runtime,
                                 clock=runtime.clock)
    assert result.ok, result.error
    bodies = {r.json["messages"][-1]["content"]: r for r in server.requests}
    one, two, three = bodies["one"], bodies["two"], bodies["three"]
    assert one.json["model"] == "gpt-4o-mini"
    assert one.json["user"] == "ada" and one.json["seed"] == 7  # templated params rendered
    assert one.headers.get("x-team") == "research"
    assert one.json.get("max_tokens") == 300  # the ceiling is the default...
    assert two.json["model"] == "gpt-4o"  # ...the step's model wins...
    assert two.json.get("max_tokens") == 300  # ...and a larger max_tokens is capped
    assert three.json.get("max_tokens") == 50
    assert result.steps["b"].model == "gpt-4o"


def _problems(text: str) -> str:
    with pytest.raises(WorkflowError) as err:
        load_workflow(text, filename="wf.yaml")
    return str(err.value)


def test_unknown_profile_is_a_load_error_with_line_and_hint() -> None:
    text = _PROFILED.replace("profile: small}\n  - {id: b", "profile: smal}\n  - {id: b")
    message = _problems(text)
    assert "wf.yaml:12" in message
    assert "unknown profile 'smal'" in message and "did you mean 'small'?" in message


def test_fallback_entry_with_unknown_provider_is_a_load_error() -> None:
    text = """\
name: f
steps:
  - id: a
    type: llm_call
    prompt: hi
    fallback:
      - {provider: anthropic, model: claude-haiku-4-5}
      - {provider: antropic, model: claude-haiku-4-5}
"""
    message = _problems(text)
    assert "wf.yaml:8" in message and "unknown provider 'antropic'" in message
    assert "did you mean 'anthropic'?" in message


def test_unknown_providers_are_warnings_at_their_lines_with_a_hint() -> None:
    # A typo was found only at the call (or the CLI's key check), without a line; an
    # error would refuse a Python client factory of one's own that serves the name.
    wf = load_workflow_text("""\
name: f
config: {provider: opena}
providers: {corp: {base_url: "http://127.0.0.1:9/v1", models: [m]}}
agents:
  helper: {provider: antropic, instructions: hi}
steps:
  - {id: a, type: llm_call, prompt: hi, provider: corp}
  - id: b
    type: llm_call
    prompt: hi
    provider: mine
""", filename="wf.yaml")
    warnings = "\n".join(wf.warnings)
    assert ("wf.yaml:2: warning: config.provider: unknown provider 'opena'; did you mean "
            "'openai'?") in warnings
    assert "wf.yaml:5: warning: agents.helper.provider: unknown provider 'antropic'" in warnings
    assert "wf.yaml:11: warning: step 'b', provider: unknown provider 'mine'" in warnings
    assert "'corp'" not in warnings  # a declared one is known


def test_fallback_entry_without_a_model_is_a_load_error() -> None:
    text = """\
name: f
steps:
  - {id: a, type: llm_call, prompt: hi, fallback: [{provider: openai}]}
"""
    assert "needs a model" in _problems(text)


@pytest.mark.parametrize(("body", "words"), [
    ("profiles: {p: {provider: nope, model: m}}", "unknown provider 'nope'"),
    ("profiles: {p: {model: m, fallback: [{provider: nope, model: x}]}}",
     "unknown provider 'nope'"),
    ("profiles: {p: {model: m, max_tokens: -3}}", "max_tokens"),
    ("profiles: {p: {model: m, max_tool: 1}}", "did you mean 'max_tools'"),
    ("config: {rate_limits: {openai: {rpm: -1}}}", "rpm"),
    ("config: {circuit_breaker: {failure_treshold: 2}}", "failure_threshold"),
    ("config: {budget_usd: -1}", "budget_usd"),
    ("config: {prices: {openai: {gpt-x: {input: cheap, output: 1}}}}", "gpt-x"),
])
def test_bad_resilience_config_is_a_load_error(body: str, words: str) -> None:
    text = f"name: x\n{body}\nsteps:\n  - {{id: a, type: llm_call, prompt: hi}}\n"
    message = _problems(text)
    assert words in message and "wf.yaml:" in message


async def test_config_limits_and_prices_reach_the_runtime(
        served: tuple[FakeOpenAIServer, Runtime], tmp_path: Any) -> None:
    _server, runtime = served
    (tmp_path / "prices.json").write_text(
        '{"openai": {"my-ft": {"input": 2, "output": 4}}}', encoding="utf-8")
    text = """\
name: limits
config:
  model: my-ft
  provider: openai
  rate_limits: {openai: {rpm: 6000}}
  circuit_breaker: {failure_threshold: 2, recovery_seconds: 5}
  prices: prices.json
steps:
  - {id: a, type: llm_call, prompt: hi}
"""
    path = tmp_path / "wf.yaml"
    path.write_text(text, encoding="utf-8")
    result = await arun_workflow(load_workflow(str(path)), clients=runtime,
                                 clock=runtime.clock)
    assert result.ok, result.error
    # 12 input + 7 output tokens at $2/$4 per 1M
    assert result.steps["a"].cost_usd is not None
    assert float(result.steps["a"].cost_usd) == pytest.approx((12 * 2 + 7 * 4) / 1e6)
    assert runtime.breakers.settings.failure_threshold == 2
    assert runtime.limiters.get("openai") is not None
    assert result.breakers is not None and result.breakers["openai"]["state"] == "closed"


class _Registry:
    """A ToolSource recording what each step asked the registry for."""

    def __init__(self) -> None:
        self.asked: list[dict[str, Any]] = []

    def toolbox(self, declared: Sequence[Any], *, policy: Any = None, **kw: Any) -> Any:
        self.asked.append(kw)
        from agentloom.tools import ToolRegistry

        return ToolRegistry().toolbox([], policy=policy)


async def test_profile_max_tools_and_tool_error_prompt_reach_the_toolbox(
        served: tuple[FakeOpenAIServer, Runtime]) -> None:
    _server, runtime = served
    text = """\
name: tools
profiles:
  careful: {provider: openai, model: gpt-4o-mini, max_tools: 3,
            tool_error_prompt: "Fix the arguments and try again."}
steps:
  - {id: a, type: llm_call, prompt: hi, profile: careful, tools: [{name: t}]}
"""
    registry = _Registry()
    await arun_workflow(load_workflow(text), clients=runtime, tools=registry,  # type: ignore[arg-type]
                        clock=runtime.clock)
    assert registry.asked
    assert registry.asked[0] == {"max_tools": 3,
                                 "error_prompt": "Fix the arguments and try again."}
