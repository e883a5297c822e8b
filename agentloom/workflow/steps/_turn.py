"""One model turn of a step, shared by `llm_call` and `agent`: messages, loop, write-back.

Both step types differ only in where their settings come from (the step, or the agent
it names); everything after that is here, once: the messages to send (a plain system +
user pair, or a conversation turn planned by `agentloom.conversation`), the schema put
on the request, the one `run_loop` with its validator and re-asks, and, when the step
succeeded, the conversation written back to the state.

Speaker names travel on the messages (`Message.name`); each provider's encoder shapes
them for its wire (OpenAI's `name`, a `[alice]` prefix elsewhere), so a fallback to a
provider of another protocol still gets the right form.

The conversation is written by the step itself, just before it returns: the engine
commits the step's `output` right after, and a step that raises writes nothing.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agentloom import conversation as conversations
from agentloom._record import Record, record
from agentloom.errors import ConfigError, StructuredOutputError
from agentloom.loop import ConversationStatus, LoopOptions, run_loop
from agentloom.messages import FinishEvent, Message, ModelRequest, StreamEvent, TextDelta, Usage
from agentloom.providers import structured_mode
from agentloom.workflow.engine.nested import NESTED_USAGE
from agentloom.workflow.engine.observe import step_observer, step_watch
from agentloom.workflow.engine.result import StepOutcome
from agentloom.workflow.lang.paths import MISSING, assign, lookup, parse_path
from agentloom.workflow.steps._structured_step import with_client

if TYPE_CHECKING:
    from agentloom.loop import ToolBox
    from agentloom.loop.agent import Agent
    from agentloom.providers import ModelClient
    from agentloom.structured import OutputPlan
    from agentloom.workflow.engine.context import RunContext
    from agentloom.workflow.lang.paths import Path


@record
class Turn(Record):
    """One turn, with its texts rendered and its settings resolved."""

    step_id: str
    request: ModelRequest
    """Model, sampling, reasoning, tool choice and stream flag; messages are filled in."""
    system_prompt: str | None = None
    prompt: str | None = None
    media: tuple[Any, ...] = ()
    conversation: Path | None = None
    speaker: str | None = None
    structured: OutputPlan | None = None
    toolbox: ToolBox | None = None
    max_iterations: int = 5
    max_reasks: int = 0
    agent_name: str | None = None
    capture_reasoning: bool = True
    messages_ready: bool = False
    """`request` already holds the plain messages (and the tool box's specs)."""
    agent: Agent | None = None
    """An `agent` step's Agent: it builds the turn's request and runs its loop."""

    def __init__(
        self, *, step_id: str, request: ModelRequest, system_prompt: str | None = None,
        prompt: str | None = None, media: tuple[Any, ...] = (), conversation: Path | None = None,
        speaker: str | None = None, structured: OutputPlan | None = None,
        toolbox: ToolBox | None = None, max_iterations: int = 5, max_reasks: int = 0,
        agent_name: str | None = None, capture_reasoning: bool = True,
        messages_ready: bool = False, agent: Agent | None = None,
    ) -> None:
        self.step_id = step_id
        self.request = request
        self.system_prompt = system_prompt
        self.prompt = prompt
        self.media = media
        self.conversation = conversation
        self.speaker = speaker
        self.structured = structured
        self.toolbox = toolbox
        self.max_iterations = max_iterations
        self.max_reasks = max_reasks
        self.agent_name = agent_name
        self.capture_reasoning = capture_reasoning
        self.messages_ready = messages_ready
        self.agent = agent


def conversation_path(key: str) -> Path:
    """The state path of a `conversation:` value (`state.chat` and `chat` alike).
    Raises ConfigError or PathError for a value that is not a state key."""
    return parse_path(conversations.normalize_key(key))


async def run_turn(turn: Turn, client: ModelClient, ctx: RunContext) -> StepOutcome:
    extra_usage: list[Usage] = []
    plan = None
    if turn.messages_ready:
        request = turn.request
    else:
        if turn.conversation is not None:
            plan = await _plan(turn, client, ctx, extra_usage)
            messages = plan.messages
        else:
            messages = plain_messages(turn.step_id, turn.system_prompt, turn.prompt,
                                      turn.media)
        if turn.agent is not None:
            request = turn.agent.request(messages)  # its schema plan put on by the builder
        else:
            request = turn.request.replace(messages=messages)
            if turn.structured is not None:
                request = turn.structured.apply(request)
    if turn.structured is not None:
        client = with_client(turn.structured, client)
    sink = None
    streamed: list[bool] = []
    if ctx.on_event is not None and request.stream:
        on_event, step_id = ctx.on_event, turn.step_id

        def sink(event: StreamEvent) -> None:
            streamed.append(True)
            on_event(step_id, event)

    nested: list[Usage] = []
    # Workflow functions the loop calls (as tools) add their model usage here (spec 000:
    # the step's tokens and cost cover every call it made); a failed loop's step fails
    # anyway. Without tools nothing can add to it.
    usage_token = NESTED_USAGE.set(nested) if turn.toolbox is not None else None
    if turn.agent is not None:
        result = await turn.agent.arun_loop(
            request, client=client, max_reasks=turn.max_reasks, run_id=ctx.run_id,
            step_id=turn.step_id, speaker=turn.speaker,
            observer=step_observer(turn.step_id, ctx), on_event=sink, agent_mode=False)
    else:
        observer, keep = step_watch(turn.step_id, ctx)
        result = await run_loop(
            client, request, tools=turn.toolbox, on_event=sink,
            options=LoopOptions(
                max_iterations=turn.max_iterations, run_id=ctx.run_id, step_id=turn.step_id,
                validator=turn.structured.validator if turn.structured is not None else None,
                max_reasks=turn.max_reasks if turn.structured is not None else 0,
                speaker=turn.speaker, agent_name=turn.agent_name, observer=observer,
                on_summary=keep),
        )
    if usage_token is not None:
        NESTED_USAGE.reset(usage_token)
        extra_usage.extend(nested)
    if turn.structured is not None and result.status is ConversationStatus.ITERATION_LIMIT:
        # The loop stopped at its limit on a tool call: no final answer was validated.
        raise StructuredOutputError(
            f"step {turn.step_id!r} reached max_tool_iterations ({turn.max_iterations}) "
            "before a final answer to validate; raise the limit or give fewer tools",
            raw_text=result.text)
    if not streamed and ctx.on_event is not None and result.text and (
            request.stream or (turn.agent is not None and ctx.workflow.config.stream)):
        # A step with tools or an agent turn doesn't stream (spec 000): its text reaches
        # the stream in one piece at the end.
        ctx.on_event(turn.step_id, TextDelta(text=result.text))
        ctx.on_event(turn.step_id, FinishEvent(finish_reason=result.finish_reason))
    usage = result.usage
    for u in extra_usage:
        usage = usage + u
    if any(u.cost_usd is None and u.total_tokens for u in nested):
        usage = replace(usage, cost_usd=None)  # a function's unknown cost stays unknown
    if plan is not None and turn.conversation is not None:
        stored = conversations.commit_turn(plan, result.text, turn.speaker)
        assign(ctx.state, turn.conversation, stored.to_state())
    response = result.response
    return StepOutcome(
        value=result.output, text=result.text, usage=usage,
        model=response.model, provider=response.provider,
        finish_reason=result.finish_reason,
        time_to_first_token=response.time_to_first_token,
        reasoning_content=response.reasoning if turn.capture_reasoning else None,
        iterations=result.iterations,
        structured_output=_structured_output(turn, request, response.model),
    )


def _structured_output(turn: Turn, request: ModelRequest, answered: str) -> str | None:
    """native, prompted or tool: how the schema was asked for of the model that answered."""
    plan = turn.structured
    if plan is None:
        return None
    if plan.forced_tool:
        return "tool"
    if plan.instruction is not None:
        return "prompted"  # beside tools, the schema is a system-prompt sentence
    return structured_mode(request.replace(model=answered or request.model))


def plain_messages(step_id: str, system_prompt: str | None, prompt: str | None,
                   media: tuple[Any, ...] = ()) -> tuple[Message, ...]:
    """The system + user pair of a step without a conversation."""
    if prompt is None:
        raise ConfigError(f"step {step_id!r} needs a prompt")
    if system_prompt is None:
        return (Message.user(prompt, *media),)
    return (Message.system(system_prompt), Message.user(prompt, *media))


async def _plan(turn: Turn, client: ModelClient, ctx: RunContext,
                extra_usage: list[Usage]) -> Any:
    assert turn.conversation is not None
    key = ".".join(str(p) for p in turn.conversation)
    current = lookup(ctx.state, turn.conversation)
    conv = conversations.Conversation.from_state(None if current is MISSING else current, key=key)

    async def summarize(messages: tuple[Message, ...]) -> str:
        # The summary is made by the step's own model; its tokens and cost are the step's.
        response = await client.complete(
            turn.request.replace(messages=messages, stream=False, tools=(),
                                 tool_choice="auto", response_format=None))
        extra_usage.append(response.usage)
        return response.text

    return await conversations.prepare_turn(
        conv, system_prompt=turn.system_prompt, prompt=turn.prompt,
        speaker=turn.speaker, attachments=turn.media,
        summarize=summarize if conv.trim_policy == "summarize_oldest" else None)


def max_reasks(step_retry: Any, config: Any) -> int:
    """`retry.max_retries` of the step, else `config.max_retries`, else 3: the re-asks
    a structured reply gets within one attempt."""
    if step_retry is not None and step_retry.max_retries is not None:
        return int(step_retry.max_retries)
    if config is not None and getattr(config, "max_retries", None) is not None:
        return int(config.max_retries)
    return 3
