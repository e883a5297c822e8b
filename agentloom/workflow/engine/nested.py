"""Workflows inside workflows: what `subworkflow`, `map` and `on_error` share.

Each of them runs a block of steps as a child run on the same engine, so retries,
timeouts, routers and skips behave exactly as at the top. Loading follows the files a
workflow names through a context-local stack, so a file that (directly or through
others) names itself is a load error with the chain of files, and nesting deeper than
`MAX_DEPTH` is refused at load and, for what only shows at run time, at run time too.
A child's token counts and cost roll up into the step that ran it. The child is loaded
with its parent's step library and run through `RunContext.run_child`.
"""

from __future__ import annotations

import dataclasses
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agentloom.errors import WorkflowError
from agentloom.workflow.lang.frozen import is_frozen
from agentloom.workflow.load.includes import MAX_EXPANDED_STEPS, include_scope
from agentloom.workflow.load.loader import load_workflow, load_workflow_data
from agentloom.workflow.schema.workflow import BLOCK_DEFAULTS

if TYPE_CHECKING:
    from agentloom.messages import Usage
    from agentloom.workflow.engine.result import RunResult
    from agentloom.workflow.load.workflow import StepLibrary, StepNode, Workflow

MAX_DEPTH = 8
"""Nested runs (subworkflows, map bodies, error handlers) deeper than this are refused."""

_LOADING: ContextVar[tuple[str, ...]] = ContextVar("agentloom_loading", default=())
RUN_DEPTH: ContextVar[int] = ContextVar("agentloom_run_depth", default=0)
"""How many nested runs the running step is inside (the engine counts them)."""
NESTED_USAGE: ContextVar[list[Any] | None] = ContextVar("agentloom_nested_usage", default=None)
"""Set by a step around its tool loop: each function body called in it adds its model
usage here, so the step's tokens and cost cover every call it made (spec 000)."""


class NestingError(WorkflowError):
    """A workflow that names itself, or nesting past MAX_DEPTH."""


def load_child_file(path: Path, *, parent: str, library: StepLibrary) -> Workflow:
    """Load the workflow file a `subworkflow` step names. Raises `NestingError` on a
    cycle of files or too deep a chain, `WorkflowError` (with the child's problems) for
    a bad or missing file."""
    key = str(path.resolve())
    stack = _LOADING.get() or (str(Path(parent).resolve()),)
    if key in stack:
        chain = [*stack[stack.index(key):], key]
        raise NestingError("subworkflow cycle: " + " -> ".join(Path(p).name for p in chain))
    if len(stack) >= MAX_DEPTH:
        raise NestingError(f"subworkflows nest deeper than {MAX_DEPTH} files: "
                           + " -> ".join(Path(p).name for p in (*stack, key)))
    with include_scope() as includes:
        done = includes.loaded.get((key, len(stack)))
        if done is None:  # the first step of this load to name the file, at this depth
            token = _LOADING.set((*stack, key))
            includes.counts.append(0)
            try:
                child = load_workflow(path, library=library)
                done = (child, len(child.nodes) + includes.counts[-1])
            except WorkflowError as exc:
                done = (exc, 0)
            finally:
                includes.counts.pop()
                _LOADING.reset(token)
            includes.loaded[(key, len(stack))] = done
        loaded, steps = done
        includes.counts[-1] += steps
        if includes.counts[-1] > MAX_EXPANDED_STEPS:
            raise NestingError(
                f"subworkflows expand to more than {MAX_EXPANDED_STEPS} steps: with "
                f"{Path(path).name} named here, {_file_of(stack)} stands for "
                f"{includes.counts[-1]} (each file counted as often as it is named)")
    if isinstance(loaded, WorkflowError):
        raise loaded
    return loaded


def _file_of(stack: tuple[str, ...]) -> str:
    """What is being loaded, for a message: a file's name, or an inline block's
    (`flow.yaml (step 'inner' workflow_inline)`), not its `<block ...>` marker."""
    return Path(stack[-1].removeprefix("<block ").removesuffix(">")).name


def load_block(data: dict[str, Any], *, filename: str, base_dir: Path,
               library: StepLibrary) -> Workflow:
    """Load an inline workflow or a block of steps (a `map` body, an `on_error`)."""
    stack = _LOADING.get()
    if len(stack) >= MAX_DEPTH * 4:
        raise NestingError(f"blocks nest deeper than {MAX_DEPTH * 4} levels in {filename}")
    token = _LOADING.set((*stack, f"<block {filename}>"))
    try:
        return load_workflow_data(data, filename=filename, base_dir=base_dir,
                                  library=library)
    finally:
        _LOADING.reset(token)


def block_under(node: StepNode, key: str, block: Workflow, parent: Workflow,
                names: tuple[str, ...] = BLOCK_DEFAULTS) -> Workflow:
    """`block` (loaded with its file's config: `PrepareContext.block`) with the step
    defaults its run's workflow has now: `Workflow.with_overrides` (`--stream`, `batch
    --model`, the Python API) changes those after load. Made once per step and config.
    `names`: the defaults taken (a subworkflow file keeps its own but `stream`)."""
    config, own = parent.config, block.config
    kept = node.memo.get(key)
    if kept is not None and kept[0] is config:
        derived: Workflow = kept[1]
        return derived
    changes = {name: getattr(config, name) for name in names
               if getattr(config, name) != getattr(own, name)}
    derived = block.with_overrides(**changes) if changes else block
    node.memo[key] = (config, derived)
    return derived


def problems_text(exc: WorkflowError) -> str:
    """A child's problems on one line, for the parent's report: all of them, or past
    `PROBLEMS_TEXT_CHARS` the first and how many more (each level of nesting would
    otherwise repeat every problem below it once per step naming the file)."""
    errors = getattr(exc, "errors", None)
    if not errors:
        return str(exc)
    text = "; ".join(str(e) for e in errors)
    if len(text) <= PROBLEMS_TEXT_CHARS or len(errors) == 1:
        return text
    return f"{errors[0]}; and {len(errors) - 1} more"


PROBLEMS_TEXT_CHARS = 1_000


def rolled_usage(results: list[RunResult]) -> Usage | None:
    """The usage of several child runs together. The cost is None when any model call's
    cost is unknown: a partial sum would read as the whole."""
    total: Usage | None = None
    unknown_cost = False
    for result in results:
        for step in result.steps.values():
            u = step.usage
            if u is None:
                continue
            unknown_cost = unknown_cost or u.cost_usd is None
            total = u if total is None else total + u
    if total is not None and unknown_cost:
        total = dataclasses.replace(total, cost_usd=None)
    return total


def sum_usage(usages: list[Usage]) -> Usage | None:
    """Several usages together; None for none. An unknown cost anywhere stays unknown."""
    if not usages:
        return None
    total = usages[0]
    for u in usages[1:]:
        total = total + u
    if any(u.cost_usd is None for u in usages):
        total = dataclasses.replace(total, cost_usd=None)
    return total


class HoldsPause(Protocol):
    """A child run's result, or what a map keeps of one: its pause signal, if any."""

    @property
    def pause(self) -> Any: ...


def raise_if_paused(result: HoldsPause) -> None:
    """A pause inside a child surfaces unchanged: the child run keeps its pause signal
    on its result (or on what a map keeps of it), and the step that ran the child raises
    that same signal."""
    pause = result.pause
    if isinstance(pause, BaseException):
        raise pause


def first_failure(result: RunResult) -> str:
    for r in result.steps.values():
        if r.status.value == "failed" and r.error:
            return f"step {r.id!r} failed: {r.error}"
    return result.error or result.status.value


def deep_copy(value: Any) -> Any:
    """A copy of `value` that the caller may change: new dicts and lists all the way
    down, but for frozen ones (`lang.frozen`, the state a `map` item shares with its
    siblings), which nothing changes in place and are shared as they are."""
    if is_frozen(value):
        return value
    if isinstance(value, dict):
        return {k: deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [deep_copy(v) for v in value]
    return value
