"""Workflow functions as tools, vendor tools, and loading tools from files and entry points."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from agentloom.errors import ConfigError
from agentloom.loop import ToolContext
from agentloom.messages import ToolCallPart
from agentloom.tools import (
    ArgSpec,
    FunctionTool,
    PythonTool,
    ToolRegistry,
    load_entry_point_tools,
    load_tools_from_module,
    normalize_vendor_tools,
)

CTX = ToolContext()


def make_function(seen: list[dict[str, Any]]) -> FunctionTool:
    async def body(args: dict[str, Any]) -> object:
        seen.append(args)
        return {"rows": args["limit"], "sql": args["sql"]}

    return FunctionTool(
        "runQuery",
        "Runs a read-only SQL query.",
        {
            "sql": {"type": "str", "description": "A read-only SQL query."},
            "limit": ArgSpec(type="int", description="Most rows.", default=10),
            "strict": "bool",
            "columns": {"type": "list", "required": False},
            "params": {"type": "object", "required": False},
            "ratio": {"type": "float", "required": False},
        },
        body,
    )


def test_declared_args_become_a_json_schema() -> None:
    fn = make_function([])
    assert fn.parameters == {
        "type": "object",
        "properties": {
            "sql": {"type": "string", "description": "A read-only SQL query."},
            "limit": {"type": "integer", "description": "Most rows.", "default": 10},
            "strict": {"type": "boolean"},
            "columns": {"type": "array"},
            "params": {"type": "object"},
            "ratio": {"type": "number"},
        },
        "required": ["sql", "strict"],
    }
    # The registry accepts it like any tool (its parameters pass the metaschema).
    assert ToolRegistry([fn]).toolbox(["runQuery"]).specs[0].name == "runQuery"


async def test_arguments_are_coerced_to_the_declared_types() -> None:
    seen: list[dict[str, Any]] = []
    fn = make_function(seen)
    box = ToolRegistry([fn]).toolbox(None)
    result = await box.call(
        ToolCallPart(
            id="1",
            name="runQuery",
            arguments=(
                '{"sql": "select 1", "limit": "5", "strict": "true", "columns": "[\\"a\\"]", '
                '"ratio": 2}'
            ),
        ),
        CTX,
    )
    assert not result.is_error and result.content == '{"rows":5,"sql":"select 1"}'
    assert seen == [{"sql": "select 1", "limit": 5, "strict": True, "columns": ["a"], "ratio": 2.0}]


async def test_bad_arguments_go_back_to_the_model_listing_every_problem() -> None:
    seen: list[dict[str, Any]] = []
    box = ToolRegistry([make_function(seen)]).toolbox(None)
    result = await box.call(
        ToolCallPart(
            id="1",
            name="runQuery",
            arguments=('{"limit": "five", "strict": 3, "params": [1], "ratio": "NaN", "bogus": 1}'),
        ),
        CTX,
    )
    assert result.is_error
    assert result.content == (
        "invalid arguments for runQuery: sql: missing (required string); "
        'limit: expected integer, got "five"; strict: expected boolean, got 3; '
        'params: expected object, got [1]; ratio: expected number, got "NaN"; '
        "unexpected argument(s) bogus; this function takes sql, limit, strict, columns, "
        "params, ratio"
    )
    assert seen == []


def test_function_definition_errors() -> None:
    async def body(args: dict[str, Any]) -> object:
        return None

    with pytest.raises(ConfigError, match="a description is required"):
        FunctionTool("f", "", {}, body)
    with pytest.raises(
        ConfigError, match="type must be one of str, int, float, bool, list, object, got 'date'"
    ):
        FunctionTool("f", "d", {"when": {"type": "date"}}, body)
    with pytest.raises(ConfigError, match="unknown field"):
        FunctionTool("f", "d", {"x": {"type": "str", "desc": "typo"}}, body)


def test_vendor_tools_pass_through_checked() -> None:
    assert normalize_vendor_tools(["web_search", {"type": "code_interpreter", "x": 1}]) == (
        {"type": "web_search"},
        {"type": "code_interpreter", "x": 1},
    )
    assert normalize_vendor_tools(None) == ()
    with pytest.raises(ConfigError, match=r"vendor_tools\[0\]"):
        normalize_vendor_tools([42])


TOOLS_FILE = '''
from agentloom import tool

@tool
def greet(name: str) -> str:
    """Say hello."""
    return f"hello {name}"

@tool(name="shout")
async def loud(text: str) -> str:
    return text.upper()

def not_a_tool() -> None:
    pass
'''


async def test_load_tools_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "my_tools.py"
    path.write_text(TOOLS_FILE)
    tools = load_tools_from_module(str(path))
    assert sorted(t.name for t in tools) == ["greet", "shout"]
    greet = next(t for t in tools if t.name == "greet")
    assert await greet({"name": "Ada"}, CTX) == "hello Ada"


def test_load_tools_from_a_dotted_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pkg_tools_mod.py").write_text(TOOLS_FILE)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert len(load_tools_from_module("pkg_tools_mod")) == 2
    finally:
        sys.modules.pop("pkg_tools_mod", None)


def test_load_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_tools_from_module(str(tmp_path / "missing.py"))
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('nope')\n")
    with pytest.raises(ConfigError, match=r"broken.py: importing it failed: RuntimeError: nope"):
        load_tools_from_module(str(broken))
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    with pytest.raises(ConfigError, match="no @tool functions found"):
        load_tools_from_module(str(empty))


def test_entry_point_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A real installed distribution, as far as importlib.metadata can tell.
    (tmp_path / "ep_tools_mod.py").write_text(
        TOOLS_FILE
        + """
def provide():
    return [greet]
"""
    )
    dist = tmp_path / "ep_tools-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-tools\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[agentloom.tools]\nall = ep_tools_mod\none = ep_tools_mod:provide\n"
        "single = ep_tools_mod:loud\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        tools = load_entry_point_tools()
    finally:
        sys.modules.pop("ep_tools_mod", None)
    assert sorted(t.name for t in tools) == ["greet", "greet", "shout", "shout"]
    assert all(isinstance(t, PythonTool) for t in tools)
