"""Test kit shipped with AgentLoom, for our tests and yours: in-process scripted models,
loopback fake servers that speak each provider's wire protocol, a fake clock.

Job: the test kit shipped for users: fake provider servers on loopback, scripted models,
a fake clock, the store conformance kit. May import: the layers up to `workflow`
(tests/test_layers.py holds the rule).

Not imported by `import agentloom`.
"""

from __future__ import annotations

from agentloom._lazy import lazy_getattr

_LAZY: dict[str, str] = {
    "ScriptedModel": "agentloom.testing.scripted",
    "FunctionModel": "agentloom.testing.scripted",
    "make_response": "agentloom.testing.scripted",
    "tool_call": "agentloom.testing.scripted",
    "FakeClock": "agentloom.testing.clock",
    "FakeOpenAIServer": "agentloom.testing.fake_openai",
    "FakeReply": "agentloom.testing._server",
    "FakeError": "agentloom.testing._server",
    "FakeDrop": "agentloom.testing._server",
    "FakeBadBody": "agentloom.testing._server",
    "FakeAnthropicServer": "agentloom.testing.fake_anthropic",
    "FakeGeminiServer": "agentloom.testing.fake_gemini",
    "FakeOllamaServer": "agentloom.testing.fake_ollama",
}


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
