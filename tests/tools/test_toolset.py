"""ToolRegistry and ToolSet: what a step can see, and how every tool failure comes back."""

from __future__ import annotations

import asyncio

import pytest

from agentloom.errors import ConfigError, ToolError
from agentloom.loop import ToolContext
from agentloom.messages import ToolCallPart
from agentloom.tools import (
    BaseTool,
    DeclaredTool,
    SandboxPolicy,
    ToolRegistry,
    ToolSet,
    default_registry,
    tool,
)

CTX = ToolContext(run_id="r", step_id="s")


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
async def explode(kind: str = "value") -> str:
    """Always fails."""
    if kind == "tool":
        raise ToolError("the order id must be numeric")
    if kind == "bare":
        raise RuntimeError
    raise ValueError("bad value 42")


@tool
async def hang() -> str:
    await asyncio.Event().wait()  # never set: only a timeout ends it
    return "never"


@tool(validate_arguments=True)
def strict(n: int) -> int:
    return n


def call(name: str, arguments: str = "{}", cid: str = "c1") -> ToolCallPart:
    return ToolCallPart(id=cid, name=name, arguments=arguments)


def registry() -> ToolRegistry:
    return ToolRegistry([add, explode, hang, strict])


async def test_a_call_runs_the_tool_and_returns_its_result() -> None:
    box = registry().toolbox(["add"])
    result = await box.call(call("add", '{"a": 2, "b": 3}', cid="x9"), CTX)
    assert (result.call_id, result.name, result.content, result.is_error) == (
        "x9",
        "add",
        "5",
        False,
    )


def test_specs_are_what_the_step_declares_and_nothing_more() -> None:
    box = registry().toolbox([DeclaredTool(name="add", description="Sum.")])
    assert [s.name for s in box.specs] == ["add"]
    assert box.specs[0].description == "Sum."
    # Declared without parameters: sent with the registered tool's own.
    assert box.specs[0].parameters == add.parameters


async def test_a_registered_tool_the_step_does_not_declare_is_out_of_reach() -> None:
    box = registry().toolbox(["add"])
    result = await box.call(call("explode"), CTX)
    assert result.is_error
    assert result.content == "unknown tool 'explode'; available tools: add"


def test_declared_parameters_replace_the_registered_ones() -> None:
    params = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    box = registry().toolbox([DeclaredTool(name="add", parameters=params)])
    assert box.specs[0].parameters == params
    assert box.specs[0].description == "Add two numbers."


def test_none_declares_every_registered_tool() -> None:
    assert [s.name for s in registry().toolbox(None).specs] == ["add", "explode", "hang", "strict"]


async def test_arguments_that_are_not_json_or_not_an_object_are_errors() -> None:
    box = registry().toolbox(["add"])
    bad = await box.call(call("add", '{"a": 1,'), CTX)
    assert bad.is_error and bad.content.startswith("arguments are not valid JSON")
    arr = await box.call(call("add", "[1, 2]"), CTX)
    assert arr.is_error and arr.content.startswith("arguments must be a JSON object, got a list")


async def test_exceptions_become_results_the_model_can_read() -> None:
    box = registry().toolbox(["explode"])
    plain = await box.call(call("explode"), CTX)
    assert plain.is_error and plain.content == "ValueError: bad value 42"
    own = await box.call(call("explode", '{"kind": "tool"}'), CTX)
    assert own.is_error and own.content == "the order id must be numeric"
    bare = await box.call(call("explode", '{"kind": "bare"}'), CTX)
    assert bare.content == "RuntimeError"


async def test_the_error_prompt_is_appended_to_failures_only() -> None:
    box = registry().toolbox(["add", "explode"], error_prompt="Fix the arguments or give up.")
    failed = await box.call(call("explode"), CTX)
    assert failed.content == "ValueError: bad value 42\n\nFix the arguments or give up."
    unknown = await box.call(call("nope"), CTX)
    assert unknown.content.endswith("\n\nFix the arguments or give up.")
    ok = await box.call(call("add", '{"a": 1, "b": 1}'), CTX)
    assert ok.content == "2"


async def test_a_toolset_timeout_is_enforced() -> None:
    box = registry().toolbox(["hang"], timeout=0.05)
    result = await box.call(call("hang"), CTX)
    assert result.is_error and result.content == "tool hang timed out after 0.05 s"


async def test_a_sandbox_refusal_is_a_result() -> None:
    box = default_registry(policy=SandboxPolicy()).toolbox(["file_read"])
    result = await box.call(call("file_read", '{"path": "/etc/passwd"}'), CTX)
    assert result.is_error
    assert "refused to read '/etc/passwd'" in result.content
    assert "readable_paths" in result.content


async def test_arguments_are_checked_only_when_the_tool_asks() -> None:
    box = registry().toolbox(["strict", "add"])
    checked = await box.call(call("strict", '{"n": "7", "extra": 1}'), CTX)
    assert checked.is_error
    assert checked.content == "invalid arguments for strict: n: '7' is not of type 'integer'"
    # add doesn't ask: its own conversion is lax ("2" -> 2) and extras are ignored.
    lax = await box.call(call("add", '{"a": "2", "b": 2, "extra": true}'), CTX)
    assert lax.content == "4" and not lax.is_error


async def test_cancellation_and_control_signals_propagate() -> None:
    class Pause(Exception):
        pass

    class Pausing(BaseTool):
        name = "pausing"

        async def __call__(self, arguments: dict, ctx: ToolContext) -> str:  # type: ignore[override]
            raise Pause()

    class Cancelling(BaseTool):
        name = "cancelling"

        async def __call__(self, arguments: dict, ctx: ToolContext) -> str:  # type: ignore[override]
            raise asyncio.CancelledError()

    reg = ToolRegistry([Pausing(), Cancelling()])
    with pytest.raises(Pause):
        await reg.toolbox(None, control_signals=(Pause,)).call(call("pausing"), CTX)
    with pytest.raises(asyncio.CancelledError):
        await reg.toolbox(None).call(call("cancelling"), CTX)
    # Without naming it a control signal, Pause is just a failure.
    result = await reg.toolbox(None).call(call("pausing"), CTX)
    assert result.is_error and result.content == "Pause"


async def test_on_tool_end_reports_name_duration_and_outcome() -> None:
    seen: list[tuple[str, float, bool]] = []
    box = registry().toolbox(["add", "explode"], on_tool_end=lambda n, d, e: seen.append((n, d, e)))
    await box.call(call("add", '{"a": 1, "b": 2}'), CTX)
    await box.call(call("explode"), CTX)
    await box.call(call("ghost"), CTX)
    assert [(n, e) for n, _, e in seen] == [("add", False), ("explode", True), ("ghost", True)]
    assert all(d >= 0 for _, d, _ in seen)


def test_unknown_declared_tool_is_a_config_error_with_a_suggestion() -> None:
    with pytest.raises(ConfigError) as err:
        default_registry().toolbox(["http_requests"])
    assert "unknown tool 'http_requests'; did you mean 'http_request'?" in str(err.value)


def test_max_tools_is_a_load_error() -> None:
    reg = registry()
    assert len(reg.toolbox(["add", "explode"], max_tools=2).specs) == 2
    with pytest.raises(ConfigError, match="3 tools declared, but the profile allows at most 2"):
        reg.toolbox(["add", "explode", "hang"], max_tools=2)


def test_parameters_that_are_not_a_json_schema_object_are_load_errors() -> None:
    reg = registry()
    with pytest.raises(ConfigError, match="not a valid JSON Schema"):
        reg.toolbox([DeclaredTool(name="add", parameters={"type": "objekt"})])
    with pytest.raises(ConfigError, match="must describe an object"):
        reg.toolbox([DeclaredTool(name="add", parameters={"type": "string"})])

    class Broken(BaseTool):
        name = "broken"
        parameters = {"type": "object", "properties": {"x": {"type": 5}}}

    with pytest.raises(ConfigError, match=r"tool 'broken'.*properties/x/type"):
        reg.register(Broken())


def test_registering_two_tools_under_one_name_is_an_error() -> None:
    reg = registry()
    with pytest.raises(ConfigError, match="already registered"):
        reg.register(tool(name="add")(lambda: 0))
    reg.register(tool(name="add")(lambda: 0), replace=True)


def test_the_revision_changes_with_every_tool_added_replaced_or_removed() -> None:
    reg = registry()
    seen = [reg.revision]
    reg.register(tool(name="sub")(lambda a, b: a - b))
    seen.append(reg.revision)
    reg.register(tool(name="sub")(lambda a, b: b - a), replace=True)
    seen.append(reg.revision)
    reg.unregister("sub")
    seen.append(reg.revision)
    reg.unregister("sub")  # nothing to remove: nothing changed
    reg.get("add")
    assert reg.revision == seen[-1] and len(set(seen)) == 4


async def test_a_group_name_stands_for_all_its_tools_and_names_are_made_wire_safe() -> None:
    reg = ToolRegistry()
    reg.register(tool(name="math.add")(lambda a, b: a + b))
    reg.register(tool(name="math.mul")(lambda a, b: a * b))
    box = reg.toolbox(["math"])
    assert box.names == ("math.add", "math.mul")
    # OpenAI and Anthropic refuse dots in tool names.
    assert [s.name for s in box.specs] == ["math_add", "math_mul"]
    assert box.wire_name("math.mul") == "math_mul"
    via_wire = await box.call(call("math_mul", '{"a": 3, "b": 4}'), CTX)
    via_name = await box.call(call("math.add", '{"a": 3, "b": 4}'), CTX)
    assert (via_wire.content, via_name.content) == ("12", "7")


def test_toolset_of_plain_functions() -> None:
    def double(x: int) -> int:
        """Double it."""
        return 2 * x

    box = ToolSet.of([double, add])
    assert [s.name for s in box.specs] == ["double", "add"]


def test_a_step_policy_reaches_the_builtins() -> None:
    reg = default_registry(policy=SandboxPolicy())
    allowed = SandboxPolicy(readable_paths=("/tmp",))
    box = reg.toolbox(["file_read"], policy=allowed)
    tool_obj = box.get("file_read")
    assert tool_obj is not None and tool_obj.policy is allowed  # type: ignore[attr-defined]
    assert reg.get("file_read").policy is not allowed  # type: ignore[union-attr]
