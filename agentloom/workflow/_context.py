"""What a running step can reach: the state, the clients, the tools, the clock.

The engine depends on `ClientFactory`, a one-method Protocol, so tests hand it a factory
of scripted models and the CLI hands it `agentloom.runtime.Runtime`; tools come through
`ToolSource`, implemented by `agentloom.tools.ToolRegistry`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from agentloom._clock import SYSTEM_CLOCK, Clock
from agentloom.messages import StreamEvent
from agentloom.workflow._templates import Scope

if TYPE_CHECKING:
    from agentloom.loop import ToolBox
    from agentloom.providers._base import ModelClient
    from agentloom.workflow._workflow import Workflow


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


@dataclass(slots=True, kw_only=True)
class RunContext:
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
    summaries: dict[str, list[Any]] = field(default_factory=dict)
    """Step id -> the ConversationSummary of each attempt's loop, in order."""
    primaries: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Step id -> (provider, model) of its first candidate: a reply from elsewhere is a
    fallback."""
    observers: Any = None
    """The run's `agentloom.workflow._observe.RunObservers` (traces, spans), or None."""
    _policy: Any = None
    _parent_sandbox: Any = None
    _clients: dict[tuple[str | None, str | None], ModelClient] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.scope = Scope(self.state, self.step_text)
        from agentloom.workflow._functions import CURRENT_RUN

        parent = CURRENT_RUN.get()
        if parent is not None:
            # A run started inside another (a subworkflow, a `map` item, a workflow
            # function) reports to the same observers: one trace covers the whole run.
            if self.observers is None:
                self.observers = parent.observers
            self._parent_sandbox = parent.sandbox_config()

    def client(self, model: str | None, provider: str | None, retry: Any = None) -> ModelClient:
        """One client per (model, provider) for the run: steps on the same model share
        it instead of building a new one per step."""
        key = (model, provider)
        client = self._clients.get(key)
        if client is None:
            client = self.clients.client(model=model, provider=provider, retry=retry)
            self._clients[key] = client
        return client

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
            from agentloom.tools import SandboxPolicy

            self._policy = SandboxPolicy.from_config(sandbox.model_dump(exclude_unset=True))
        return self._policy
