"""@tool: schemas from signatures and docstrings, sync/async calls, result encoding."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from enum import Enum
from typing import Literal

import pydantic
import pytest

from agentloom import tool as top_level_tool
from agentloom.errors import ConfigError, ToolError
from agentloom.loop import ToolContext
from agentloom.tools import PythonTool, Tool, as_tool, encode_result, tool
from agentloom.tools._decorator import parse_docstring

CTX = ToolContext(run_id="r1", step_id="s1")


class Address(pydantic.BaseModel):
    city: str
    zip: str | None = None


class Color(Enum):
    RED = "red"
    BLUE = "blue"


def test_top_level_import_is_the_same_decorator() -> None:
    assert top_level_tool is tool


def test_schema_from_signature_and_google_docstring() -> None:
    @tool
    def lookup(city: str, limit: int = 3, exact: bool = False) -> list[str]:
        """Find places in a city.

        More detail that is still part of the description.

        Args:
            city: The city's name, in English.
            limit: How many places to return;
                at most 10.
            exact (bool): Match the name exactly.

        Returns:
            The names.
        """
        return []

    assert isinstance(lookup, Tool)
    assert lookup.name == "lookup"
    assert lookup.description == (
        "Find places in a city.\n\nMore detail that is still part of the description."
    )
    assert lookup.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city's name, in English."},
            "limit": {
                "type": "integer",
                "default": 3,
                "description": "How many places to return; at most 10.",
            },
            "exact": {
                "type": "boolean",
                "default": False,
                "description": "Match the name exactly.",
            },
        },
        "required": ["city"],
    }
    assert lookup.idempotent is False
    assert lookup.validate_arguments is False


def test_optional_literal_enum_and_nested_model() -> None:
    @tool(name="ship", description="Ship a parcel.", idempotent=True, timeout=5)
    def send(
        to: Address, speed: Literal["slow", "fast"], color: Color, note: str | None = None
    ) -> str:
        return "ok"

    p = send.parameters
    assert send.name == "ship" and send.description == "Ship a parcel."
    assert send.idempotent is True and send.timeout == 5
    assert p["required"] == ["to", "speed", "color"]
    assert p["properties"]["speed"] == {"enum": ["slow", "fast"], "type": "string"}
    assert p["properties"]["note"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}],
        "default": None,
    }
    assert p["properties"]["to"] == {"$ref": "#/$defs/Address"}
    assert set(p["$defs"]) == {"Address", "Color"}
    assert p["$defs"]["Address"]["required"] == ["city"]
    assert "title" not in p["$defs"]["Address"]


async def test_arguments_are_converted_to_the_annotated_types() -> None:
    seen = {}

    @tool
    async def book(to: Address, color: Color, nights: int = 1) -> dict[str, object]:
        seen.update(to=to, color=color, nights=nights)
        return {"city": to.city, "nights": nights}

    result = await book({"to": {"city": "Oslo"}, "color": "red", "nights": "2"}, CTX)
    assert isinstance(seen["to"], Address) and seen["color"] is Color.RED
    assert seen["nights"] == 2
    assert encode_result(result) == '{"city":"Oslo","nights":2}'


async def test_invalid_arguments_raise_a_readable_tool_error() -> None:
    @tool
    def add(a: int, b: int) -> int:
        return a + b

    with pytest.raises(ToolError) as err:
        await add({"a": "x"}, CTX)
    message = str(err.value)
    assert "invalid arguments for add" in message
    assert "a: Input should be a valid integer" in message
    assert "b: Field required" in message


async def test_sync_tools_run_in_a_worker_thread() -> None:
    loop_thread = threading.get_ident()

    @tool
    def where() -> int:
        return threading.get_ident()

    assert await where({}, CTX) != loop_thread


async def test_sync_tool_does_not_block_the_event_loop() -> None:
    release = threading.Event()

    @tool
    def wait_for_release() -> str:
        release.wait(5)
        return "released"

    async def releaser() -> None:
        await asyncio.sleep(0.01)
        release.set()

    result, _ = await asyncio.gather(wait_for_release({}, CTX), releaser())
    assert result == "released"


async def test_tool_context_is_injected_and_hidden_from_the_schema() -> None:
    @tool
    async def whoami(ctx: ToolContext, prefix: str = "") -> str:
        return f"{prefix}{ctx.run_id}/{ctx.step_id}"

    assert "ctx" not in whoami.parameters["properties"]
    assert await whoami({"prefix": "> "}, CTX) == "> r1/s1"


async def test_decorator_timeout_is_enforced() -> None:
    @tool(timeout=0.05)
    async def hang() -> str:
        await asyncio.Event().wait()  # never set: only the timeout ends it
        return "never"

    with pytest.raises(ToolError, match=r"timed out after 0\.05 s"):
        await hang({}, CTX)


def test_return_values_are_encoded_for_the_model() -> None:
    @dataclass
    class Point:
        x: int
        y: int

    assert encode_result("plain text") == "plain text"
    assert encode_result(Address(city="Rome")) == '{"city":"Rome","zip":null}'
    assert encode_result(Point(1, 2)) == '{"x":1,"y":2}'
    assert encode_result([1, None, True]) == "[1,null,true]"


def test_plain_functions_become_tools_and_tools_stay_as_they_are() -> None:
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    made = as_tool(shout)
    assert isinstance(made, PythonTool) and made.description == "Upper-case the text."
    assert as_tool(made) is made
    with pytest.raises(ConfigError, match="not a tool"):
        as_tool(42)


def test_bad_definitions_fail_when_decorated() -> None:
    with pytest.raises(ConfigError, match="invalid tool name"):
        tool(name="has space")(lambda: None)
    with pytest.raises(ConfigError, match="cannot be given by a model"):

        @tool
        def star(*args: int) -> None: ...

    with pytest.raises(ConfigError, match="timeout must be positive"):
        tool(timeout=0)(lambda: None)


def test_docstring_parser_ignores_other_sections() -> None:
    summary, args = parse_docstring("""Summary line.

    Args:
        a: first.
        b: second, which
            continues.

    Raises:
        ValueError: never.
    """)
    assert summary == "Summary line."
    assert args == {"a": "first.", "b": "second, which continues."}
