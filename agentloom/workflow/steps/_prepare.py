"""Load-time preparation shared by the `llm_call` and `agent` steps.

What a model step can get wrong in its file is found here, with the line of the field:
reasoning settings a Claude model refuses, a response schema that can't be built, a
forced-tool schema on a model that can't be forced, a `conversation` that is not a
state key or whose initial state holds something else. The tool box is built at run
time (`build_toolbox`), because the tool registry belongs to the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentloom import conversation as conversations
from agentloom import tools as toolkit
from agentloom.errors import ConfigError
from agentloom.messages import ReasoningConfig
from agentloom.workflow.lang.paths import MISSING, PathError, lookup
from agentloom.workflow.steps._structured_step import (
    load_protocol,
    prepare_structured,
)
from agentloom.workflow.steps._turn import conversation_path
from agentloom.workflow.steps.profiles import toolbox_options

if TYPE_CHECKING:
    from agentloom.loop import ToolBox
    from agentloom.structured import OutputPlan
    from agentloom.workflow.engine.context import RunContext
    from agentloom.workflow.lang.paths import Path
    from agentloom.workflow.load.loader import PrepareContext
    from agentloom.workflow.schema.steps import ResponseSchema, ToolDecl


def prepare_turn_parts(
    step: Any, pc: PrepareContext, *, model: str | None, reasoning: ReasoningConfig | None
) -> tuple[OutputPlan | None, Path | None]:
    """Check an llm_call's reasoning, schema and conversation; return the schema plan
    and the conversation's state path (None where the step has none, or on a problem,
    which is reported)."""
    if reasoning is not None and model:
        # The Anthropic wire module (~27 M instructions to import) only for a step that
        # thinks: an OpenAI run never loads it otherwise.
        from agentloom.providers.anthropic import check_reasoning_settings
        try:
            check_reasoning_settings(model, step.max_tokens, reasoning)
        except ConfigError as exc:
            pc.report(str(exc), "thinking")
    structured = None
    if step.response_schema is not None:
        structured = structured_plan(step.response_schema, step.id, pc, "response_schema",
                                     provider=step.provider, model=model)
        if structured is not None and structured.forced_tool and reasoning is not None \
                and _protocol(step.provider, model, pc) == "anthropic":
            pc.report("Claude refuses a forced tool call with thinking on: drop mode: tool "
                      "or turn thinking off", "response_schema", "mode")
    return structured, check_conversation(step.conversation, pc)


def _protocol(provider: str | None, model: str | None, pc: PrepareContext) -> str | None:
    config = pc.config
    provider = provider or (config.provider if config is not None else None)
    document = getattr(pc, "document", None) or {}
    providers = document.get("providers") if isinstance(document, Mapping) else None
    return load_protocol(provider, model, providers if isinstance(providers, Mapping) else None)


def structured_plan(
    block: ResponseSchema, name: str, pc: PrepareContext, field: str, *,
    provider: str | None, model: str | None, with_tools: bool = False,
) -> OutputPlan | None:
    protocol = _protocol(provider, model, pc)
    try:
        return prepare_structured(block, name, protocol=protocol, model=model,
                                  with_tools=with_tools)
    except ConfigError as exc:
        pc.report(str(exc), field)
        return None


def check_conversation(key: str | None, pc: PrepareContext) -> Path | None:
    if key is None:
        return None
    try:
        path = conversation_path(key)
    except (ConfigError, PathError) as exc:
        pc.report(str(exc), "conversation")
        return None
    document = getattr(pc, "document", None) or {}
    state = document.get("state") if isinstance(document, Mapping) else None
    if isinstance(state, Mapping):
        current = lookup(state, path)
        if current is not MISSING:
            try:
                conversations.Conversation.from_state(current, key=key)
            except ConfigError as exc:
                pc.report(f"{exc} (in the file's state)", "conversation")
                return None
    return path


def build_toolbox(decls: Sequence[ToolDecl] | None, ctx: RunContext,
                  step_id: str) -> ToolBox | None:
    """The declared tools, from the run's registry, under the run's sandbox policy."""
    if not decls:
        return None
    registry = ctx.tools
    if registry is None:
        raise ConfigError(f"step {step_id!r} declares tools, but no tool registry is set")
    policy = ctx.sandbox_policy()
    # A caller that passes the same registry to every run gets the same tool box for
    # the step: it is reused while the registry's revision holds (a tool added, replaced
    # or removed in between is seen), and never with a sandbox policy (its tools are
    # rebuilt under the run's policy). A step without a profile takes its tool options
    # from `config` alone, so they are derived again only for another config.
    node = ctx.workflow.nodes.get(step_id)
    memo = node.memo if node is not None and policy is None \
        and type(registry) is toolkit.ToolRegistry else None
    config = ctx.workflow.config
    plain = node is None or getattr(node.step, "profile", None) is None
    options: dict[str, Any] | None = None
    if memo is not None:
        hit = memo.get("toolbox")
        if hit is not None and hit[0] is registry and hit[1] is decls \
                and hit[2] == registry.revision:  # type: ignore[attr-defined]
            if plain and hit[5] is config:
                box: ToolBox = hit[4]
                return box
            options = toolbox_options(step_id, ctx)
            if hit[3] == options:
                box = hit[4]
                return box
    if options is None:
        options = toolbox_options(step_id, ctx)
    declared = [toolkit.DeclaredTool(name=t.name, description=t.description,
                                     parameters=t.parameters) for t in decls]
    box = registry.toolbox(declared, policy=policy, **options)
    _check_room(box, node, options.get("max_tools"))
    if memo is not None and isinstance(registry, toolkit.ToolRegistry) \
            and all(registry.get(d.name) is not None for d in decls):
        # Group names (`server`) are not reused.
        memo["toolbox"] = (registry, decls, registry.revision, options, box, config)
    return box


def _check_room(box: ToolBox, node: Any, limit: int | None) -> None:
    """Vendor tools travel in the same call, so they count against `max_tools` too (the
    load-time check counts names; here an MCP server's tools are known)."""
    vendor = len(getattr(node.step, "vendor_tools", None) or ()) if node is not None else 0
    if limit is not None and vendor and len(box.specs) + vendor > limit:
        raise ConfigError(
            f"{len(box.specs) + vendor} tools declared ({vendor} of them vendor tools), "
            f"but the profile allows at most {limit} per call")
