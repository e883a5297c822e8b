"""Small test doubles for the loop: tool boxes and a client that reports retries."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from agentloom.errors import ProviderError
from agentloom.loop import NullObserver, ToolContext, current_conversation
from agentloom.messages import (
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Usage,
)
from agentloom.providers._base import AttemptRecord, AttemptSink, EventSink
from agentloom.testing.scripted import make_response


class Tools:
    """A ToolBox of named async functions `fn(arguments) -> str`; a raise is an error
    result, as the real ToolSet does."""

    def __init__(self, **fns: Callable[[str], Awaitable[str]]) -> None:
        self.fns = fns
        self.calls: list[tuple[str, str]] = []
        self.specs = tuple(ToolSpec(name=n) for n in fns)

    async def call(self, call: ToolCallPart, ctx: ToolContext) -> ToolResultPart:
        self.calls.append((call.name, call.arguments))
        fn = self.fns.get(call.name)
        if fn is None:
            return ToolResultPart(call_id=call.id, name=call.name, content="unknown tool",
                                  is_error=True)
        try:
            content = await fn(call.arguments)
        except Exception as exc:
            return ToolResultPart(call_id=call.id, name=call.name, content=str(exc),
                                  is_error=True)
        return ToolResultPart(call_id=call.id, name=call.name, content=content)


async def echo(arguments: str) -> str:
    await asyncio.sleep(0)
    return "echo " + arguments


class RetryingModel:
    """Each entry is a list of outcomes of one call's attempts: an exception per failed
    attempt, then a reply (or a final exception). Reports every attempt, like a router."""

    provider = "retrying"
    model = "retry-model"

    def __init__(self, calls: Sequence[Sequence[object]], *, wait: float = 0.5) -> None:
        self._calls = [list(c) for c in calls]
        self.wait = wait
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest, *, on_event: EventSink | None = None,
                       on_attempt: AttemptSink | None = None) -> ModelResponse:
        self.requests.append(request)
        outcomes = self._calls.pop(0)
        for n, outcome in enumerate(outcomes, start=1):
            wait = self.wait if n > 1 else 0.0
            if isinstance(outcome, BaseException):
                if on_attempt:
                    on_attempt(AttemptRecord(
                        provider=self.provider, model=request.model, attempt=n, ok=False,
                        duration_seconds=0.01, wait_before_seconds=wait,
                        status=getattr(outcome, "status", None),
                        phase=getattr(outcome, "phase", None),
                        request_sent=getattr(outcome, "request_sent", None),
                        error_type=type(outcome).__name__))
                if n == len(outcomes):
                    raise outcome
                continue
            if on_attempt:
                on_attempt(AttemptRecord(provider=self.provider, model=request.model,
                                         attempt=n, ok=True, duration_seconds=0.01,
                                         wait_before_seconds=wait))
            assert isinstance(outcome, ModelResponse | str)
            if isinstance(outcome, str):
                return make_response(outcome, model=request.model, provider=self.provider)
            return outcome
        raise AssertionError("no outcome")


def provider_error(status: int | None = 503, *, sent: bool | None = True,
                   phase: str = "status", secret: str = "") -> ProviderError:
    return ProviderError(f"upstream failed {secret}", provider="retrying", model="retry-model",
                         status=status, phase=phase,  # type: ignore[arg-type]
                         request_sent=sent, retryable=True, request_id="req-123")


def response(text: str = "", *, finish: str | None = None, usage: Usage | None = None,
             parts: Sequence[ToolCallPart] = ()) -> ModelResponse:
    from agentloom.messages import TextPart

    all_parts = ((TextPart(text=text),) if text else ()) + tuple(parts)
    return make_response(list(all_parts), finish_reason=finish, usage=usage)


class Recorder(NullObserver):
    """Records (conversation id, event, detail) for every callback."""

    def __init__(self) -> None:
        self.events: list[tuple[str | None, str, object]] = []
        self.summaries: list[object] = []

    def _add(self, name: str, detail: object = None) -> None:
        info = current_conversation()
        self.events.append((info.conversation_id if info else None, name, detail))

    def on_conversation_start(self, info):  # type: ignore[no-untyped-def]
        self._add("start", info.conversation_id)

    def on_request(self, request, iteration):  # type: ignore[no-untyped-def]
        self._add("request", iteration)

    def on_response(self, response, iteration, duration_seconds):  # type: ignore[no-untyped-def]
        self._add("response", iteration)

    def on_model_error(self, error, iteration, duration_seconds):  # type: ignore[no-untyped-def]
        self._add("model_error", type(error).__name__)

    def on_retry(self, attempt, error):  # type: ignore[no-untyped-def]
        self._add("retry", attempt)

    def on_text_delta(self, text):  # type: ignore[no-untyped-def]
        self._add("delta", text)

    def on_tool_start(self, call):  # type: ignore[no-untyped-def]
        self._add("tool_start", call.name)

    def on_tool_end(self, call, result, duration_seconds):  # type: ignore[no-untyped-def]
        self._add("tool_end", (call.name, result.is_error))

    def on_stall(self, tool_name, repeats):  # type: ignore[no-untyped-def]
        self._add("stall", (tool_name, repeats))

    def on_budget_warning(self, kind, used, limit):  # type: ignore[no-untyped-def]
        self._add("warning", (kind, used, limit))

    def on_conversation_end(self, summary):  # type: ignore[no-untyped-def]
        self.summaries.append(summary)
        self.events.append((summary.conversation_id, "end", summary.status.value))

    def names(self) -> list[str]:
        return [e[1] for e in self.events]
