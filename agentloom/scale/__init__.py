"""Batch runs: one workflow over many inputs, in this process or on a Ray cluster.

Job: batch runs: bounded input readers, local and Ray executors. May import: the layers
up to `testing` (tests/test_layers.py holds the rule).

    b = batch("flow.yaml", "inputs.jsonl", output="out.jsonl", concurrency=32,
              env=os.environ)
    async for result in b:          # BatchItemResult, as runs finish
        print(result.id, result.status)
    b.stats                          # totals and every failed input with its reason

Inputs: JSONL, CSV or a folder (see `_inputs` for the state each gives). Output: one JSON
line per input. `resume=True` skips what the output already has finished. With
`store="runs.db"` (or `postgresql://...`) every run is durable: `resume` also skips what
the store finished and resumes interrupted runs from their last checkpoint, and workers
sharing a PostgreSQL store split the inputs, never running one twice. Executors:
`local` (default) and `ray` (an optional extra, imported only when used). Anything
beyond workflows plugs in through `RunnerFactory`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentloom._lazy import lazy_getattr

if TYPE_CHECKING:
    from agentloom.scale._batch import Batch as Batch
    from agentloom.scale._batch import batch as batch
    from agentloom.scale._inputs import InputProblem as InputProblem
    from agentloom.scale._inputs import input_kind as input_kind
    from agentloom.scale._inputs import read_inputs as read_inputs
    from agentloom.scale._local import LocalExecutor as LocalExecutor
    from agentloom.scale._progress import JsonProgress as JsonProgress
    from agentloom.scale._progress import PlainProgress as PlainProgress
    from agentloom.scale._progress import RichProgress as RichProgress
    from agentloom.scale._progress import choose_progress as choose_progress
    from agentloom.scale._ray import RayExecutor as RayExecutor
    from agentloom.scale._resume import read_finished as read_finished
    from agentloom.scale._summary import BatchStats as BatchStats
    from agentloom.scale._types import BatchInput as BatchInput
    from agentloom.scale._types import BatchItemResult as BatchItemResult
    from agentloom.scale._types import RunnerFactory as RunnerFactory
    from agentloom.scale._types import RunOne as RunOne
    from agentloom.scale._workflow_adapter import WorkflowRunnerFactory as WorkflowRunnerFactory

_LAZY: dict[str, str] = {
    "Batch": "agentloom.scale._batch",
    "batch": "agentloom.scale._batch",
    "InputProblem": "agentloom.scale._inputs",
    "input_kind": "agentloom.scale._inputs",
    "read_inputs": "agentloom.scale._inputs",
    "LocalExecutor": "agentloom.scale._local",
    "JsonProgress": "agentloom.scale._progress",
    "PlainProgress": "agentloom.scale._progress",
    "RichProgress": "agentloom.scale._progress",
    "choose_progress": "agentloom.scale._progress",
    "RayExecutor": "agentloom.scale._ray",
    "read_finished": "agentloom.scale._resume",
    "BatchStats": "agentloom.scale._summary",
    "BatchInput": "agentloom.scale._types",
    "BatchItemResult": "agentloom.scale._types",
    "RunnerFactory": "agentloom.scale._types",
    "RunOne": "agentloom.scale._types",
    "WorkflowRunnerFactory": "agentloom.scale._workflow_adapter",
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
