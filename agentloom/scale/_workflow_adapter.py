"""The one place the batch code touches the workflow engine.

`WorkflowRunnerFactory` holds the workflow's YAML text (not a path: a Ray worker on
another machine may not have the file), the environment the runtime is built from, and
the state every input starts from. `open()` loads the workflow and builds one `Runtime`
in the process it runs in, and closes that runtime when the runner is closed.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentloom.scale._types import BatchInput, BatchItemResult, RunOne

ENV_PREFIXES = ("OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_", "OLLAMA_", "AGENTLOOM_")
"""The variables `Runtime.from_env` reads; only these are shipped to Ray workers."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowRunnerFactory:
    text: str
    filename: str = "<workflow>"
    base_dir: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    """Under every input's own state (the input's keys win)."""
    overrides: dict[str, Any] = field(default_factory=dict)
    """`Workflow.with_overrides` arguments: model, provider, timeout."""

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None,
                  state: Mapping[str, Any] | None = None,
                  overrides: Mapping[str, Any] | None = None) -> WorkflowRunnerFactory:
        p = Path(path)
        return cls(text=p.read_text(encoding="utf-8"), filename=str(p),
                   base_dir=str(p.resolve().parent), env=runtime_env(env or {}),
                   state=dict(state or {}), overrides=dict(overrides or {}))

    def check(self) -> None:
        """Load the workflow here and now, so a broken file fails before any run."""
        self._load()

    def _load(self) -> Any:
        from agentloom.workflow import load_workflow_text

        wf = load_workflow_text(self.text, filename=self.filename,
                                base_dir=Path(self.base_dir) if self.base_dir else None)
        return wf.with_overrides(**self.overrides) if self.overrides else wf

    def open(self) -> Any:
        return _open(self)


def runtime_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(ENV_PREFIXES)}


@asynccontextmanager
async def _open(factory: WorkflowRunnerFactory) -> AsyncIterator[RunOne]:
    from agentloom.runtime import Runtime
    from agentloom.workflow import arun_workflow

    wf = factory._load()
    runtime = Runtime.from_env(factory.env)
    try:
        providers = getattr(wf.definition, "providers", None) or {}
        if providers:
            runtime.add_providers({
                name: p.model_dump(exclude_none=True, exclude_defaults=True, by_alias=True)
                for name, p in providers.items()
            })

        async def run_one(inp: BatchInput) -> BatchItemResult:
            t0 = time.perf_counter()
            result = await arun_workflow(wf, clients=runtime, state={**factory.state,
                                                                      **inp.state})
            data = result.to_dict()
            return BatchItemResult(
                id=inp.id, status=data["status"], outputs=data.get("outputs") or {},
                tokens=data.get("tokens"), cost_usd=data.get("cost_usd"),
                error=data.get("error"), source=inp.source, run_id=data.get("run_id"),
                duration_seconds=round(time.perf_counter() - t0, 4))

        yield run_one
    finally:
        await runtime.aclose()
