"""Starting runs: `arun_workflow`/`run_workflow` set up a run's context (budget, runtime
configuration, observers, a durable run's hooks) and hand it to the scheduler in
`run.py`; `Engine` is the `ChildRunner` that nested runs (subworkflows, map items,
on_error blocks, workflow functions) start through."""

from __future__ import annotations

import asyncio
import random
from typing import TYPE_CHECKING, Any

from agentloom._clock import SYSTEM_CLOCK, Clock
from agentloom.loop.observer import new_id
from agentloom.workflow.engine.context import (
    CURRENT_RUN,
    ClientFactory,
    RunContext,
    StepEventSink,
    ToolSource,
)
from agentloom.workflow.engine.hooks import call_hooks
from agentloom.workflow.engine.nested import MAX_DEPTH, RUN_DEPTH, NestingError, deep_copy
from agentloom.workflow.engine.observe import observe_run
from agentloom.workflow.engine.result import RunResult
from agentloom.workflow.engine.run import _library, _Run
from agentloom.workflow.engine.run_setup import run_budget
from agentloom.workflow.lang.templates import Scope

if TYPE_CHECKING:
    from agentloom.workflow.engine.hooks import DurableHooks
    from agentloom.workflow.engine.observe import RunObservers
    from agentloom.workflow.load.workflow import Workflow


async def arun_workflow(
    workflow: Workflow,
    *,
    clients: ClientFactory,
    state: dict[str, Any] | None = None,
    tools: ToolSource | None = None,
    clock: Clock = SYSTEM_CLOCK,
    rng: random.Random | None = None,
    on_event: StepEventSink | None = None,
    run_id: str | None = None,
    transport: Any = None,
    durable: DurableHooks | None = None,
    observers: RunObservers | None = None,
) -> RunResult:
    """Run a loaded workflow to its end. `state` is merged over the file's `state`;
    `transport` is the HTTP transport `http_request`, attachment downloads and approval
    notices use (default: the `clients` runtime's own, when it has one); `observers`
    (traces, spans) watch every step's loop and the run's start and end, and a nested run
    inherits its parent's.

    Never raises for a step's failure: the result's status and per-step results say what
    happened. Cancelling the caller cancels the run."""
    merged = deep_copy(workflow.definition.state)
    if durable is not None and durable.resumed is not None:
        merged = deep_copy(durable.resumed.state)
    if state:
        merged.update(state)
    if transport is None:
        # A `Runtime` has one (created on first use); a bare client factory may not.
        transport = getattr(clients, "transport", None)
    library = _library(workflow)
    args = (workflow, merged, clients, clock, rng, on_event, run_id, transport, durable,
            observers)
    # Built-ins, MCP servers (started once, closed at the end) and workflow functions.
    opened = library.run_tools(workflow, tools=tools, clients=clients, transport=transport,
                               clock=clock, runner=ENGINE)
    if opened is None:
        return await _arun(*args, tools=library.plain_tools(workflow, tools, transport))
    async with opened as run_tools:
        return await _arun(*args, tools=run_tools)


async def _arun(workflow: Workflow, state: dict[str, Any], clients: ClientFactory,
                clock: Clock, rng: random.Random | None, on_event: StepEventSink | None,
                run_id: str | None, transport: Any, durable: DurableHooks | None,
                observers: RunObservers | None, *, tools: ToolSource | None) -> RunResult:
    if durable is not None:  # write-ahead checkpoints: see durable/run.py
        clients, tools = durable.wrap_clients(clients), durable.wrap_tools(tools)
        run_id = durable.run_id
        bound = durable.bind()
    parent = CURRENT_RUN.get()  # the run this one is nested in, if any
    if workflow.definition.providers and hasattr(clients, "use_providers"):
        # As `agentloom run` does; a nested file may add providers, not change the run's.
        # A refused entry is a WorkflowProblems naming the file's line and the field.
        workflow.add_providers_to(clients, replace=parent is None)
    ctx = RunContext(workflow=workflow, run_id=run_id or new_id(), state=state,
                     clients=clients, tools=tools, clock=clock, on_event=on_event,
                     transport=transport, observers=observers, runner=ENGINE,
                     durable=durable if durable is not None
                     else parent.durable if parent is not None else None)
    if parent is not None:  # its caps hold within the parent's, which counts its spending
        ctx.budget = run_budget(workflow.config, within=parent.budget)
        ctx.steps = parent.steps
    token = CURRENT_RUN.set(ctx)  # what a workflow function called in this run inherits
    try:
        run = _Run(ctx, rng or _shared_rng(), durable).run()
        observers = ctx.observers
        if observers is not None and observers.observers:  # else one frame less to resume
            run = observe_run(ctx, run, parent)
        return await run
    finally:
        CURRENT_RUN.reset(token)
        if durable is not None:
            durable.unbind(bound)


_SHARED_RNG: list[random.Random] = []


def _shared_rng() -> random.Random:
    # Seeding a new Random reads OS entropy (~20 µs, a tenth of a one-step run); the rng
    # only draws retry jitter, so runs given none share one.
    if not _SHARED_RNG:
        _SHARED_RNG.append(random.Random())
    return _SHARED_RNG[0]


def run_workflow(workflow: Workflow, **kwargs: Any) -> RunResult:
    """The sync face of `arun_workflow`, for callers without an event loop."""
    return asyncio.run(arun_workflow(workflow, **kwargs))


class Engine:
    """The engine's `ChildRunner`: how steps start nested runs (`RunContext.run_child`)."""

    async def run_child(self, parent: RunContext, child: Workflow, *, state: dict[str, Any],
                        run_id: str, scope: str | None = None) -> RunResult:
        depth = RUN_DEPTH.get()
        if depth >= MAX_DEPTH:
            raise NestingError(f"nested runs deeper than {MAX_DEPTH} (at {run_id}): is a "
                               "workflow running itself?")
        hooks = parent.durable
        token = RUN_DEPTH.set(depth + 1)
        try:
            return await arun_workflow(
                child, clients=parent.clients, state=state, tools=parent.tools,
                clock=parent.clock, on_event=parent.on_event, run_id=run_id,
                transport=parent.transport,
                durable=hooks.child(scope) if scope and hooks is not None else None)
        finally:
            RUN_DEPTH.reset(token)

    async def run_call(self, body: Workflow, *, args: dict[str, Any], run_id: str,
                       clients: ClientFactory, tools: ToolSource | None, clock: Clock,
                       transport: Any) -> tuple[RunResult, Scope, bool]:
        parent = CURRENT_RUN.get()
        # In a durable run the body is durable too: its model calls and tool calls are
        # journalled (the caller's wrapped clients and tools) under the call's scope.
        durable = call_hooks.get()
        if durable is not None and parent is not None:
            clients, tools = parent.clients, parent.tools
        ctx = RunContext(workflow=body, run_id=run_id, state=deep_copy(body.definition.state),
                         clients=clients, tools=tools, clock=clock, transport=transport,
                         runner=self, durable=durable)
        ctx.scope.args = args
        if parent is not None:
            ctx.budget, ctx.steps = parent.budget, parent.steps
        token = CURRENT_RUN.set(ctx)
        scope_token = call_hooks.set(None)
        bound = durable.bind() if durable is not None else None
        try:
            result = await _Run(ctx, random.Random(), durable).run()
        finally:
            if durable is not None and bound is not None:
                durable.unbind(bound)
            call_hooks.reset(scope_token)
            CURRENT_RUN.reset(token)
        return result, ctx.scope, durable is not None


ENGINE = Engine()


