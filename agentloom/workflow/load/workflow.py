"""A loaded workflow: the validated definition plus what the engine needs, computed once.

Each `StepNode` holds its dependencies and dependents, its compiled templates or
expressions (`prepared`, from its step module) and its `output` path, so that running a
step never parses anything. `Workflow` is immutable in spirit: overrides from the CLI
(`--model`, `--provider`, `--timeout`, `--stream`) make a new one.

`StepLibrary` is how the loader and the engine reach the step types without importing
them: the caller above both (`agentloom.workflow.load_workflow`) hands one in, and the
loaded workflow keeps it, so nested workflows load and run with the same step types.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Coroutine, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import field
from pathlib import Path as FsPath
from typing import TYPE_CHECKING, Any, Protocol

from agentloom._record import FACTORY, Record, record
from agentloom.errors import ConfigError, WorkflowError
from agentloom.routing import endpoint_from_config
from agentloom.workflow.lang.paths import Path
from agentloom.workflow.load.problems import WorkflowProblems

if TYPE_CHECKING:
    from agentloom.workflow.schema.steps import StepBase
    from agentloom.workflow.schema.workflow import WorkflowDefinition


class StepLibrary(Protocol):
    """The step types, as the loader and the engine use them."""

    def prepare(self, node: StepNode, pc: Any, function_args: frozenset[str] | None) -> None:
        """Compile one step at load (`node.prepared`, `node.handler`); problems go to
        `pc.report`. `function_args` are the args a function body's steps may read."""

    def prepare_agents(self, checker: Any) -> dict[str, Any]:
        """The file's `agents:`, each ready to run; problems go to `checker`."""

    def check_tooling(self, checker: Any, definition: WorkflowDefinition,
                      nodes: dict[str, StepNode], base_dir: FsPath) -> Any:
        """Load the workflow functions and check every tool name the file declares."""

    def execute(self, node: StepNode, ctx: Any) -> Coroutine[Any, Any, Any]:
        """Run one attempt of a step: a `StepOutcome`, or it raises."""

    def run_tools(self, workflow: Workflow, *, tools: Any, clients: Any, transport: Any,
                  clock: Any, runner: Any) -> AbstractAsyncContextManager[Any] | None:
        """The run's tool source as an async context (MCP servers, workflow functions), or
        None when the file adds nothing to `tools` (then `plain_tools` gives it)."""

    def plain_tools(self, workflow: Workflow, tools: Any, transport: Any) -> Any:
        """The run's tool source for a file without functions and MCP servers."""


def choose_model(own: str | None, profile: str | None, profiles: Mapping[str, Any],
                 default: str | None) -> str | None:
    """The model name a step asks for, by the one precedence: its own `model` (an `agent`
    step's: its agent's), its profile's `model`, the workflow's `config.model` (which the
    CLI's `--model` replaces); None leaves it to the runtime's default model."""
    if own:
        return own
    if profile is not None:
        raw = profiles.get(profile)
        named = raw.get("model") if isinstance(raw, Mapping) else None
        if isinstance(named, str) and named:
            return named
    return default or None


@record(kw_only=False)
class StepNode(Record):
    """One step of a loaded workflow: its model, its dependencies and what loading prepared."""

    id: str
    type: str
    step: StepBase
    line: int | None
    deps: tuple[str, ...]
    dependents: list[str] = field(default_factory=list)
    prepared: Any = None
    output_path: Path | None = None
    policy: Any = None
    """The step's RetryPolicy, resolved on first run (config.max_retries is fixed by then)."""
    handler: Any = None
    """The loaded `on_error` block (a Workflow), or None."""
    memo: dict[str, Any] = field(default_factory=dict)
    """What a step type derives from its fields once, not per run (its client key, its
    tool declarations), each entry checked against the `config` it was derived under."""

    def __init__(
        self, id: str, type: str, step: StepBase, line: int | None, deps: tuple[str, ...],
        dependents: list[str] = FACTORY, prepared: Any = None, output_path: Path | None = None,
        policy: Any = None, handler: Any = None, memo: dict[str, Any] = FACTORY,
    ) -> None:
        self.id = id
        self.type = type
        self.step = step
        self.line = line
        self.deps = deps
        self.dependents = [] if dependents is FACTORY else dependents
        self.prepared = prepared
        self.output_path = output_path
        self.policy = policy
        self.handler = handler
        self.memo = {} if memo is FACTORY else memo


@record(kw_only=False)
class Workflow(Record):
    """A loaded and checked workflow: its definition and its steps as a graph."""

    definition: WorkflowDefinition
    nodes: dict[str, StepNode]
    """In file order."""
    file: str | None = None
    base_dir: FsPath = field(default_factory=FsPath)
    warnings: list[str] = field(default_factory=list)
    """`file:line: warning: ...` lines: not errors, but worth a look (`validate` shows them)."""
    functions: dict[str, Any] = field(default_factory=dict)
    """Workflow functions by name (`steps.functions.FunctionDef`), checked at load."""
    tool_refs: list[Any] = field(default_factory=list)
    """Every tool name a step declares, with its line (`steps.functions.ToolRef`): checked
    against the run's registry before anything runs."""
    library: StepLibrary | None = None
    """The step types it was loaded with: the engine runs its steps with them."""
    provider_lines: dict[str, int | None] = field(default_factory=dict)
    """Each `providers:` entry's line in the file, for what only a run can refuse of it
    (`add_providers_to`)."""
    models: dict[str, str | None] = field(init=False)
    """Step id -> the model name it asks for (`choose_model`), chosen once here (and
    again for the copy `with_overrides` makes): steps read it, they don't choose."""

    def __init__(
        self, definition: WorkflowDefinition, nodes: dict[str, StepNode], file: str | None = None,
        base_dir: FsPath = FACTORY, warnings: list[str] = FACTORY,
        functions: dict[str, Any] = FACTORY, tool_refs: list[Any] = FACTORY,
        library: StepLibrary | None = None, provider_lines: dict[str, int | None] = FACTORY,
    ) -> None:
        self.definition = definition
        self.nodes = nodes
        self.file = file
        self.base_dir = FsPath() if base_dir is FACTORY else base_dir
        self.warnings = [] if warnings is FACTORY else warnings
        self.functions = {} if functions is FACTORY else functions
        self.tool_refs = [] if tool_refs is FACTORY else tool_refs
        self.library = library
        self.provider_lines = {} if provider_lines is FACTORY else provider_lines
        self.__post_init__()

    def __post_init__(self) -> None:
        definition = self.definition
        profiles, agents = definition.profiles, definition.agents
        default = definition.config.model
        models: dict[str, str | None] = {}
        for node_id, node in self.nodes.items():
            source: Any = node.step
            if node.type == "agent":
                source = agents.get(getattr(node.step, "agent", ""))
            models[node_id] = choose_model(getattr(source, "model", None),
                                           getattr(source, "profile", None), profiles,
                                           default)
        self.models = models

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def config(self) -> Any:
        return self.definition.config

    def provider_configs(self) -> dict[str, dict[str, Any]]:
        """The file's `providers:` entries as a runtime takes them (`Runtime.use_providers`)."""
        return {name: p.as_config() for name, p in self.definition.providers.items()}

    def add_providers_to(self, clients: Any, *, replace: bool = True) -> None:
        """`clients.use_providers(self.provider_configs(), replace=replace)`, an entry
        the runtime refuses raised as a `WorkflowProblems` naming the file, the entry's
        line and its field. The load checked every entry but for one thing a runtime
        decides: an entry without a `base_url` takes the one of the endpoint of its name
        that the runtime holds, if any (a nested file's entry that would change the
        run's is refused here too)."""
        for name, config in self.provider_configs().items():
            try:
                clients.use_providers({name: config}, replace=replace)
            except ConfigError as exc:
                raise WorkflowProblems([self._provider_error(name, exc)]) from None

    def provider_problems(self) -> list[WorkflowError]:
        """What `add_providers_to` would refuse of the entries on a runtime holding no
        endpoint of their names, as `agentloom run`'s (it holds the vendors' alone, each
        with its own base_url): for `validate`, which has no runtime."""
        out: list[WorkflowError] = []
        for name, config in self.provider_configs().items():
            try:
                endpoint_from_config(name, config, env={})
            except ConfigError as exc:
                out.append(self._provider_error(name, exc))
        return out

    def _provider_error(self, name: str, exc: ConfigError) -> WorkflowError:
        message = str(exc)
        place = message.partition(": ")[0]
        field = place if place.startswith(f"providers.{name}") else f"providers.{name}"
        return WorkflowError(message, file=self.file, line=self.provider_lines.get(name),
                             field=field)

    def with_overrides(self, **config_changes: Any) -> Workflow:
        """A copy whose `config` has these fields changed; None values are ignored.
        `model=` changes config.model only: a step's own model (or its profile's) still
        wins, and each step's model is chosen again for the copy."""
        changes = {k: v for k, v in config_changes.items() if v is not None}
        if not changes:
            return self
        config = self.definition.config.model_copy(update=changes)
        definition = self.definition.model_copy(update={"config": config})
        return dataclasses.replace(self, definition=definition)

    def layers(self) -> list[list[str]]:
        """Steps grouped by depth (for display only: the engine has no layer barrier)."""
        depth: dict[str, int] = {}
        for node_id in self.topological_order():
            node = self.nodes[node_id]
            depth[node_id] = 1 + max((depth[d] for d in node.deps), default=-1)
        out: list[list[str]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
        for node_id in self.nodes:
            out[depth[node_id]].append(node_id)
        return out

    def topological_order(self) -> list[str]:
        pending = {n.id: len(n.deps) for n in self.nodes.values()}
        order = [n for n, c in pending.items() if c == 0]
        i = 0
        while i < len(order):
            for dep in self.nodes[order[i]].dependents:
                pending[dep] -= 1
                if pending[dep] == 0:
                    order.append(dep)
            i += 1
        return order
