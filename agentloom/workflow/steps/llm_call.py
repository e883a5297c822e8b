"""The `llm_call` step: a thin adapter over the agent loop (spec 000).

It renders the prompt and system prompt, builds a `ModelRequest`, asks the client
factory for the step's model (its own, else `config.model`), and hands the turn to
`_turn.run_turn` (shared with the `agent` step): conversation, schema, `run_loop` with
the declared tools. The reply's text goes to `steps.<id>.output`, the loop's output (the
validated value with a `response_schema`) to the step's `output` key. Retries, timeouts
and state writes belong to the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentloom._record import FrozenRecord, frozen_record, set_field
from agentloom.errors import ConfigError
from agentloom.loop.request import build_request
from agentloom.messages import (
    NamedToolChoice,
    ReasoningConfig,
    ToolChoice,
)
from agentloom.tools import normalize_vendor_tools
from agentloom.workflow.engine.result import StepOutcome
from agentloom.workflow.lang.paths import Path as StatePath
from agentloom.workflow.lang.templates import Template
from agentloom.workflow.load.workflow import choose_model
from agentloom.workflow.schema.steps import LLMCallStep, NamedChoice
from agentloom.workflow.steps._prepare import build_toolbox, prepare_turn_parts
from agentloom.workflow.steps._turn import Turn, max_reasks, plain_messages, run_turn
from agentloom.workflow.steps.client import check_choice, client_for
from agentloom.workflow.steps.functions import declared_tools
from agentloom.workflow.steps.profiles import profile_cache

if TYPE_CHECKING:
    from collections.abc import Coroutine, Iterator

    from agentloom.providers import ModelClient
    from agentloom.structured import OutputPlan
    from agentloom.workflow.engine.context import RunContext
    from agentloom.workflow.load.loader import PrepareContext
    from agentloom.workflow.load.workflow import StepNode


@frozen_record(kw_only=False)
class Prepared(FrozenRecord):
    """An llm_call step as loading compiled it: its templates, tool choice and reasoning."""

    prompt: Template | None
    system_prompt: Template | None
    attachments: tuple[Template, ...]
    tool_choice: ToolChoice
    reasoning: ReasoningConfig | None
    structured: OutputPlan | None = None
    conversation: StatePath | None = None

    def __init__(
        self, prompt: Template | None, system_prompt: Template | None,
        attachments: tuple[Template, ...], tool_choice: ToolChoice,
        reasoning: ReasoningConfig | None, structured: OutputPlan | None = None,
        conversation: StatePath | None = None,
    ) -> None:
        set_field(self, "prompt", prompt)
        set_field(self, "system_prompt", system_prompt)
        set_field(self, "attachments", attachments)
        set_field(self, "tool_choice", tool_choice)
        set_field(self, "reasoning", reasoning)
        set_field(self, "structured", structured)
        set_field(self, "conversation", conversation)

    def templates(self) -> Iterator[tuple[tuple[str | int, ...], Template]]:
        if self.prompt is not None:
            yield ("prompt",), self.prompt
        if self.system_prompt is not None:
            yield ("system_prompt",), self.system_prompt
        for i, t in enumerate(self.attachments):
            yield ("attachments", i, "source"), t


def prepare(step: LLMCallStep, pc: PrepareContext) -> Prepared:
    th = step.thinking
    model = choose_model(step.model, step.profile, pc.document.get("profiles") or {},
                         pc.config.model if pc.config is not None else None)
    reasoning = None if th is None or not th.enabled else ReasoningConfig(
        enabled=True, budget_tokens=th.budget_tokens, level=th.level,
        capture=th.capture_reasoning)
    structured, conversation = prepare_turn_parts(step, pc, model=model, reasoning=reasoning)
    check_choice(step, pc)
    choice: ToolChoice = (NamedToolChoice(name=step.tool_choice.name)
                          if isinstance(step.tool_choice, NamedChoice) else step.tool_choice)
    return Prepared(
        prompt=None if step.prompt is None else pc.template(step.prompt, "prompt"),
        system_prompt=(None if step.system_prompt is None
                       else pc.template(step.system_prompt, "system_prompt")),
        attachments=tuple(pc.template(a.source, "attachments", i, "source")
                          for i, a in enumerate(step.attachments)),
        tool_choice=choice,
        reasoning=reasoning,
        structured=structured,
        conversation=conversation,
    )


class _Fixed:
    """What a run of an llm_call takes from its step and `config` alone: derived once
    per (step, config), not at every run."""

    __slots__ = ("cache", "capture_reasoning", "config", "declared", "max_reasks", "stream",
                 "vendor_tools")

    def __init__(self, node: StepNode, ctx: RunContext) -> None:
        step: LLMCallStep = node.step  # type: ignore[assignment]
        config = self.config = ctx.workflow.config
        self.declared: list[Any] = declared_tools(step)
        self.stream = bool(step.stream if step.stream is not None else config.stream)
        self.vendor_tools = normalize_vendor_tools(step.vendor_tools)
        self.cache = step.cache or profile_cache(step.profile, ctx)
        self.max_reasks = max_reasks(step.retry, config)
        self.capture_reasoning = step.thinking is None or step.thinking.capture_reasoning


def _fixed(node: StepNode, ctx: RunContext) -> _Fixed:
    fixed: _Fixed | None = node.memo.get("fixed")
    if fixed is None or fixed.config is not ctx.workflow.config:
        fixed = node.memo["fixed"] = _Fixed(node, ctx)
    return fixed


def execute(node: StepNode, ctx: RunContext) -> Coroutine[Any, Any, StepOutcome]:
    prep: Prepared = node.prepared
    if prep.attachments:
        return _with_media(node, ctx)
    # Without attachments nothing is awaited before the turn: the turn's coroutine is
    # the step's, one frame less on every resume.
    return run_turn(*_turn(node, ctx, ()), ctx)


async def _with_media(node: StepNode, ctx: RunContext) -> StepOutcome:
    media = await load_attachments(node.step, node.prepared, ctx)  # type: ignore[arg-type]
    return await run_turn(*_turn(node, ctx, media), ctx)


def _turn(node: StepNode, ctx: RunContext, media: tuple[Any, ...]
          ) -> tuple[Turn, ModelClient]:
    step: LLMCallStep = node.step  # type: ignore[assignment]
    prep: Prepared = node.prepared
    fixed = _fixed(node, ctx)
    model = ctx.workflow.models[node.id]
    client = client_for(node, ctx)
    scope = ctx.scope
    system_prompt = None if prep.system_prompt is None else prep.system_prompt.render(scope)
    prompt = None if prep.prompt is None else prep.prompt.render(scope)
    toolbox = build_toolbox(fixed.declared, ctx, node.id)
    # Without a conversation or a schema the request is complete here: built once with
    # its messages and tools, instead of copied by each later layer that fills one in.
    plain = prep.conversation is None and prep.structured is None
    request = build_request(
        model=model or default_model(ctx),
        messages=plain_messages(node.id, system_prompt, prompt, media) if plain else (),
        temperature=step.temperature,
        max_tokens=step.max_tokens,
        tools=toolbox if plain else None,
        tool_choice=prep.tool_choice,
        reasoning=prep.reasoning,
        stream=fixed.stream,
        vendor_tools=fixed.vendor_tools,
        cache=fixed.cache,
    )
    turn = Turn(
        step_id=node.id, request=request, system_prompt=system_prompt, prompt=prompt,
        media=media, conversation=prep.conversation, speaker=step.speaker,
        structured=prep.structured, toolbox=toolbox,
        max_iterations=step.max_tool_iterations, max_reasks=fixed.max_reasks,
        capture_reasoning=fixed.capture_reasoning, messages_ready=plain,
    )
    return turn, client


async def load_attachments(step: LLMCallStep, prep: Prepared,
                           ctx: RunContext) -> tuple[Any, ...]:
    """Read every attachment (rendered sources) at once; any failure fails the step
    before a request is sent."""
    import asyncio

    from agentloom.tools.attachments import AttachmentPolicy, AttachmentSpec, load_attachment

    sb = ctx.sandbox_config()
    policy = AttachmentPolicy.from_sandbox(None if sb is None
                                           else sb.model_dump(exclude_unset=True))
    specs = [
        AttachmentSpec(source=str(t.value(ctx.scope)), type=a.type, media_type=a.media_type,
                       fetch=a.fetch)
        for a, t in zip(step.attachments, prep.attachments, strict=True)
    ]
    if ctx.transport is None and any(
            s.fetch == "local" and s.source.lower().startswith(("http://", "https://"))
            for s in specs):
        raise ConfigError(f"step {step.id!r}: downloading an attachment needs an HTTP "
                          "transport; pass transport= to arun_workflow")
    parts = await asyncio.gather(*(
        load_attachment(spec, base_dir=ctx.workflow.base_dir, transport=ctx.transport,
                        policy=policy)
        for spec in specs
    ))
    return tuple(parts)


def default_model(ctx: RunContext) -> str:
    return str(getattr(ctx.clients, "default_model", None) or "")

