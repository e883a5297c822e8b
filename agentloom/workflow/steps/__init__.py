"""One module per step type, each a thin adapter with two functions:

- `prepare(step, pc)` at load: compile templates and expressions, report problems with
  their line (`pc.report`, `pc.template`); returns what `execute` needs.
- `execute(node, ctx)` at run time: returns a `StepOutcome`, or raises; the engine
  handles retries, timeouts, state writes and skips.

Step modules are imported on first use (`STEP_KINDS[kind]`), so loading and running a
workflow pays only for the step types it has. `library.LIBRARY` hands them to the loader
and the engine. Shared parts: `client` (which model client a step gets), `profiles`,
`functions` (workflow functions as tools), `tooling` (a run's tool source), `_turn`
(one model turn, on the one agent loop), `_prepare`, `_structured_step`.

May import: `engine/` (its public modules: results, the run context's interface, nested
runs), `load/`, `schema/`, `lang/` and the layers below; never `durable/`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any

_MODULES: dict[str, str] = {
    "llm_call": "llm_call",
    "tool": "tool",
    "router": "router",
    "subworkflow": "subworkflow",
    "map": "map",
    "approval_gate": "approval_gate",
    "ask": "ask",
    "agent": "agent",
}


class _StepKinds(Mapping[str, ModuleType]):
    """Step type -> its module, imported the first time it is asked for."""

    def __init__(self) -> None:
        self._loaded: dict[str, ModuleType] = {}

    def __getitem__(self, kind: str) -> ModuleType:
        module = self._loaded.get(kind)
        if module is None:
            module = importlib.import_module(f"{__name__}.{_MODULES[kind]}")
            self._loaded[kind] = module
        return module

    def get(self, kind: str, default: Any = None) -> Any:
        # Mapping's own `get` goes through `__getitem__` and a KeyError check: this is
        # asked at every step's run.
        module = self._loaded.get(kind)
        if module is None:
            return self[kind] if kind in _MODULES else default
        return module

    def __iter__(self) -> Iterator[str]:
        return iter(_MODULES)

    def __len__(self) -> int:
        return len(_MODULES)


STEP_KINDS: Mapping[str, ModuleType] = _StepKinds()
