"""Registering a store backend with the suite: a factory of fresh storage, plus a lifespan.

A factory is an async generator that prepares empty storage (a temp file, a fresh
database) and yields an *opener*: `opener(now=...)` returns a new store on that storage
each time it is called, which is how a check "reopens" a store after a simulated crash.
`lifespan` (optional) runs once around the whole suite, e.g. to start a server.

    @store_factory("sqlite")
    async def sqlite_storage():
        with tempfile.TemporaryDirectory() as d:
            yield lambda now: SqliteStore(f"{d}/runs.db", now=now)
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

Opener = Callable[..., Any]
"""`opener(now=callable) -> store` (or an awaitable of one)."""
FactoryFn = Callable[[], AsyncIterator[Opener]]
Lifespan = Callable[[], AbstractAsyncContextManager[None]]


@dataclass(slots=True)
class StoreFactory:
    name: str
    storage: Callable[[], AbstractAsyncContextManager[Opener]]
    lifespan: Lifespan | None = None


def store_factory(name: str, *, lifespan: Lifespan | None = None
                  ) -> Callable[[FactoryFn], StoreFactory]:
    def register(fn: FactoryFn) -> StoreFactory:
        return StoreFactory(name=name, storage=asynccontextmanager(fn), lifespan=lifespan)

    return register


class FakeNow:
    """A wall clock for stores: starts at a fixed instant, ticks 1 ms per reading (so
    every write has its own time), and jumps forward with `advance`."""

    def __init__(self, start: datetime | None = None) -> None:
        self._t = start or datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self._t += timedelta(milliseconds=1)
        return self._t

    def advance(self, delta: timedelta) -> None:
        self._t += delta


@dataclass(slots=True)
class CheckContext:
    """What a check gets: `await ctx.open()` for a store (closed for you at the end),
    `ctx.now` to move time."""

    opener: Opener
    now: FakeNow = field(default_factory=FakeNow)
    opened: list[Any] = field(default_factory=list)

    async def open(self) -> Any:
        store = self.opener(now=self.now)
        if inspect.isawaitable(store):
            store = await store
        self.opened.append(store)
        return store

    async def close_all(self) -> None:
        for store in self.opened:
            try:
                await store.close()
            except Exception:  # a store already broken by the check; keep closing others
                pass


CheckFn = Callable[[CheckContext], Awaitable[None]]
