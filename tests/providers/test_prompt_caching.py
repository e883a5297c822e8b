"""`cache: auto`: Anthropic `cache_control` breakpoints on the stable prefix, OpenAI's
`prompt_cache_key`, and cache reads and writes in usage and cost."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from agentloom import Agent
from agentloom.messages import Message, ModelRequest, ToolCallPart, ToolResultPart, ToolSpec
from agentloom.pricing import cost
from agentloom.providers import get_protocol, vendor_endpoint
from agentloom.providers.anthropic import MAX_BREAKPOINTS
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_anthropic import FakeAnthropicServer

TOOL = ToolSpec(name="lookup", description="Look a word up",
                parameters={"type": "object", "properties": {"word": {"type": "string"}}})
LOOP = (
    Message.system("You are a careful assistant."),
    Message.user("Define 'loom'."),
    Message(role="assistant", parts=(ToolCallPart(id="t1", name="lookup",
                                                  arguments='{"word": "loom"}'),)),
    Message(role="tool", parts=(ToolResultPart(call_id="t1", name="lookup",
                                               content="a weaving frame"),)),
)


def marks(body: object) -> list[str]:
    """Where the cache_control marks are, as paths."""
    found: list[str] = []

    def walk(node: object, path: str) -> None:
        if isinstance(node, dict):
            if "cache_control" in node:
                found.append(path)
            for key, value in node.items():
                walk(value, f"{path}.{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{path}[{i}]")

    walk(body, "")
    return found


def anthropic_body(request: ModelRequest) -> dict[str, object]:
    endpoint = vendor_endpoint("anthropic", api_key="k")
    body: dict[str, object] = json.loads(get_protocol("anthropic").encode(request, endpoint).body)
    return body


def test_breakpoints_mark_tools_system_and_the_growing_prefix() -> None:
    request = ModelRequest(model="claude-sonnet-4-5", messages=LOOP, tools=(TOOL,),
                           cache="auto")
    body = anthropic_body(request)
    assert sorted(marks(body)) == [".messages[2].content[0]", ".system[0]", ".tools[0]"]
    assert len(marks(body)) <= MAX_BREAKPOINTS
    assert body["messages"][2]["content"][0]["type"] == "tool_result"  # type: ignore[index]
    # Without cache: auto nothing is marked and the system stays a string.
    plain = anthropic_body(request.replace(cache=None))
    assert marks(plain) == [] and plain["system"] == "You are a careful assistant."


def test_the_prefill_is_never_marked() -> None:
    request = ModelRequest(model="claude-sonnet-4-0", messages=LOOP[:2], cache="auto",
                           prefill="{")
    body = anthropic_body(request)
    assert sorted(marks(body)) == [".messages[0].content[0]", ".system[0]"]


@pytest.mark.parametrize("model", ["gpt-4o", "o3"])
def test_openai_gets_a_stable_prompt_cache_key(model: str) -> None:
    endpoint = vendor_endpoint("openai", api_key="k")
    one = ModelRequest(model=model, messages=LOOP[:2], tools=(TOOL,), cache="auto")
    two = one.replace(messages=LOOP)
    keys = [json.loads(get_protocol("openai").encode(r, endpoint).body)["prompt_cache_key"]
            for r in (one, two)]
    assert keys[0] == keys[1] and keys[0].startswith("agentloom-")
    other = one.replace(messages=(Message.system("Another prompt."), LOOP[1]))
    assert json.loads(get_protocol("openai").encode(other, endpoint).body)[
        "prompt_cache_key"] != keys[0]
    plain = json.loads(get_protocol("openai").encode(one.replace(cache=None), endpoint).body)
    assert "prompt_cache_key" not in plain


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    srv = FakeAnthropicServer()
    srv.start_in_thread()
    try:
        yield srv
    finally:
        srv.stop_thread()


def test_a_cached_tool_loop_reads_the_cache_on_its_second_turn(
    server: FakeAnthropicServer,
) -> None:
    server.script(FakeReply(tool_calls=[("lookup", {"word": "loom"})]),
                  FakeReply(text="A loom is a weaving frame."))

    def lookup(word: str) -> str:
        """Look a word up."""
        return "a weaving frame"

    env = {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": server.base_url,
           "AGENTLOOM_MODEL": "claude-sonnet-4-5"}
    with Agent.from_env(env, tools=[lookup], cache="auto",
                        system_prompt="You are a careful assistant. " * 40) as agent:
        result = agent.run_result("Define 'loom'.")
    assert result.text == "A loom is a weaving frame."
    first, second = (r.json for r in server.requests)
    last = f".messages[{len(second['messages']) - 1}]"
    assert any(m.startswith(last) for m in marks(second))  # the growing prefix
    assert len(marks(first)) == len(marks(second)) == 3
    usage = result.summary.usage
    assert usage.cache_write_tokens and usage.cache_write_tokens > 0
    assert usage.cache_read_tokens and usage.cache_read_tokens > 0
    # The second turn read what the first wrote: the system prompt and tools at least.
    assert usage.cache_read_tokens >= 300
    assert result.summary.estimated_cost_usd is not None  # priced from the table


def test_cache_reads_and_writes_are_priced_apart() -> None:
    from agentloom.messages import Usage

    plain = Usage(input_tokens=1000, output_tokens=0, input_includes_cached=False)
    cached = Usage(input_tokens=0, output_tokens=0, cache_read_tokens=1000,
                   input_includes_cached=False)
    written = Usage(input_tokens=0, output_tokens=0, cache_write_tokens=1000,
                    input_includes_cached=False)
    prices = [cost(u, provider="anthropic", model="claude-sonnet-4-5")
              for u in (plain, cached, written)]
    assert all(p is not None for p in prices)
    assert prices[1] < prices[0] < prices[2]  # type: ignore[operator]


def test_openai_style_cache_writes_inside_input_are_priced_once() -> None:
    from decimal import Decimal

    from agentloom.messages import Usage
    from agentloom.pricing import Price, price_usage

    price = Price(input=Decimal("2"), output=Decimal("8"), cached_input=Decimal("0.5"),
                  cache_write=Decimal("2.5"))
    usage = Usage(input_tokens=1_000_000, output_tokens=0, cache_read_tokens=200_000,
                  cache_write_tokens=300_000, input_includes_cached=True)
    # 500k uncached at 2, 200k read at 0.5, 300k written at 2.5.
    assert price_usage(usage, price) == Decimal("1") + Decimal("0.1") + Decimal("0.75")
