"""`ProviderGateway` routes as the public AgentLoom's does, against real loopback servers.

Their rule (`ProviderGateway._get_candidates`): a model some registration lists under
`models=` goes only to the registrations listing it; any other model to those whose
provider's `supports_model` takes it, then to the `is_fallback` ones; each in priority
order, any failure moving on to the next. Before, `models=` was checked and dropped, a
second provider of one vendor (two `OpenAIProvider`s: OpenAI and a local vLLM, say) was
silently lost, and a call never left the workflow's `config.provider`.

The scripts here are written as theirs are: their import paths, their `register`.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentloom.core.engine import WorkflowEngine
from agentloom.core.parser import WorkflowParser
from agentloom.messages import Usage
from agentloom.pricing import PriceTable, cost
from agentloom.providers.anthropic import AnthropicProvider
from agentloom.providers.gateway import ProviderGateway
from agentloom.providers.ollama import OllamaProvider
from agentloom.providers.openai import OpenAIProvider
from agentloom.testing import (
    FakeAnthropicServer,
    FakeError,
    FakeOllamaServer,
    FakeOpenAIServer,
)


def _flow(*models: str, provider: str = "openai") -> Any:
    """One step per model, each answering into `out<i>`; no step retries."""
    return WorkflowParser.from_dict({
        "name": "routing", "config": {"provider": provider, "model": models[0],
                                      "max_retries": 0},
        "steps": [{"id": f"s{i}", "type": "llm_call", "model": model,
                   "prompt": f"ask {model}", "output": f"out{i}"}
                  for i, model in enumerate(models)]})


def _models(server: Any) -> list[str]:
    return [r.json["model"] for r in server.requests]


async def _run(wf: Any, gateway: Any) -> Any:
    try:
        return await WorkflowEngine(wf, provider_gateway=gateway).run()
    finally:
        await gateway.close()


def _errors(result: Any) -> dict[str, Any]:
    return {k: v.error for k, v in result.step_results.items() if v.error}


async def test_a_model_listed_by_models_goes_to_that_registration_and_no_other() -> None:
    # OpenAI first (priority 0); a vLLM server behind the same wire protocol lists its own
    # model and a gpt name it serves as well. Their gateway: a listed model goes only to
    # the registrations listing it, however high the others' priority.
    async with FakeOpenAIServer() as cloud, FakeOpenAIServer() as vllm:
        cloud.script("from the cloud")
        vllm.script("from vllm", "gpt-4o from vllm")
        gateway = ProviderGateway()
        gateway.register(OpenAIProvider(api_key="sk-cloud", base_url=cloud.base_url),
                         priority=0)
        gateway.register(OpenAIProvider(api_key="sk-vllm", base_url=vllm.base_url),
                         priority=10, models=["llama-3-8b", "gpt-4o"])
        result = await _run(_flow("gpt-4o-mini", "llama-3-8b", "gpt-4o"), gateway)
    assert result.status.value == "success", _errors(result)
    assert _models(cloud) == ["gpt-4o-mini"]
    assert _models(vllm) == ["llama-3-8b", "gpt-4o"]
    assert result.final_state["out0"] == "from the cloud"
    assert result.final_state["out1"] == "from vllm"
    assert result.final_state["out2"] == "gpt-4o from vllm"
    # Each server saw its own key: the registrations stay apart.
    assert {r.headers["authorization"] for r in cloud.requests} == {"Bearer sk-cloud"}
    assert {r.headers["authorization"] for r in vllm.requests} == {"Bearer sk-vllm"}


async def test_two_openai_providers_both_serve_by_priority_and_the_second_takes_over(
) -> None:
    # Registered first but priority 10: the later one (priority 0) is tried first. When it
    # answers 5xx, the call moves on to the other (both `supports_model` gpt-*), and the
    # reply from the second registration is priced as OpenAI's, as theirs prices by model.
    async with FakeOpenAIServer() as first, FakeOpenAIServer() as second:
        first.script("first answers")
        second.script("second answers", FakeError(status=503, body="overloaded"))
        gateway = ProviderGateway()
        gateway.register(OpenAIProvider(api_key="sk-1", base_url=first.base_url),
                         priority=10)
        gateway.register(OpenAIProvider(api_key="sk-2", base_url=second.base_url),
                         priority=0)
        result = await _run(_flow("gpt-4o-mini", "gpt-4o"), gateway)
    assert result.status.value == "success", _errors(result)
    assert _models(second) == ["gpt-4o-mini", "gpt-4o"]  # the 503 was the second call
    assert _models(first) == ["gpt-4o"]
    assert result.final_state["out0"] == "second answers"
    assert result.final_state["out1"] == "first answers"
    usage = Usage(input_tokens=12, output_tokens=7)  # what the fake servers report
    table = PriceTable.default()
    for step, model in (("s0", "gpt-4o-mini"), ("s1", "gpt-4o")):
        expected = cost(usage, provider="openai", model=model, table=table)
        assert expected is not None and expected > 0
        assert result.step_results[step].cost_usd == pytest.approx(float(expected))


async def test_a_fallback_registration_gets_the_call_when_the_primary_fails() -> None:
    # Their example 14's shape: a cloud provider first, a fallback after. The primary
    # answers 500 every time; the fallback (an Anthropic one, whose `supports_model` says
    # no to gpt-4o-mini) gets the call only because it is registered `is_fallback=True`.
    async with FakeOpenAIServer(responder=lambda _: FakeError(status=500)) as primary, \
            FakeAnthropicServer() as spare:
        spare.script("the fallback answers")
        gateway = ProviderGateway()
        gateway.register(OpenAIProvider(api_key="sk-test", base_url=primary.base_url),
                         priority=0)
        gateway.register(AnthropicProvider(api_key="sk-ant", base_url=spare.base_url),
                         priority=100, is_fallback=True)
        result = await _run(_flow("gpt-4o-mini"), gateway)
    assert result.status.value == "success", _errors(result)
    assert _models(primary) == ["gpt-4o-mini"]
    assert _models(spare) == ["gpt-4o-mini"]
    assert result.final_state["out0"] == "the fallback answers"


async def test_a_listed_model_skips_the_fallbacks_and_an_unknown_one_reaches_them(
) -> None:
    # As theirs: a model named by `models=` has exactly its listers (a failure there is
    # the step's), while a model nobody lists or supports goes to the fallback alone,
    # whatever `config.provider` says.
    async with FakeOpenAIServer(responder=lambda _: FakeError(status=502)) as primary, \
            FakeOllamaServer() as spare:
        spare.script("spare answers")
        gateway = ProviderGateway()
        gateway.register(OpenAIProvider(api_key="sk-test", base_url=primary.base_url),
                         models=["gpt-4o-mini"])
        gateway.register(OllamaProvider(base_url=spare.base_url), is_fallback=True)
        listed = await WorkflowEngine(_flow("gpt-4o-mini"), provider_gateway=gateway).run()
        unknown = await _run(_flow("phi4", provider="anthropic"), gateway)
    assert listed.status.value == "failed"
    assert "502" in (listed.step_results["s0"].error or "")
    assert unknown.status.value == "success", _errors(unknown)
    assert _models(primary) == ["gpt-4o-mini"]
    assert unknown.final_state["out0"] == "spare answers"


def test_candidates_follow_their_rule() -> None:
    gateway = ProviderGateway()
    gateway.register(OllamaProvider(), priority=100, is_fallback=True)
    gateway.register(OpenAIProvider(api_key="a"), priority=0, models=["gpt-4o"])
    gateway.register(OpenAIProvider(api_key="b", base_url="http://127.0.0.1:9/v1"),
                     priority=5)
    gateway.register(AnthropicProvider(api_key="c"), priority=1, is_fallback=True)
    assert gateway.candidates("gpt-4o") == ["openai"]
    assert gateway.candidates("gpt-4o-mini") == ["openai", "openai-2", "ollama",
                                                 "anthropic"]
    assert gateway.candidates("o3-mini") == ["openai", "openai-2", "ollama", "anthropic"]
    assert gateway.candidates("claude-haiku-4-5") == ["anthropic", "ollama"]
    assert gateway.candidates("llama3.2") == ["ollama", "anthropic"]
