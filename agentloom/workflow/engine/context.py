"""What a running step can reach: the state, the clients, the tools, the clock, and a
way to run a block of steps as a child run (`run_child`).

The engine depends on `ClientFactory`, a one-method Protocol, so tests hand it a factory
of scripted models and the CLI hands it `agentloom.routing.runtime.Runtime`; tools come through
`ToolSource`, implemented by `agentloom.tools.ToolRegistry`. Steps that nest runs
(`subworkflow`, `map`, `on_error`, workflow functions) call `ctx.run_child` rather than
the engine: the engine hands every context its `ChildRunner`.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any, Protocol

from agentloom import tools
from agentloom._clock import SYSTEM_CLOCK, Clock
from agentloom._record import FACTORY, Record, record
from agentloom.messages import StreamEvent
from agentloom.workflow.lang.templates import Scope

if TYPE_CHECKING:
    from agentloom.loop import ToolBox
    from agentloom.providers import ModelClient
    from agentloom.workflow.engine.hooks import DurableHooks
    from agentloom.workflow.engine.result import RunResult
    from agentloom.workflow.load.workflow import Workflow


class ClientFactory(Protocol):
    """Gives the model client for a step. `model`/`provider` None mean the defaults."""

    def client(
        self,
        *,
        model: str | None,
        provider: str | None = None,
        fallback: Sequence[Any] = (),
        retry: Any = None,
        budget: Any = None,
    ) -> ModelClient: ...


class ToolSource(Protocol):
    """Where declared tools come from (`agentloom.tools.ToolRegistry`)."""

    def toolbox(self, declared: Sequence[Any], *, policy: Any = None,
                max_tools: int | None = None, error_prompt: str | None = None) -> ToolBox: ...


StepEventSink = Callable[[str, StreamEvent], None]
"""Receives (step id, stream event): how `--stream` prints text as it arrives."""


class ChildRunner(Protocol):
    """How a step runs a block of steps on the same engine (the engine implements it)."""

    async def run_child(self, parent: RunContext, child: Workflow, *, state: dict[str, Any],
                        run_id: str, scope: str | None = None) -> RunResult:
        """A subworkflow, a map item or an on_error block, on the parent's clients, tools,
        clock and transport; `scope` names its namespace in a durable run."""

    async def run_call(self, body: Workflow, *, args: dict[str, Any], run_id: str,
                       clients: ClientFactory, tools: ToolSource | None, clock: Clock,
                       transport: Any) -> tuple[RunResult, Scope, bool]:
        """A workflow function's body, called as a tool: it sees `args` and the file's
        state defaults, never the caller's live state. Returns the run, its scope and
        whether it was durable (a pause in it can then be resumed)."""


CURRENT_RUN: contextvars.ContextVar[RunContext | None] = contextvars.ContextVar(
    "agentloom_current_run", default=None)
"""The RunContext whose steps are running (set by the engine, inherited by step tasks): a
nested run shares its caller's observers and a function's body its caller's budget."""


@record
class RunContext(Record):
    """What the steps of one running workflow share: the run, its state, clients and tools."""

    workflow: Workflow
    run_id: str
    state: dict[str, Any]
    clients: ClientFactory
    tools: ToolSource | None = None
    clock: Clock = SYSTEM_CLOCK
    on_event: StepEventSink | None = None
    transport: Any = None
    """The HTTP transport attachments are downloaded with (the runtime's)."""
    step_text: dict[str, str] = field(default_factory=dict)
    scope: Scope = field(init=False)
    budget: Any = None
    """The run's `agentloom.routing.RunBudget` (cost/token caps), handed to every client."""
    steps: Any = None
    """The run's `engine.run_setup.StepCount` (`config.max_steps`), shared by nested runs."""
    summaries: dict[str, list[Any]] = field(default_factory=dict)
    """Step id -> the ConversationSummary of each attempt's loop, in order."""
    primaries: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Step id -> (provider, model) of its first candidate: a reply from elsewhere is a
    fallback."""
    observers: Any = None
    """The run's `agentloom.workflow.engine.observe.RunObservers` (traces, spans), or None."""
    durable: DurableHooks | None = None
    """The durable run this run is saved through (`engine.hooks`), or None."""
    runner: ChildRunner | None = None
    """The engine, for `run_child` (set by the engine when it starts the run)."""
    client_cache: dict[Any, ModelClient] = field(default_factory=dict)
    """The run's model clients by what was asked for: steps asking alike share one
    instead of building a new one per step (`steps.client.client_for`)."""
    redactor: Any = None
    """The run's redactor (`engine.secrets.run_redactor`), found when the run starts."""
    _policy: Any = None
    _parent_sandbox: Any = None

    def __init__(
        self, *, workflow: Workflow, run_id: str, state: dict[str, Any], clients: ClientFactory,
        tools: ToolSource | None = None, clock: Clock = SYSTEM_CLOCK,
        on_event: StepEventSink | None = None, transport: Any = None,
        step_text: dict[str, str] = FACTORY, budget: Any = None, steps: Any = None,
        summaries: dict[str, list[Any]] = FACTORY, primaries: dict[str, tuple[str, str]] = FACTORY,
        observers: Any = None, durable: DurableHooks | None = None,
        runner: ChildRunner | None = None, client_cache: dict[Any, ModelClient] = FACTORY,
        redactor: Any = None, _policy: Any = None, _parent_sandbox: Any = None,
    ) -> None:
        self.workflow = workflow
        self.run_id = run_id
        self.state = state
        self.clients = clients
        self.tools = tools
        self.clock = clock
        self.on_event = on_event
        self.transport = transport
        self.step_text = {} if step_text is FACTORY else step_text
        self.budget = budget
        self.steps = steps
        self.summaries = {} if summaries is FACTORY else summaries
        self.primaries = {} if primaries is FACTORY else primaries
        self.observers = observers
        self.durable = durable
        self.runner = runner
        self.client_cache = {} if client_cache is FACTORY else client_cache
        self.redactor = redactor
        self._policy = _policy
        self._parent_sandbox = _parent_sandbox
        self.__post_init__()

    def __post_init__(self) -> None:
        self.scope = Scope(self.state, self.step_text)
        parent = CURRENT_RUN.get()
        if parent is not None:
            # A run started inside another (a subworkflow, a `map` item, a workflow
            # function) reports to the same observers: one trace covers the whole run;
            # and a block with no sandbox of its own runs under its parent's.
            if self.observers is None:
                self.observers = parent.observers
            self._parent_sandbox = parent.sandbox_config()

    async def run_child(self, child: Workflow, *, state: dict[str, Any], run_id: str,
                        scope: str | None = None) -> RunResult:
        """Run `child` as a nested run of this one (see `ChildRunner.run_child`)."""
        if self.runner is None:
            raise RuntimeError("this run context was not started by the engine")
        return await self.runner.run_child(self, child, state=state, run_id=run_id,
                                           scope=scope)

    def sandbox_config(self) -> Any:
        """The run's `sandbox:` block: its workflow's own, else that of the run it is
        nested in (a `map` body or `on_error` block has none of its own)."""
        own = self.workflow.config.sandbox
        return own if own is not None else self._parent_sandbox

    def sandbox_policy(self) -> Any:
        """The tools' sandbox policy from the run's sandbox block, built once per run."""
        sandbox = self.sandbox_config()
        if sandbox is None:
            return None
        if self._policy is None:
            self._policy = tools.SandboxPolicy.from_config(sandbox.model_dump(exclude_unset=True))
        return self._policy
