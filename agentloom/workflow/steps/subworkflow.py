"""The `subworkflow` step: run another workflow (a file, or one written inline) as a step.

The child is loaded with the parent, at load: `workflow_path` resolves against the
directory of the file that names it (never the process's), a missing or broken child is
a problem of the parent's file at the step's line, and a cycle of files is refused.

State: by default the child starts from a copy of the parent's state (over its own
`state` defaults); with `isolated_state: true` it sees only its own defaults. `input`
(templates over the parent's state) is laid on top either way. Nothing is written back
but the step's result: the child's final state, or with `return_keys` a mapping of just
those keys (as the public AgentLoom's subworkflow returns; a missing key fails). A failed
child fails the step with the child's first failure; its tokens and cost roll up.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentloom.errors import WorkflowError
from agentloom.workflow.engine.nested import (
    NestingError,
    block_under,
    deep_copy,
    first_failure,
    load_block,
    load_child_file,
    problems_text,
    raise_if_paused,
    rolled_usage,
)
from agentloom.workflow.engine.result import RunStatus, StepOutcome
from agentloom.workflow.lang.paths import MISSING, lookup, parse_path
from agentloom.workflow.lang.templates import Template

if TYPE_CHECKING:
    from collections.abc import Iterator

    from agentloom.workflow.engine.context import RunContext
    from agentloom.workflow.load.loader import PrepareContext
    from agentloom.workflow.load.workflow import StepNode, Workflow
    from agentloom.workflow.schema.other_steps import SubworkflowStep


class SubworkflowFailed(WorkflowError):
    """The child run ended without success; `usage` is what it spent anyway."""

    def __init__(self, message: str, *, usage: Any = None) -> None:
        super().__init__(message)
        self.usage = usage


@dataclass(slots=True, frozen=True)
class Prepared:
    child: Workflow | None
    source: str
    """The child's file, or `<inline>`: for messages and `visualize`."""
    inputs: tuple[tuple[str, Any], ...]
    """(key, a Template for text values, else the literal value)."""

    def templates(self) -> Iterator[tuple[tuple[str | int, ...], Template]]:
        for key, t in self.inputs:
            if isinstance(t, Template):
                yield ("input", key), t


def prepare(step: SubworkflowStep, pc: PrepareContext) -> Prepared:
    child: Workflow | None = None
    source = "<inline>"
    try:
        if step.workflow_path is not None:
            path = Path(step.workflow_path)
            if not path.is_absolute():
                path = pc.base_dir / path
            source = str(path)
            if not path.is_file():
                pc.report(f"subworkflow file is not a regular file: {path}" if path.exists()
                          else f"subworkflow file not found: {path}", "workflow_path")
            else:
                child = load_child_file(path, parent=pc.filename, library=pc.library)
        elif step.workflow_inline is not None:
            child = load_block(step.workflow_inline,
                               filename=f"{pc.filename} (step {step.id!r} workflow_inline)",
                               base_dir=pc.base_dir, library=pc.library)
    except NestingError as exc:
        pc.report(exc.message, "workflow_path" if step.workflow_path else "workflow_inline")
    except WorkflowError as exc:
        at = "workflow_path" if step.workflow_path else "workflow_inline"
        pc.report(f"the subworkflow has problems: {problems_text(exc)}", at)
    inputs = tuple((key, pc.template(value, "input", key) if isinstance(value, str)
                    else value)
                   for key, value in (step.input or {}).items())
    if child is not None and step.return_keys and step.isolated_state:
        # Only an isolated child's state is known here; a shared one holds the parent's.
        known = set(child.definition.state) | set(step.input or {}) | {
            n.output_path[0] for n in child.nodes.values() if n.output_path}
        for i, key in enumerate(step.return_keys):
            if key.removeprefix("state.").split(".")[0] not in known:
                pc.report(f"return key {key!r} is neither in the subworkflow's state nor "
                          "written by any of its steps", "return_keys", i)
    return Prepared(child=child, source=source, inputs=inputs)


async def execute(node: StepNode, ctx: RunContext) -> StepOutcome:
    step: SubworkflowStep = node.step  # type: ignore[assignment]
    prep: Prepared = node.prepared
    if prep.child is None:  # load reported why; only reachable through a bypassed loader
        raise WorkflowError(f"step {node.id!r}: subworkflow {prep.source} is not loaded")
    state: dict[str, Any] = {} if step.isolated_state else deep_copy(ctx.state)
    for key, given in prep.inputs:
        # A whole-value template hands over the parent's own object: the child gets a
        # copy, so its writes below it stay its own (the parent's state is never changed
        # through `input`).
        state[key] = deep_copy(given.value(ctx.scope) if isinstance(given, Template)
                               else given)
    child = prep.child
    if ctx.workflow.config.stream and not child.config.stream:
        # A streamed run shows every step's text as it comes, its subworkflows' too; the
        # file's other defaults are its own.
        child = block_under(node, "child", child, ctx.workflow, names=("stream",))
    result = await ctx.run_child(child, state=state, run_id=f"{ctx.run_id}/{node.id}",
                                 scope=node.id)
    raise_if_paused(result)
    usage = rolled_usage([result])
    if result.status is not RunStatus.SUCCESS:
        raise SubworkflowFailed(
            f"subworkflow {prep.child.name!r} of step {node.id!r} ended "
            f"{result.status.value}: {first_failure(result)}", usage=usage)
    value: Any
    if step.return_keys:
        value = {}
        for key in step.return_keys:
            path = parse_path(key.removeprefix("state."))
            got = lookup(result.state, path)
            if got is MISSING:
                raise WorkflowError(f"step {node.id!r}: the subworkflow ended without "
                                    f"state key {key!r} (return_keys)")
            value[key.removeprefix("state.")] = got
    else:
        value = result.state  # the child's whole final state, as the public AgentLoom's
    return StepOutcome(value=value, usage=usage)
