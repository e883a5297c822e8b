"""The `agent` step: run an agent of the top-level `agents:` map for one turn.

An agent is a model with its tools and its rules, defined once (`AgentDef`) and run by
name. The step adds only what a turn needs: a prompt, a `conversation` (in which the
agent speaks under its own name), attachments and an `output` key. Each turn builds the
one `agentloom.Agent` from the definition (`AgentPlan.agent`): its request comes from
`Agent.request` and its loop from `Agent.arun_loop`, inside the shared step turn
(`_turn.run_turn`), with three agent rules:
agents don't stream; an agent's instructions apply to its own turns (in a conversation
they are not stored); and an agent with tools and an `output_schema` keeps its tools,
with the final answer validated against the schema and re-asked when it doesn't fit.

`AgentSpec` converts between the two spellings of an agent (a YAML `agents:` entry and
the keyword arguments of `agentloom.Agent`): `AgentSpec.from_definition(...)`,
`AgentSpec.from_agent(agent)`, `spec.to_agent(client)` and `spec.to_definition()`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import TYPE_CHECKING, Any, Literal

from agentloom.errors import ConfigError, TemplateError
from agentloom.loop.agent import Agent
from agentloom.structured import OutputPlan, ResponseSchemaSpec
from agentloom.workflow.engine.result import StepOutcome
from agentloom.workflow.lang.paths import Path as StatePath
from agentloom.workflow.lang.templates import Template, compile_template
from agentloom.workflow.load.workflow import choose_model
from agentloom.workflow.schema.agents import AGENT_NAME, AgentDef
from agentloom.workflow.schema.other_steps import AgentStep
from agentloom.workflow.steps._prepare import build_toolbox, check_conversation
from agentloom.workflow.steps._structured_step import (
    load_protocol,
    prepare_structured,
)
from agentloom.workflow.steps._turn import Turn, max_reasks, run_turn
from agentloom.workflow.steps.client import client_for
from agentloom.workflow.steps.llm_call import default_model, load_attachments
from agentloom.workflow.steps.profiles import profile_cache

if TYPE_CHECKING:
    from collections.abc import Iterator

    from agentloom.loop import ToolBox
    from agentloom.providers import ModelClient
    from agentloom.workflow.engine.context import RunContext
    from agentloom.workflow.load.loader import PrepareContext
    from agentloom.workflow.load.workflow import StepNode, Workflow


@dataclass(slots=True, frozen=True, kw_only=True)
class AgentSpec:
    """An agent as data: what the YAML `agents:` map and `agentloom.Agent` both hold."""

    name: str
    model: str | None = None
    provider: str | None = None
    profile: str | None = None
    instructions: str | None = None
    tools: tuple[str, ...] = ()
    """Tool names, resolved against a tool registry when the agent runs."""
    output_schema: ResponseSchemaSpec | None = None
    max_tool_iterations: int = 5
    temperature: float | None = None
    max_tokens: int | None = None
    description: str | None = None

    @classmethod
    def from_definition(cls, name: str, definition: AgentDef | dict[str, Any], *,
                        base_dir: str | FsPath | None = None) -> AgentSpec:
        """The spec of a YAML agent (its `AgentDef`, or the raw mapping)."""
        d = definition if isinstance(definition, AgentDef) else AgentDef.model_validate(
            definition)
        schema = None
        if d.output_schema is not None:
            schema = ResponseSchemaSpec.from_dict(d.output_schema.spec_dict(),
                                                  base_dir=base_dir or FsPath.cwd())
        return cls(
            name=name, model=d.model, provider=d.provider, profile=d.profile,
            instructions=d.instructions, tools=tuple(t.name for t in d.declared),
            output_schema=schema, max_tool_iterations=d.limits.max_tool_iterations,
            temperature=d.settings.temperature, max_tokens=d.settings.max_tokens,
            description=d.description,
        )

    @classmethod
    def from_agent(cls, agent: Agent) -> AgentSpec:
        """The spec of a Python Agent (its tools by name)."""
        tools = tuple(t.name for t in agent.tools.specs) if agent.tools is not None else ()
        return cls(
            name=agent.name or "agent", model=agent.model, instructions=agent.system_prompt,
            tools=tools, output_schema=agent.output_schema,
            max_tool_iterations=agent.max_iterations,
            temperature=agent.temperature, max_tokens=agent.max_tokens,
        )

    def to_agent(self, client: ModelClient, *, tools: ToolBox | Any = None,
                 **kwargs: Any) -> Agent:
        """A Python Agent with this spec, answering through `client`. `tools` are the
        callables or ToolBox behind `self.tools` (the registry is the caller's); keyword
        arguments (a `model=` for a client that carries none, say) win over the spec."""
        settings: dict[str, Any] = {
            "model": self.model, "system_prompt": self.instructions, "name": self.name,
            "max_iterations": self.max_tool_iterations, "temperature": self.temperature,
            "max_tokens": self.max_tokens, "output_schema": self.output_schema,
        }
        settings = {k: v for k, v in settings.items() if v is not None}  # Agent's defaults
        settings.update(kwargs)
        return Agent(client, tools=tools if tools is not None else (), **settings)

    def to_definition(self) -> dict[str, Any]:
        """The YAML mapping of this agent (for an `agents:` map)."""
        out: dict[str, Any] = {}
        for key in ("model", "provider", "profile", "instructions", "description"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.tools:
            out["tools"] = list(self.tools)
        spec = self.output_schema
        if spec is not None:
            block: dict[str, Any] = {"type": spec.type}
            if spec.type == "pydantic":
                block["model"] = spec.model
            elif spec.schema is not None:
                block["schema"] = spec.schema
            for key in ("name", "description"):
                if getattr(spec, key) is not None:
                    block[key] = getattr(spec, key)
            if not spec.strict:
                block["strict"] = False
            out["output_schema"] = block
        out["limits"] = {"max_tool_iterations": self.max_tool_iterations}
        settings = {k: getattr(self, k) for k in ("temperature", "max_tokens")
                    if getattr(self, k) is not None}
        if settings:
            out["settings"] = settings
        return out


def agent_from_workflow(workflow: Workflow, name: str, client: ModelClient, *,
                        tools: ToolBox | Any = None, **kwargs: Any) -> Agent:
    """The Python Agent of the workflow's agent `name` (its model, instructions, limits,
    settings and output schema), answering through `client`.

        wf = load_workflow("review.yaml")
        reviewer = agent_from_workflow(wf, "reviewer", runtime.client(model="gpt-4o"),
                                       tools=[word_count])
    """
    agents = workflow.definition.agents
    if name not in agents:
        known = ", ".join(sorted(agents)) or "none"
        raise ConfigError(f"workflow {workflow.name!r} has no agent {name!r} (agents: {known})")
    spec = AgentSpec.from_definition(name, agents[name], base_dir=FsPath.cwd())
    return spec.to_agent(client, tools=tools, **kwargs)


@dataclass(slots=True, frozen=True, kw_only=True)
class _Choice:
    """What the client choice reads of a step, taken from the agent (model, provider,
    profile) and the step (retry), so agents get profiles, fallback and budgets too."""

    id: str
    model: str | None
    provider: str | None
    profile: str | None
    retry: Any
    fallback: Any = None


@dataclass(slots=True, frozen=True)
class _ChoiceNode:
    id: str
    step: _Choice


@dataclass(slots=True, frozen=True, kw_only=True)
class AgentPlan:
    """An agent made ready at load: its definition, instructions and schema plan."""

    name: str
    definition: AgentDef
    instructions: Template | None = None
    structured: OutputPlan | None = None

    def agent(self, client: ModelClient, *, model: str | None, toolbox: ToolBox | None,
              instructions: str | None, max_reasks: int,
              cache: Literal["auto"] | None = None) -> Agent:
        """The agent as the one `Agent` object, for one turn of a run: its instructions
        rendered, the run's tools and client, its limits and schema plan from the file."""
        d = self.definition
        return Agent(client, model=model or None, tools=toolbox, system_prompt=instructions,
                     name=self.name, max_iterations=d.limits.max_tool_iterations,
                     deadline_seconds=None, temperature=d.settings.temperature,
                     max_tokens=d.settings.max_tokens, output_schema=self.structured,
                     max_reasks=max_reasks, cache=cache)


@dataclass(slots=True, frozen=True)
class Prepared:
    agent: AgentPlan | None
    prompt: Template | None
    attachments: tuple[Template, ...]
    conversation: StatePath | None
    extra: tuple[tuple[tuple[str | int, ...], Template], ...] = field(default=())

    def templates(self) -> Iterator[tuple[tuple[str | int, ...], Template]]:
        if self.prompt is not None:
            yield ("prompt",), self.prompt
        for i, t in enumerate(self.attachments):
            yield ("attachments", i, "source"), t


def prepare(step: AgentStep, pc: PrepareContext) -> Prepared:
    plans: dict[str, AgentPlan] = getattr(pc, "agent_plans", None) or {}
    plan = plans.get(step.agent)
    if plan is None and step.agent not in (getattr(pc, "agent_names", None) or ()):
        import difflib

        hint = difflib.get_close_matches(step.agent, sorted(plans), n=1)
        extra = f"; did you mean {hint[0]!r}?" if hint else ""
        known = ", ".join(sorted(plans)) or "none (add a top-level agents: map)"
        pc.report(f"unknown agent {step.agent!r}{extra}; agents: {known}", "agent")
    return Prepared(
        agent=plan,
        prompt=None if step.prompt is None else pc.template(step.prompt, "prompt"),
        attachments=tuple(pc.template(a.source, "attachments", i, "source")
                          for i, a in enumerate(step.attachments)),
        conversation=check_conversation(step.conversation, pc),
    )


async def execute(node: StepNode, ctx: RunContext) -> StepOutcome:
    step: AgentStep = node.step  # type: ignore[assignment]
    prep: Prepared = node.prepared
    if prep.agent is None:
        raise ConfigError(f"step {node.id!r}: agent {step.agent!r} is not defined")
    plan = prep.agent
    d = plan.definition
    config = ctx.workflow.config
    media: tuple[Any, ...] = ()
    if prep.attachments:
        media = await load_attachments(step, prep, ctx)  # type: ignore[arg-type]
    model = ctx.workflow.models[node.id]
    client = client_for(_ChoiceNode(node.id, _Choice(  # type: ignore[arg-type]
        id=node.id, model=d.model, provider=d.provider, profile=d.profile,
        retry=step.retry)), ctx)
    if model is None and d.profile is not None:
        model = getattr(getattr(client, "candidates", (None,))[0], "model", None)
    system_prompt = None if plan.instructions is None else plan.instructions.render(ctx.scope)
    toolbox = build_toolbox(d.declared, ctx, node.id)
    reasks = max_reasks(step.retry, config)
    agent = plan.agent(client, model=model or default_model(ctx), toolbox=toolbox,
                       instructions=system_prompt, max_reasks=reasks,
                       cache=d.cache or profile_cache(d.profile, ctx))
    turn = Turn(
        step_id=node.id, request=agent.request(()),  # agent turns arrive in one piece
        system_prompt=system_prompt,
        prompt=None if prep.prompt is None else prep.prompt.render(ctx.scope),
        media=media, conversation=prep.conversation,
        speaker=plan.name if prep.conversation is not None else None,
        structured=plan.structured, toolbox=toolbox,
        max_iterations=d.limits.max_tool_iterations, max_reasks=reasks,
        agent_name=plan.name, agent=agent,
    )
    return await run_turn(turn, client, ctx)


def prepare_agents(checker: Any) -> dict[str, AgentPlan]:
    """Each valid agent of the file, ready to run; problems go to `checker.err`."""
    agents: dict[str, AgentDef] = getattr(checker, "agents", {}) or {}
    if not agents:
        return {}
    data = checker.data if isinstance(checker.data, dict) else {}
    found_agents = data.get("agents")
    raw_agents: dict[str, Any] = found_agents if isinstance(found_agents, dict) else {}
    config = checker.definition_config
    providers = data.get("providers") if isinstance(data.get("providers"), dict) else None
    plans: dict[str, AgentPlan] = {}

    def line(name: str, *path: str) -> int | None:
        found = checker.marks.line_of(raw_agents, name)
        node: Any = raw_agents.get(name)
        for part in path:
            if not isinstance(node, dict):
                break
            found = checker.marks.line_of(node, part) or found
            node = node.get(part)
        return found  # type: ignore[no-any-return]

    for name, d in agents.items():
        where = f"agents.{name}"
        if not AGENT_NAME.match(name):
            checker.err(f"agent name {name!r} takes letters, digits, _ and -, up to 64 "
                        "characters (it is the agent's speaker name)", line(name), where)
            continue
        profiles = data.get("profiles")
        if d.profile is not None and not (isinstance(profiles, dict) and d.profile in profiles):
            checker.err(f"{where}.profile: unknown profile {d.profile!r}", line(name, "profile"),
                        f"{where}.profile")
        instructions = None
        if d.instructions is not None:
            try:
                instructions = compile_template(d.instructions)
            except TemplateError as exc:
                checker.problems.append(TemplateError(
                    f"{where}.instructions: {exc.message}", file=checker.filename,
                    line=line(name, "instructions"), field=f"{where}.instructions"))
        structured = None
        if d.output_schema is not None:
            model = choose_model(d.model, d.profile, profiles if isinstance(profiles, dict)
                                 else {}, config.model if config is not None else None)
            provider = d.provider or (config.provider if config is not None else None)
            try:
                structured = prepare_structured(
                    d.output_schema, name, protocol=load_protocol(provider, model, providers),
                    model=model, with_tools=bool(d.tools))
            except ConfigError as exc:
                checker.err(f"{where}.output_schema: {exc}", line(name, "output_schema"),
                            f"{where}.output_schema")
        plans[name] = AgentPlan(name=name, definition=d, instructions=instructions,
                                structured=structured)
    return plans
