"""The one place the batch code touches the workflow engine.

`WorkflowRunnerFactory` holds the workflow's YAML text (not a path: a Ray worker on
another machine may not have the file), the environment the runtime is built from, and
the state every input starts from. `open()` loads the workflow and builds one `Runtime`
in the process it runs in, and closes that runtime when the runner is closed. With
`store` (a path or URL) every run is a durable run there (see `_durable`); each process
or Ray actor opens the store once and holds it for its runs.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentloom.errors import ConfigError, WorkflowError
from agentloom.routing.runtime import Runtime
from agentloom.scale._durable import DurableBatchRunner, derive_batch_id
from agentloom.scale._types import (
    PAUSED_STATUSES,
    BatchInput,
    BatchItemResult,
    RunOne,
    redacted_line,
)
from agentloom.store import new_worker_id, open_store
from agentloom.workflow import arun_workflow, load_workflow_text
from agentloom.workflow.durable.run import workflow_hash
from agentloom.workflow.engine.observe import RunObservers
from agentloom.workflow.engine.secrets import workflow_redactor
from agentloom.workflow.load.yaml_source import load_yaml, read_source

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
    store: str | None = None
    """The checkpoint store (path, sqlite:///..., postgresql://...); None: runs are not
    durable."""
    batch_id: str | None = None
    """Run ids are `<batch_id>.<input id>`; None with a store: derived from the workflow."""
    lease_seconds: float = 60.0
    """How long a worker's claim on a run lasts unless renewed (it is renewed every third
    of it): a worker killed mid-run frees its runs this long after."""
    retry_failed: bool = False
    """With a store: an input whose run failed runs again as a new attempt."""

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None,
                  state: Mapping[str, Any] | None = None,
                  overrides: Mapping[str, Any] | None = None) -> WorkflowRunnerFactory:
        p = Path(path)
        text = read_source(p)  # size and encoding checked
        return cls(text=text, filename=str(p), base_dir=str(p.resolve().parent),
                   env=runtime_env(env or {}, key_names(text)), state=dict(state or {}),
                   overrides=dict(overrides or {}))

    def check(self) -> None:
        """Load the workflow here and now, so a broken file fails before any run."""
        self.load()

    def load(self) -> Any:
        """The workflow, loaded from `text` (with the overrides applied)."""

        wf = load_workflow_text(self.text, filename=self.filename,  # checks see --model
                                base_dir=Path(self.base_dir) if self.base_dir else None,
                                config=self.overrides)
        return wf.with_overrides(**self.overrides) if self.overrides else wf

    def open(self) -> Any:
        return _open(self)

    @property
    def workflow_hash(self) -> str:
        return workflow_hash(self.text.encode("utf-8"))

    @property
    def workflow_path(self) -> str:
        p = Path(self.filename)
        if not p.is_absolute() and self.base_dir:
            p = Path(self.base_dir) / p.name
        return str(p)


def runtime_env(env: Mapping[str, str], names: Iterable[str] = ()) -> dict[str, str]:
    """What of `env` the runs need: the runtime's variables and `names` (the keys the
    workflow names: `api_key_env`, a gate's `url_env`, `secret_env`, `headers_env`)."""
    wanted = frozenset(names)
    return {k: v for k, v in env.items() if k.startswith(ENV_PREFIXES) or k in wanted}


def key_names(text: str) -> list[str]:
    """The variables the workflow names for its runs to read: its providers'
    `api_key_env`, and a gate's `notify.url_env`, `secret_env` and `headers_env`
    anywhere in the file, nested steps and functions included (none when the YAML
    doesn't parse: loading the file reports that, by line)."""
    try:
        doc, _ = load_yaml(text, "workflow")  # bounded as the loader's own read is
    except WorkflowError:
        return []
    names: list[str] = []
    stack: list[Any] = [doc]
    while stack:  # a loop, not recursion: the document is as deep as the file makes it
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("api_key_env", "secret_env", "url_env") and isinstance(value, str):
                    names.append(value)
                elif key == "headers_env" and isinstance(value, dict):
                    names += [v for v in value.values() if isinstance(v, str)]
                else:
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)
    return names


@asynccontextmanager
async def _open(factory: WorkflowRunnerFactory) -> AsyncIterator[RunOne]:
    wf = factory.load()
    runtime = Runtime.from_env(factory.env)
    try:
        wf.add_providers_to(runtime)  # a refused entry: file:line and field

        if factory.store is not None:
            async with _durable_runner(factory, wf, runtime) as durable_one:
                yield durable_one
            return

        async def run_one(inp: BatchInput) -> BatchItemResult:
            t0 = time.perf_counter()
            state = {**factory.state, **inp.state}
            # What the results file gets is redacted as `agentloom run --json` is: the
            # redactor marks the secret steps when the run starts, and learns as it goes.
            redactor = workflow_redactor(wf, state, factory.env)
            result = await arun_workflow(wf, clients=runtime, state=state,
                                         observers=RunObservers(redactor=redactor))
            data = redacted_line(result, redactor)
            error = data.get("error")
            if data["status"] in PAUSED_STATUSES:
                # Without a store nothing was saved to resume: say so, as `run
                # --no-checkpoint` does, rather than leave a pause nobody can answer.
                error = (f"{error or 'paused'}; it can't be resumed: this batch has no "
                         "store (run it with --store to resume paused runs)")
            return BatchItemResult(
                id=inp.id, status=data["status"], outputs=data.get("outputs") or {},
                tokens=data.get("tokens"), cost_usd=data.get("cost_usd"),
                error=error, source=inp.source, run_id=data.get("run_id"),
                duration_seconds=round(time.perf_counter() - t0, 4))

        yield run_one
    finally:
        await runtime.aclose()


@asynccontextmanager
async def _durable_runner(factory: WorkflowRunnerFactory, wf: Any,
                          runtime: Any) -> AsyncIterator[RunOne]:
    assert factory.store is not None
    store = open_store(factory.store)
    await store.__aenter__()  # type: ignore[attr-defined]
    try:
        if not hasattr(store, "claim_run"):
            raise ConfigError(f"the store {factory.store} cannot hand runs to workers "
                              "(no claim_run); use SQLite or PostgreSQL")
        whash = factory.workflow_hash
        runner = DurableBatchRunner(
            store=store, store_url=factory.store, workflow=wf, workflow_hash=whash,
            batch_id=factory.batch_id or derive_batch_id(factory.workflow_path, whash),
            workflow_path=factory.workflow_path, runtime=runtime,
            base_state=dict(factory.state), env=dict(factory.env),
            overrides=dict(factory.overrides), worker_id=new_worker_id(),
            lease_seconds=factory.lease_seconds, retry_failed=factory.retry_failed)
        yield runner.run
    finally:
        await store.close()
