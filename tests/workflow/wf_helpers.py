"""Shared helpers for workflow tests: a client factory over in-process models, a fake
clock whose sleeps cost nothing and are recorded."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agentloom.testing.scripted import FunctionModel


class Factory:
    """A ClientFactory that hands out one in-process model and records what was asked."""

    default_model = "test-model"
    default_provider = "scripted"

    def __init__(self, model: Any) -> None:
        self.model = model
        self.asked: list[tuple[str | None, str | None]] = []

    def client(self, *, model: str | None, provider: str | None = None,
               fallback: Sequence[Any] = (), retry: Any = None, budget: Any = None) -> Any:
        self.asked.append((model, provider))
        return self.model


class FakeClock:
    """Monotonic time that moves only when someone sleeps; sleeps return at once."""

    def __init__(self) -> None:
        self.t = 1000.0
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.t

    def wall(self) -> float:
        return 1_700_000_000.0 + self.t

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += max(0.0, seconds)


def echo_model(fn: Callable[[Any], Any] | None = None) -> FunctionModel:
    """A model that answers with the last user message's text, or fn(request)."""

    def answer(request: Any) -> Any:
        if fn is not None:
            return fn(request)
        return "echo: " + request.messages[-1].text

    return FunctionModel(answer)
