"""In-process ModelClients for routing tests: each answers from a script and reports one
attempt per call, as ProviderClient does."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from decimal import Decimal

from agentloom.errors import ProviderError
from agentloom.messages import Message, ModelRequest, ModelResponse, TextDelta, TextPart, Usage
from agentloom.providers._base import AttemptRecord, AttemptSink, EventSink

Step = ProviderError | str | BaseException


def status_error(status: int, provider: str = "a", **kw: object) -> ProviderError:
    return ProviderError(
        f"HTTP {status}",
        provider=provider,
        model="m",
        status=status,
        phase="status",
        request_sent=True,
        retryable=status in (429, 500, 502, 503, 504),
        **kw,
    )  # type: ignore[arg-type]


def drop_error(provider: str = "a", *, partial: bool = False) -> ProviderError:
    return ProviderError(
        "dropped",
        provider=provider,
        model="m",
        phase="read",
        request_sent=True,
        retryable=True,
        partial=partial,
    )


def request(text: str = "hi", **kw: object) -> ModelRequest:
    return ModelRequest(model="m", messages=(Message.user(text),), **kw)  # type: ignore[arg-type]


class FakeClient:
    def __init__(
        self,
        name: str,
        steps: Sequence[Step] = (),
        *,
        default: str = "ok",
        usage: Usage | None = None,
        chunks_before_error: int = 0,
        delay: float = 0.0,
    ) -> None:
        self.name = name
        self.steps = list(steps)
        self.default = default
        self.usage = usage or Usage(input_tokens=100, output_tokens=50, input_includes_cached=True)
        self.calls: list[ModelRequest] = []
        self.chunks_before_error = chunks_before_error
        self.delay = delay

    async def complete(
        self,
        request: ModelRequest,
        *,
        on_event: EventSink | None = None,
        on_attempt: AttemptSink | None = None,
    ) -> ModelResponse:
        self.calls.append(request)
        step = self.steps.pop(0) if self.steps else self.default
        if self.delay:
            await asyncio.sleep(self.delay)
        if isinstance(step, BaseException):
            if request.stream and on_event is not None:
                for _ in range(self.chunks_before_error):
                    on_event(TextDelta(text="part "))
            if on_attempt is not None and isinstance(step, ProviderError):
                on_attempt(
                    AttemptRecord(
                        provider=self.name,
                        model=request.model,
                        attempt=1,
                        ok=False,
                        duration_seconds=0.01,
                        status=step.status,
                        phase=step.phase,
                        request_sent=step.request_sent,
                        error_type=type(step).__name__,
                    )
                )
            raise step
        if request.stream and on_event is not None:
            on_event(TextDelta(text=step))
        if on_attempt is not None:
            on_attempt(
                AttemptRecord(
                    provider=self.name,
                    model=request.model,
                    attempt=1,
                    ok=True,
                    duration_seconds=0.01,
                    status=200,
                    request_sent=True,
                )
            )
        return ModelResponse(
            parts=(TextPart(text=step),),
            usage=self.usage,
            finish_reason="stop",
            model=request.model,
            provider=self.name,
        )


ZERO = Decimal(0)
