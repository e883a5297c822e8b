"""The `llm_call` step: a thin adapter over the agent loop (spec 000).

It renders the prompt and system prompt, builds a `ModelRequest`, asks the client
factory for the step's model (its own, else `config.model`), and runs `run_loop` with the
declared tools. The reply's text goes to `steps.<id>.output`, the loop's output to the
step's `output` key. Retries, timeouts and state writes belong to the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentloom.errors import ConfigError
from agentloom.loop import LoopOptions, run_loop
from agentloom.messages import (
    Message,
    ModelRequest,
    NamedToolChoice,
    ReasoningConfig,
    StreamEvent,
    ToolChoice,
)
from agentloom.workflow._result import StepOutcome
from agentloom.workflow._schema_steps import LLMCallStep, NamedChoice
from agentloom.workflow._templates import Template

if TYPE_CHECKING:
    from collections.abc import Iterator

    from agentloom.workflow._context import RunContext
    from agentloom.workflow._loader import PrepareContext
    from agentloom.workflow._workflow import StepNode


@dataclass(slots=True, frozen=True)
class Prepared:
    prompt: Template | None
    system_prompt: Template | None
    attachments: tuple[Template, ...]
    tool_choice: ToolChoice
    reasoning: ReasoningConfig | None

    def templates(self) -> Iterator[tuple[tuple[str | int, ...], Template]]:
        if self.prompt is not None:
            yield ("prompt",), self.prompt
        if self.system_prompt is not None:
            yield ("system_prompt",), self.system_prompt
        for i, t in enumerate(self.attachments):
            yield ("attachments", i, "source"), t


def prepare(step: LLMCallStep, pc: PrepareContext) -> Prepared:
    th = step.thinking
    model = step.model or (pc.config.model if pc.config is not None else None)
    if th is not None and th.enabled and th.budget_tokens is None and model \
            and model.startswith("claude"):
        pc.report(f"thinking on a Claude model ({model}) needs budget_tokens", "thinking")
    choice: ToolChoice = (NamedToolChoice(name=step.tool_choice.name)
                          if isinstance(step.tool_choice, NamedChoice) else step.tool_choice)
    return Prepared(
        prompt=None if step.prompt is None else pc.template(step.prompt, "prompt"),
        system_prompt=(None if step.system_prompt is None
                       else pc.template(step.system_prompt, "system_prompt")),
        attachments=tuple(pc.template(a.source, "attachments", i, "source")
                          for i, a in enumerate(step.attachments)),
        tool_choice=choice,
        reasoning=None if th is None or not th.enabled else ReasoningConfig(
            enabled=True, budget_tokens=th.budget_tokens, level=th.level,
            capture=th.capture_reasoning),
    )


async def execute(node: StepNode, ctx: RunContext) -> StepOutcome:
    step: LLMCallStep = node.step  # type: ignore[assignment]
    prep: Prepared = node.prepared
    config = ctx.workflow.config
    _refuse_unbuilt(step)
    if prep.prompt is None:
        raise ConfigError(f"step {node.id!r}: an llm_call needs a prompt")
    messages: list[Message] = []
    if prep.system_prompt is not None:
        messages.append(Message.system(prep.system_prompt.render(ctx.scope)))
    media = await _attachments(step, prep, ctx) if prep.attachments else ()
    messages.append(Message.user(prep.prompt.render(ctx.scope), *media))
    model = step.model or config.model
    client = ctx.client(model, step.provider or config.provider, retry=_no_client_retry())
    stream = step.stream if step.stream is not None else config.stream
    request = ModelRequest(
        model=model or _default_model(ctx),
        messages=tuple(messages),
        temperature=step.temperature,
        max_tokens=step.max_tokens,
        tool_choice=prep.tool_choice,
        reasoning=prep.reasoning,
        stream=bool(stream),
    )
    toolbox = None
    if step.tools:
        if ctx.tools is None:
            raise ConfigError(f"step {node.id!r} declares tools, but no tool registry is set")
        from agentloom.tools import DeclaredTool

        declared = [DeclaredTool(name=t.name, description=t.description,
                                 parameters=t.parameters) for t in step.tools]
        toolbox = ctx.tools.toolbox(declared, policy=ctx.sandbox_policy())
    sink = None
    if ctx.on_event is not None and stream:
        on_event, step_id = ctx.on_event, node.id

        def sink(event: StreamEvent) -> None:
            on_event(step_id, event)

    result = await run_loop(
        client, request, tools=toolbox, on_event=sink,
        options=LoopOptions(max_iterations=step.max_tool_iterations, run_id=ctx.run_id,
                            step_id=node.id),
    )
    response = result.response
    capture = step.thinking is None or step.thinking.capture_reasoning
    return StepOutcome(
        value=result.output, text=result.text, usage=result.usage,
        model=response.model, provider=response.provider,
        finish_reason=result.finish_reason,
        time_to_first_token=response.time_to_first_token,
        reasoning_content=response.reasoning if capture else None,
        iterations=result.iterations,
    )


async def _attachments(step: LLMCallStep, prep: Prepared, ctx: RunContext) -> tuple[Any, ...]:
    """Read every attachment (rendered sources) at once; any failure fails the step
    before a request is sent."""
    import asyncio
    from pathlib import Path

    from agentloom.media import AttachmentPolicy, AttachmentSpec, load_attachment

    sb = ctx.workflow.config.sandbox
    policy = AttachmentPolicy(
        allow_network=True if sb is None or sb.allow_network is None else sb.allow_network,
        allowed_domains=tuple(sb.allowed_domains) if sb is not None and sb.allowed_domains
        else None,
        sandbox_enabled=sb is not None and sb.enabled is not False,
        readable_paths=tuple(Path(p) for p in [*(sb.readable_paths or []),
                                                *(sb.allowed_paths or [])])
        if sb is not None else (),
    )
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
        load_attachment(spec, base_dir=Path.cwd(), transport=ctx.transport, policy=policy)
        for spec in specs
    ))
    return tuple(parts)


_NO_RETRY: list[Any] = []


def _no_client_retry() -> Any:
    # The engine retries the whole step (spec 000: a retry re-runs the loop), so the
    # client makes one attempt per candidate instead of retrying underneath.
    if not _NO_RETRY:
        from agentloom.routing import RetryPolicy

        _NO_RETRY.append(RetryPolicy(max_retries=0))
    return _NO_RETRY[0]


def _default_model(ctx: RunContext) -> str:
    return str(getattr(ctx.clients, "default_model", None) or "")


def _refuse_unbuilt(step: LLMCallStep) -> None:
    # These fields load (files that use them validate) but their runtime lands with the
    # modules that own them; until then a run fails clearly instead of ignoring them.
    for name in ("response_schema", "conversation"):
        if getattr(step, name):
            raise ConfigError(f"step {step.id!r}: '{name}' is not supported by this build yet")


