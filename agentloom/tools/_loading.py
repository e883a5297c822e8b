"""Tools from outside the program: a Python file or module, and installed entry points.

`agentloom run flow.yaml --tools my_tools.py` loads every `@tool` function of that file;
packages publish tools under the `agentloom.tools` entry-point group, each entry naming a
Tool, a module of `@tool` functions, or a function that returns tools. Only the CLI calls
these: importing user code is the user's explicit choice.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from agentloom.errors import ConfigError
from agentloom.tools._decorator import PythonTool
from agentloom.tools._tool import Tool


def _import_file(path: Path) -> ModuleType:
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    name = f"agentloom_user_tools_{path.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"{path}: cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise ConfigError(f"{path}: importing it failed: {type(exc).__name__}: {exc}") from exc
    return module


def tools_in_module(module: ModuleType) -> list[Tool]:
    """Every @tool-decorated function defined (or imported) at the module's top level."""
    found: list[Tool] = []
    for value in vars(module).values():
        if isinstance(value, PythonTool) and all(value is not t for t in found):
            found.append(value)
    return found


def load_tools_from_module(path_or_module: str | Path | ModuleType) -> list[Tool]:
    """The @tool functions of a `.py` file or a dotted module name."""
    if isinstance(path_or_module, ModuleType):
        module = path_or_module
    else:
        text = str(path_or_module)
        path = Path(text)
        if text.endswith(".py") or path.exists():
            if not path.is_file():
                raise ConfigError(f"--tools {text}: no such file")
            module = _import_file(path.resolve())
        else:
            try:
                module = importlib.import_module(text)
            except ImportError as exc:
                raise ConfigError(f"--tools {text}: no such file or module ({exc})") from exc
    tools = tools_in_module(module)
    if not tools:
        raise ConfigError(
            f"{getattr(module, '__file__', None) or module.__name__}: no @tool functions found"
        )
    return tools


def _expand(value: Any, origin: str) -> list[Tool]:
    if isinstance(value, ModuleType):
        return tools_in_module(value)
    if isinstance(value, Tool):
        return [value]
    if callable(value) and not inspect.isclass(value):
        produced = value()
        if isinstance(produced, Tool):
            return [produced]
        if isinstance(produced, Iterable):
            items = list(produced)
            if all(isinstance(t, Tool) for t in items):
                return items
    raise ConfigError(
        f"entry point {origin}: expected a Tool, a module of @tool functions "
        "or a function returning tools"
    )


def load_entry_point_tools(group: str = "agentloom.tools") -> list[Tool]:
    """Tools every installed package publishes under the entry-point group."""
    from importlib.metadata import entry_points

    tools: list[Tool] = []
    for ep in entry_points(group=group):
        origin = f"{ep.name} = {ep.value}"
        try:
            value = ep.load()
        except Exception as exc:
            raise ConfigError(
                f"entry point {origin}: loading failed: {type(exc).__name__}: {exc}"
            ) from exc
        tools.extend(_expand(value, origin))
    return tools
