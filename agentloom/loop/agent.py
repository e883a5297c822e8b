"""`Agent`: a model, its tools and its rules, run as a conversation (spec 002).

An Agent is a thin face over `run_loop`, the same loop an `llm_call` step runs: it builds
the request (system prompt, model, sampling, output schema), turns tools given as
functions into a ToolSet, and returns the transcript with its summary. The core is async
(`arun_result`, ...); each sync method runs its twin on the agent's private event loop
(`loop/_sync.py`). What the Agent opens (HTTP sessions, MCP servers) is bound to the loop
that uses it and closed on that loop before it ends (`agentloom.loop._agent_resources`), so
`asyncio.run` per call and the sync face both leave no socket open; use one face per
Agent.

Return shapes:
    run(prompt) -> str                                 the final text
    stream(prompt) -> Iterator[AgentEvent]             events, then RunFinished
    converse(messages) -> Transcript                   the whole conversation
    run_conversation(transcript, prompt=None) -> Transcript
    *_result(...) -> ConversationResult(transcript, summary), `.text`

Tools are listed as in `agentloom.loop._agent_tools` (functions, Tool objects, built-ins by
name under `sandbox`, MCP servers). An output schema (a pydantic class or a JSON Schema)
goes in the provider's JSON mode when the Agent has no tools, and in the system prompt
when it has some (`agentloom.structured.plan_output`, the rule the workflow's steps
follow); the reply is validated and re-asked, and `ConversationResult.output` is the
validated value.

Failures raise an `AgentLoopError` with `.summary`: budgets its subclass
`LoopBudgetExceeded` (an exhausted iteration budget raises too, because a run that never
answered did not succeed), provider failures by kind (`AuthError`, `ProviderUnavailable`,
..., each also a `ProviderError`; `agentloom.errors`), anything else wrapped with the
cause chained.

`stream(prompt)` / `astream(prompt)` run the same loop with every call streamed and yield
typed events, `RunFinished` (with the result and summary) last (`agentloom.loop.stream`).

A workflow's YAML agent is this same object: the `agent` step builds an Agent from the
agent's definition and runs one turn of it with `arun_loop` (the step's own run, step and
observer ids; failures as the step's). `build_request` is the one request builder: the
Agent's, the `agent` step's and the `llm_call` step's requests all come from it.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from agentloom._clock import Clock
from agentloom.errors import ConfigError
from agentloom.loop._agent_resources import AgentResources, abandon, close_unmade
from agentloom.loop._agent_sync import SyncFace
from agentloom.loop._agent_tools import give_transport, plan_tools
from agentloom.loop._loop import run_loop
from agentloom.loop._options import LoopOptions, LoopResult
from agentloom.loop._settings import CHECKS
from agentloom.loop._sync import Portal
from agentloom.loop.observer import MultiObserver
from agentloom.loop.request import build_request
from agentloom.loop.result import ConversationResult
from agentloom.loop.status import SummaryOptions
from agentloom.loop.stream import AgentEvent, EventFeed, feed_events
from agentloom.loop.transcript import Transcript
from agentloom.loop.transcript import of as transcript_of
from agentloom.messages import Message, ModelRequest, StreamEvent, ToolChoice
from agentloom.providers import ModelClient
from agentloom.routing.runtime import Runtime
from agentloom.structured import OutputPlan, output_spec, plan_output
from agentloom.tools.contracts import ToolBox

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable, Coroutine

    from agentloom.structured import ResponseSchemaSpec
    from agentloom.tools import SandboxPolicy
    from agentloom.transport import Transport

DEFAULT_MAX_ITERATIONS = 20
DEFAULT_DEADLINE_SECONDS = 600.0
DEFAULT_REASKS = 2
"""Re-asks a structured reply gets after the first invalid one."""


class Agent(SyncFace):
    """A model with tools and rules. See the module docstring for the return shapes.

        with Agent.from_env(os.environ, tools=[get_weather]) as agent:
            result = agent.run_result("Weather in Paris?", correlation_id="req-1")
            print(result.text, result.summary.status)
    """

    def __init__(
        self,
        client: ModelClient,
        *,
        model: str | None = None,
        tools: ToolBox | Iterable[Any] | None = (),
        observer: object | Sequence[object] | None = None,
        summary_options: SummaryOptions | None = None,
        system_prompt: str | None = None,
        name: str | None = None,
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        deadline_seconds: float | None = DEFAULT_DEADLINE_SECONDS,
        token_budget: int | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        output_schema: Any = None,
        max_reasks: int = DEFAULT_REASKS,
        tool_choice: ToolChoice = "auto",
        tool_concurrency: int = 8,
        sandbox: SandboxPolicy | None = None,
        transport: Transport | None = None,
        clock: Clock | None = None,
        cache: Literal["auto"] | None = None,
    ) -> None:
        """Args (beyond the obvious):
            tools: functions, `@tool` functions, Tool objects, built-in names
                (`"file_read"`, ...) and MCP servers (`MCPToolSource`/`MCPServerConfig`,
                opened and closed with the Agent); or one ToolBox.
            output_schema: a pydantic class, a JSON Schema dict or a ResponseSchemaSpec
                (or an `agentloom.structured.OutputPlan` made already, as a workflow's
                agent has one).
            max_reasks: re-asks after an invalid structured reply.
            sandbox: the policy of built-ins given by name (default: nothing allowed).
            transport: the HTTP transport of a named `http_request` (default: one the
                Agent opens and closes; from_env uses its runtime's).
            cache: `"auto"` marks the stable prefix of every call for the provider's
                prompt cache (see docs/providers.md, Prompt caching).
        """
        model = model or getattr(client, "model", None)
        if not model:
            raise ConfigError("Agent needs a model: pass model=... (or use Agent.from_env)")
        # Checked as they are set (`__setattr__`), so before anything is opened.
        self.max_iterations = max_iterations
        self.deadline_seconds = deadline_seconds
        self.token_budget = token_budget
        self.max_tokens = max_tokens
        self.max_reasks = max_reasks
        self.tool_concurrency = tool_concurrency
        self.client = client
        self.model: str = model
        plan = plan_tools(tools, sandbox=sandbox)
        self._res = AgentResources(plan)
        if plan.needs_transport:
            if transport is None:
                from agentloom.http import AiohttpTransport  # aiohttp loads on first use

                transport = AiohttpTransport()
                self._res.transports.append(transport)
            give_transport(plan, transport)
            self._res.toolbox = plan.build()
        if isinstance(observer, list | tuple):
            observer = MultiObserver(*observer)
        self.observer = observer
        self.summary_options = summary_options
        self.system_prompt = system_prompt
        self.name = name
        self.temperature = temperature
        self.cache = cache
        self.tool_choice = tool_choice
        self.clock = clock
        self._output: OutputPlan | None = None
        if isinstance(output_schema, OutputPlan):
            self._output = output_schema
        elif output_schema is not None:
            self._output = plan_output(output_spec(output_schema), name or "output",
                                       with_tools=not plan.empty)
        self._plain_options: LoopOptions | None = None
        self._portal = Portal()
        self._finalizer = weakref.finalize(self, abandon, self._portal, self._res)
        # At interpreter exit the portal thread is a daemon and dies with the process.
        self._finalizer.atexit = False

    def __setattr__(self, name: str, value: Any) -> None:
        # A plain run's options are built once and kept until a setting they come from
        # changes (`agent.max_iterations = 3` between runs still applies to the next).
        if name in _OPTION_SOURCES:
            object.__setattr__(self, "_plain_options", None)
        check = CHECKS.get(name)
        if check is not None:
            check(name, value)
        object.__setattr__(self, name, value)

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str],
        *,
        tools: ToolBox | Iterable[Any] | None = (),
        model: str | None = None,
        provider: str | None = None,
        **kwargs: Any,
    ) -> Agent:
        """An Agent configured from a mapping you pass (e.g. `os.environ`); the library
        never reads the process environment itself. Keys: OPENAI_API_KEY,
        OPENAI_BASE_URL, ANTHROPIC_API_KEY, ..., AGENTLOOM_PROVIDER, AGENTLOOM_MODEL.
        Close it (`with`, `async with` or `close()`) to close what it opened."""

        runtime = Runtime.from_env(env)
        try:
            client = runtime.client(model=model, provider=provider)
            if tools is not None and not hasattr(tools, "specs"):
                tools = list(tools)  # read twice below: a generator would be spent
            if "transport" not in kwargs and _names_http_request(tools):
                kwargs["transport"] = runtime.transport
            agent = cls(client, model=model or runtime.default_model, tools=tools, **kwargs)
        except BaseException:
            close_unmade(runtime)
            raise
        agent._res.runtime = runtime
        return agent

    @property
    def output_schema(self) -> ResponseSchemaSpec | None:
        """The output schema as a checked spec (None without one)."""
        return self._output.spec if self._output is not None else None

    @property
    def tools(self) -> ToolBox | None:
        """The ToolBox runs use; MCP tools are in it while their servers are open."""
        return self._res.toolbox

    @property
    def output_plan(self) -> OutputPlan | None:
        """Where the output schema goes on a request, and its validator (None without)."""
        return self._output

    def request(self, messages: Sequence[Message], *, stream: bool = False) -> ModelRequest:
        """The request of one turn on `messages` (the schema's instruction joins the
        request only, so a stored conversation doesn't carry it twice)."""
        return build_request(
            model=self.model, messages=messages, tools=self._res.toolbox,
            temperature=self.temperature, max_tokens=self.max_tokens,
            tool_choice=self.tool_choice, stream=stream, output=self._output,
            cache=self.cache)

    async def arun_loop(
        self, request: ModelRequest, *, client: ModelClient | None = None,
        max_reasks: int | None = None, run_id: str | None = None,
        step_id: str | None = None, speaker: str | None = None,
        observer: object | None = None,
        on_event: Callable[[StreamEvent], None] | None = None,
        agent_mode: bool = True, ids: Mapping[str, str | None] | None = None,
        stream_tools: bool = False,
    ) -> LoopResult:
        """One run of the loop on `request` (from `request()`), with this agent's tools,
        limits and validator. A workflow step passes its `client` (the schema's forced
        tool wrapped around it, say), its ids and observer, and `agent_mode=False`: its
        failures raise as they are (the engine retries them) and the engine's step
        timeout, not the agent's deadline, bounds it."""
        await self._res.enter()
        return await self._loop(request, client=client, max_reasks=max_reasks, run_id=run_id,
                                step_id=step_id, speaker=speaker, observer=observer,
                                on_event=on_event, agent_mode=agent_mode, ids=ids,
                                stream_tools=stream_tools)

    def _loop(
        self, request: ModelRequest, *, client: ModelClient | None = None,
        max_reasks: int | None = None, run_id: str | None = None,
        step_id: str | None = None, speaker: str | None = None,
        observer: object | None = None,
        on_event: Callable[[StreamEvent], None] | None = None,
        agent_mode: bool = True, ids: Mapping[str, str | None] | None = None,
        stream_tools: bool = False,
    ) -> Coroutine[Any, Any, LoopResult]:
        """`arun_loop` once the Agent's resources are entered: the loop's coroutine to
        await (handed back, not awaited here, so that a run keeps one coroutine frame
        fewer alive while it waits on the model)."""
        output = self._output
        plain = (ids is None and max_reasks is None and run_id is None and step_id is None
                 and speaker is None and observer is None and agent_mode and not stream_tools)
        if plain and self._plain_options is not None:
            return run_loop(client or self.client, request, tools=self._res.toolbox,
                            on_event=on_event, options=self._plain_options)
        ids = ids or {}
        options = LoopOptions(
            max_iterations=self.max_iterations, tool_concurrency=self.tool_concurrency,
            validator=output.validator if output is not None else None,
            max_reasks=(self.max_reasks if max_reasks is None else max_reasks)
            if output is not None else 0,
            clock=self.clock,
            deadline_seconds=self.deadline_seconds if agent_mode else None,
            max_total_tokens=self.token_budget,
            observer=self.observer if observer is None else observer,
            summary_options=self.summary_options, agent_name=self.name,
            wrap_errors=agent_mode, run_id=run_id, step_id=step_id, speaker=speaker,
            conversation_id=ids.get("conversation_id"),
            correlation_id=ids.get("correlation_id"), parent_id=ids.get("parent_id"),
            stream_with_tools=stream_tools,
        )
        if plain:
            self._plain_options = options
        return run_loop(client or self.client, request, tools=self._res.toolbox,
                        on_event=on_event, options=options)

    # --- lifecycle ---------------------------------------------------------------------
    def __enter__(self) -> Agent:
        if _loop_running():
            # Its close would have to be awaited on this loop: refused now, before the
            # work, rather than at the block's end with the work done.
            raise RuntimeError("`with agent:` inside a running event loop can't close the "
                               "agent; use `async with agent:` there")
        if self._res.pending:
            try:
                self._portal.run(self._res.enter, name="Agent.__enter__",
                                 twin="agent.__aenter__")
            except BaseException:
                self.close()
                raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Agent:
        if self._res.pending:
            try:
                await self._res.enter()
            except BaseException:
                await self.aclose()
                raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def close(self) -> None:
        """Close what the Agent opened, on the loop it is bound to (the portal's, for
        the sync face), then stop the portal. Safe to call twice."""
        self._finalizer.detach()
        if self._portal.started:
            self._portal.run(self._res.aclose, name="Agent.close", twin="agent.aclose")
        elif self._res.owns_anything:
            _run_fresh(self._res.aclose)
        self._portal.close()

    async def aclose(self) -> None:
        self._finalizer.detach()
        await self._res.aclose()
        self._portal.close()

    # --- async core --------------------------------------------------------------------
    def _messages(self, transcript: Transcript) -> Transcript:
        if self.system_prompt and not (transcript and transcript[0].role == "system"):
            return Transcript((Message.system(self.system_prompt), *transcript))
        return transcript

    def _start(self, transcript: Transcript, ids: dict[str, str | None] | None
               ) -> Coroutine[Any, Any, LoopResult]:
        """The loop's coroutine for a run of `transcript` (after `_messages`), for the
        caller to await itself: a plain run keeps no coroutine of the Agent's own between
        its caller's and the loop's while it waits on the model."""
        messages = transcript.messages
        if not messages or messages[-1].role not in ("user", "tool"):
            raise ConfigError("a conversation must end with a user (or tool) message")
        options = self._plain_options
        if ids is None and options is not None:
            return run_loop(self.client, self.request(messages), tools=self._res.toolbox,
                            options=options)
        return self._loop(self.request(messages), ids=ids)

    async def _run(self, transcript: Transcript, ids: dict[str, str | None] | None,
                   feed: EventFeed) -> ConversationResult:
        """A streamed run (`astream`): every call streamed, events into `feed`."""
        if not self._res.entered():
            await self._res.enter()
        transcript = self._messages(transcript)
        messages = transcript.messages
        if not messages or messages[-1].role not in ("user", "tool"):
            raise ConfigError("a conversation must end with a user (or tool) message")
        observer = feed if self.observer is None else MultiObserver(self.observer, feed)
        result = await self._loop(
            self.request(messages, stream=True), ids=ids, observer=observer,
            on_event=feed.sink, stream_tools=True)
        return _finished(transcript, result)

    async def arun_result(self, prompt: str, *, correlation_id: str | None = None,
                          parent_id: str | None = None, conversation_id: str | None = None
                          ) -> ConversationResult:
        if not self._res.entered():
            await self._res.enter()
        transcript = Transcript.coerce(prompt)
        if self.system_prompt:
            transcript = self._messages(transcript)
        result = await self._start(
            transcript, None if correlation_id is None and parent_id is None
            and conversation_id is None else _ids(correlation_id, parent_id, conversation_id))
        return _finished(transcript, result)

    async def arun(self, prompt: str, **ids: str | None) -> str:
        return (await self.arun_result(prompt, **ids)).text

    async def aconverse_result(self, messages: Transcript | Sequence[Message], *,
                               correlation_id: str | None = None,
                               parent_id: str | None = None,
                               conversation_id: str | None = None) -> ConversationResult:
        if not self._res.entered():
            await self._res.enter()
        transcript = self._messages(Transcript.coerce(messages))
        result = await self._start(transcript, _ids(correlation_id, parent_id,
                                                    conversation_id))
        return _finished(transcript, result)

    async def aconverse(self, messages: Transcript | Sequence[Message],
                        **ids: str | None) -> Transcript:
        return (await self.aconverse_result(messages, **ids)).transcript

    async def arun_conversation_result(
        self, transcript: Transcript | Sequence[Message], prompt: str | None = None, *,
        correlation_id: str | None = None, parent_id: str | None = None,
        conversation_id: str | None = None,
    ) -> ConversationResult:
        """Continue a stored conversation, with `prompt` as the next user turn if given."""
        t = Transcript.coerce(transcript)
        if prompt is not None:
            t = t.with_user(prompt)
        if not self._res.entered():
            await self._res.enter()
        t = self._messages(t)
        result = await self._start(t, _ids(correlation_id, parent_id, conversation_id))
        return _finished(t, result)

    async def arun_conversation(self, transcript: Transcript | Sequence[Message],
                                prompt: str | None = None, **ids: str | None) -> Transcript:
        return (await self.arun_conversation_result(transcript, prompt, **ids)).transcript

    def astream(self, prompt: str | Transcript | Sequence[Message], *,
                correlation_id: str | None = None, parent_id: str | None = None,
                conversation_id: str | None = None) -> AsyncGenerator[AgentEvent, None]:
        """The run of `prompt` (a prompt, or messages as `converse` takes) as typed
        events, ending with `RunFinished` (see `agentloom.loop.stream`). Leaving early and
        closing the iterator cancels the run; it still gets its summary."""
        feed = EventFeed()
        transcript = Transcript.coerce(prompt)
        ids = _ids(correlation_id, parent_id, conversation_id)
        return feed_events(feed, lambda: self._run(transcript, ids, feed))


_OPTION_SOURCES = frozenset({
    "max_iterations", "tool_concurrency", "_output", "max_reasks", "clock",
    "deadline_seconds", "token_budget", "observer", "summary_options", "name"})
"""The Agent's attributes a run's `LoopOptions` are built from."""


def _finished(transcript: Transcript, result: LoopResult) -> ConversationResult:
    # Through its __init__ alone, positionally: no class call (nor keywords to pack).
    done: ConversationResult = _new(ConversationResult)
    _init_conversation_result(done, transcript_of(transcript.messages + result.new_messages),
                              result.summary_source(), result.output)
    return done


_new = object.__new__
_init_conversation_result = ConversationResult.__init__


def _ids(correlation_id: str | None, parent_id: str | None,
         conversation_id: str | None) -> dict[str, str | None] | None:
    if correlation_id is None and parent_id is None and conversation_id is None:
        return None
    return {"correlation_id": correlation_id, "parent_id": parent_id,
            "conversation_id": conversation_id}


def _names_http_request(tools: Any) -> bool:
    if tools is None or isinstance(tools, str) or hasattr(tools, "specs"):
        return False
    return any(isinstance(t, str) and t == "http_request" for t in tools)


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _run_fresh(make: Any) -> None:
    """Run `make()` on a fresh loop: for closing an Agent whose sync face never ran, so
    that no loop holds a connection of its yet."""
    if not _loop_running():
        asyncio.run(make())
        return
    raise RuntimeError("Agent.close() cannot be called from a running event loop; "
                       "use `await agent.aclose()` there")
