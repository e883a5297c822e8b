"""The one helper behind every package face's lazy names.

A package's `__init__` lists its public names; heavy ones (aiohttp, optional extras, the
workflow schema) are named with the module that defines them and imported on first
access, so `import agentloom` and each package stay cheap. A face writes

    __getattr__ = lazy_getattr(__name__, {"AiohttpTransport": "agentloom.http._aiohttp"},
                               globals())

and a name, once resolved, is kept in the package's namespace (the next access is a plain
attribute read). No I/O until a name is asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, table: Mapping[str, str],
                 namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module `__getattr__` resolving each name of `table` (name -> defining module)."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
