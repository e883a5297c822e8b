"""`Agent`: a model, its tools and its rules, run as a conversation (spec 002).

An Agent is a thin face over `run_loop`, the same loop an `llm_call` step runs: it builds
the request (system prompt, model, sampling, output schema), turns tools given as
functions into a ToolSet, and returns the transcript with its summary. The core is async
(`arun_result`, ...); each sync method runs its twin on the agent's private event loop
(`loop/_sync.py`). Use one face per Agent: its clients belong to the loop that first
used them.

Return shapes:
    run(prompt) -> str                                 the final text
    converse(messages) -> Transcript                   the whole conversation
    run_conversation(transcript, prompt=None) -> Transcript
    *_result(...) -> ConversationResult(transcript, summary), `.text`

Failures raise `AgentLoopError` (budgets: its subclass `LoopBudgetExceeded`) with
`.summary` and the cause chained; an exhausted iteration budget raises too, because a run
that never answered did not succeed (status iteration_limit).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentloom._clock import Clock
from agentloom.errors import ConfigError
from agentloom.loop._contracts import ToolBox
from agentloom.loop._loop import LoopOptions, run_loop
from agentloom.loop._sync import Portal
from agentloom.loop.result import ConversationResult
from agentloom.loop.summary import SummaryOptions
from agentloom.loop.transcript import Transcript
from agentloom.messages import Message, ModelRequest, ResponseFormat, ToolChoice
from agentloom.providers._base import ModelClient

DEFAULT_MAX_ITERATIONS = 20
DEFAULT_DEADLINE_SECONDS = 600.0
_STRUCTURED_REASKS = 2


class _SchemaValidator:
    """Validates a final reply against a pydantic model or a JSON Schema."""

    def __init__(self, schema: Any) -> None:
        self.schema = schema

    def response_format(self) -> ResponseFormat:
        if isinstance(self.schema, dict):
            return ResponseFormat(kind="json_schema", schema=self.schema,
                                  name=str(self.schema.get("title", "output")))
        return ResponseFormat(kind="json_schema", schema=self.schema.model_json_schema(),
                              name=self.schema.__name__)

    def validate(self, text: str) -> Any:
        try:
            from agentloom.structured._extract import extract_json

            value = extract_json(text)
        except ImportError:
            value = json.loads(text)
        except Exception as exc:
            raise ValueError(f"no JSON found in the reply: {exc}") from exc
        if isinstance(self.schema, dict):
            import jsonschema  # type: ignore[import-untyped]

            try:
                jsonschema.validate(value, self.schema)
            except jsonschema.ValidationError as exc:
                raise ValueError(exc.message) from exc
            return value
        from pydantic import ValidationError

        try:
            return self.schema.model_validate(value)
        except ValidationError as exc:
            raise ValueError(str(exc)) from exc


def _toolbox(tools: ToolBox | Iterable[Any] | None) -> ToolBox | None:
    if tools is None:
        return None
    if hasattr(tools, "specs") and hasattr(tools, "call"):
        return tools  # type: ignore[return-value]
    items = list(tools)  # type: ignore[arg-type]
    if not items:
        return None
    from agentloom.tools._toolset import ToolSet

    return ToolSet.of(items)


class Agent:
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
        tool_choice: ToolChoice = "auto",
        tool_concurrency: int = 8,
        clock: Clock | None = None,
    ) -> None:
        model = model or getattr(client, "model", None)
        if not model:
            raise ConfigError("Agent needs a model: pass model=... (or use Agent.from_env)")
        if max_iterations < 1:
            raise ConfigError(f"Agent max_iterations must be at least 1, got {max_iterations}")
        if deadline_seconds is not None and deadline_seconds <= 0:
            raise ConfigError(f"Agent deadline_seconds must be positive, got {deadline_seconds}")
        self.client = client
        self.model: str = model
        self.tools = _toolbox(tools)
        if isinstance(observer, list | tuple):
            from agentloom.loop.observer import MultiObserver

            observer = MultiObserver(*observer)
        self.observer = observer
        self.summary_options = summary_options
        self.system_prompt = system_prompt
        self.name = name
        self.max_iterations = max_iterations
        self.deadline_seconds = deadline_seconds
        self.token_budget = token_budget
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.tool_choice = tool_choice
        self.tool_concurrency = tool_concurrency
        self.clock = clock
        self._validator = _SchemaValidator(output_schema) if output_schema is not None else None
        self._owned: Any = None
        """What from_env opened and close() must close (a Runtime)."""
        self._portal = Portal()

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
        from agentloom.runtime import Runtime

        runtime = Runtime.from_env(env)
        try:
            client = runtime.client(model=model, provider=provider)
            agent = cls(client, model=model or runtime.default_model, tools=tools, **kwargs)
        except BaseException:
            _close_quietly(runtime)
            raise
        agent._owned = runtime
        return agent

    # --- lifecycle ---------------------------------------------------------------------
    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def close(self) -> None:
        owned, self._owned = self._owned, None
        if owned is not None:
            self._portal.run(owned.aclose, name="Agent.close", twin="agent.aclose")
        self._portal.close()

    async def aclose(self) -> None:
        owned, self._owned = self._owned, None
        if owned is not None:
            await owned.aclose()
        self._portal.close()

    # --- async core --------------------------------------------------------------------
    def _messages(self, transcript: Transcript) -> Transcript:
        if self.system_prompt and not (transcript and transcript[0].role == "system"):
            return Transcript((Message.system(self.system_prompt), *transcript))
        return transcript

    async def _run(self, transcript: Transcript, ids: dict[str, str | None]
                   ) -> ConversationResult:
        transcript = self._messages(transcript)
        if not transcript or transcript[-1].role not in ("user", "tool"):
            raise ConfigError("a conversation must end with a user (or tool) message")
        request = ModelRequest(
            model=self.model, messages=transcript.messages, temperature=self.temperature,
            max_tokens=self.max_tokens, tool_choice=self.tool_choice,
            tools=self.tools.specs if self.tools is not None else (),
            response_format=self._validator.response_format() if self._validator else None,
        )
        options = LoopOptions(
            max_iterations=self.max_iterations, tool_concurrency=self.tool_concurrency,
            validator=self._validator,
            max_reasks=_STRUCTURED_REASKS if self._validator else 0,
            clock=self.clock, deadline_seconds=self.deadline_seconds,
            max_total_tokens=self.token_budget, observer=self.observer,
            summary_options=self.summary_options, agent_name=self.name,
            wrap_errors=True, conversation_id=ids.get("conversation_id"),
            correlation_id=ids.get("correlation_id"), parent_id=ids.get("parent_id"),
        )
        result = await run_loop(self.client, request, tools=self.tools, options=options)
        assert result.summary is not None
        return ConversationResult(transcript=transcript.append(*result.new_messages),
                                  summary=result.summary, output=result.output)

    async def arun_result(self, prompt: str, *, correlation_id: str | None = None,
                          parent_id: str | None = None, conversation_id: str | None = None
                          ) -> ConversationResult:
        return await self._run(Transcript.coerce(prompt), _ids(correlation_id, parent_id,
                                                                conversation_id))

    async def arun(self, prompt: str, **ids: str | None) -> str:
        return (await self.arun_result(prompt, **ids)).text

    async def aconverse_result(self, messages: Transcript | Sequence[Message], *,
                               correlation_id: str | None = None,
                               parent_id: str | None = None,
                               conversation_id: str | None = None) -> ConversationResult:
        return await self._run(Transcript.coerce(messages),
                               _ids(correlation_id, parent_id, conversation_id))

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
        return await self._run(t, _ids(correlation_id, parent_id, conversation_id))

    async def arun_conversation(self, transcript: Transcript | Sequence[Message],
                                prompt: str | None = None, **ids: str | None) -> Transcript:
        return (await self.arun_conversation_result(transcript, prompt, **ids)).transcript

    # --- sync face ---------------------------------------------------------------------
    def run_result(self, prompt: str, **ids: str | None) -> ConversationResult:
        return self._portal.run(lambda: self.arun_result(prompt, **ids),
                                name="Agent.run_result", twin="agent.arun_result")

    def run(self, prompt: str, **ids: str | None) -> str:
        return self._portal.run(lambda: self.arun(prompt, **ids),
                                name="Agent.run", twin="agent.arun")

    def converse_result(self, messages: Transcript | Sequence[Message],
                        **ids: str | None) -> ConversationResult:
        return self._portal.run(lambda: self.aconverse_result(messages, **ids),
                                name="Agent.converse_result", twin="agent.aconverse_result")

    def converse(self, messages: Transcript | Sequence[Message],
                 **ids: str | None) -> Transcript:
        return self._portal.run(lambda: self.aconverse(messages, **ids),
                                name="Agent.converse", twin="agent.aconverse")

    def run_conversation_result(self, transcript: Transcript | Sequence[Message],
                                prompt: str | None = None,
                                **ids: str | None) -> ConversationResult:
        return self._portal.run(
            lambda: self.arun_conversation_result(transcript, prompt, **ids),
            name="Agent.run_conversation_result", twin="agent.arun_conversation_result")

    def run_conversation(self, transcript: Transcript | Sequence[Message],
                         prompt: str | None = None, **ids: str | None) -> Transcript:
        return self._portal.run(
            lambda: self.arun_conversation(transcript, prompt, **ids),
            name="Agent.run_conversation", twin="agent.arun_conversation")


def _ids(correlation_id: str | None, parent_id: str | None,
         conversation_id: str | None) -> dict[str, str | None]:
    return {"correlation_id": correlation_id, "parent_id": parent_id,
            "conversation_id": conversation_id}


def _close_quietly(runtime: Any) -> None:
    import asyncio

    try:
        asyncio.run(runtime.aclose())
    except Exception:
        pass
