"""One workflow, the same `llm_call` (prompt, system prompt, an image, reasoning, streaming),
against each provider's fake server: every run gives a result of the same shape."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from agentloom.routing.runtime import Runtime
from agentloom.testing import (
    FakeAnthropicServer,
    FakeClock,
    FakeGeminiServer,
    FakeOllamaServer,
    FakeOpenAIServer,
    FakeReply,
)
from agentloom.workflow import arun_workflow, load_workflow

# A 1x1 PNG.
_PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)).decode()

_WORKFLOW = """\
name: matrix
config: {{provider: {provider}, model: {model}}}
steps:
  - id: look
    type: llm_call
    system_prompt: "You describe images in one line."
    prompt: "What is in this picture?"
    attachments:
      - {{type: image, source: "data:image/png;base64,{png}"}}
    thinking: {{enabled: true, budget_tokens: 1024}}
    max_tokens: 2048
    stream: true
    output: caption
"""

_CASES = [
    ("openai", "o4-mini", FakeOpenAIServer, "openai_base_url"),
    ("anthropic", "claude-sonnet-4-5", FakeAnthropicServer, "base_url"),
    ("gemini", "gemini-2.5-flash", FakeGeminiServer, "base_url"),
    ("ollama", "qwen3-vl:8b", FakeOllamaServer, "base_url"),
]


def _shape(value: Any) -> Any:
    """Keys and value types, recursively: what a consumer of `--json` relies on."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    return type(value).__name__


async def _run(provider: str, model: str, server_cls: Any, attr: str) -> dict[str, Any]:
    reply = FakeReply(text="A single red pixel.", reasoning="Tiny image, one colour.",
                      input_tokens=40, output_tokens=9, reasoning_tokens=5)
    async with server_cls(responder=lambda _body: reply) as server, \
            Runtime(clock=FakeClock()) as runtime:
        runtime.add_provider(provider, {"base_url": getattr(server, attr), "api_key": "k"})
        text = _WORKFLOW.format(provider=provider, model=model, png=_PNG)
        result = await arun_workflow(load_workflow(text), clients=runtime, clock=runtime.clock)
        assert len(server.requests) == 1
    assert result.ok, result.error
    step = result.steps["look"]
    assert step.text == "A single red pixel." and result.state["caption"] == step.text
    assert step.provider == provider and step.model and step.finish_reason
    assert step.time_to_first_token is not None
    assert step.usage is not None and step.usage.input_tokens == 40
    assert step.reasoning_content == "Tiny image, one colour."
    assert step.summary is not None and step.summary.status.value == "completed"
    return result.to_dict()


@pytest.mark.parametrize(("provider", "model", "server_cls", "attr"), _CASES,
                         ids=[c[0] for c in _CASES])
async def test_each_provider_answers_the_same_step(provider: str, model: str,
                                                   server_cls: Any, attr: str) -> None:
    await _run(provider, model, server_cls, attr)


async def test_every_provider_gives_the_same_result_shape() -> None:
    shapes = {}
    for provider, model, server_cls, attr in _CASES:
        d = await _run(provider, model, server_cls, attr)
        step = d["steps"]["look"]
        # Cache and reasoning counts are None where a provider doesn't report them
        # (Anthropic bills thinking inside output tokens): None means unknown, never 0.
        tokens = {k: v for k, v in step.pop("tokens").items()
                  if not k.startswith("cache") and k != "reasoning"}
        summary = step.pop("summary")
        shapes[provider] = (sorted(d), _shape(step), _shape(tokens), sorted(summary))
    first = shapes["openai"]
    for provider, shape in shapes.items():
        assert shape == first, provider
