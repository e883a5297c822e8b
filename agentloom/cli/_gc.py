"""Garbage collection around `agentloom run`'s start-up.

Loading the workflow imports pydantic, builds the schema models and the workflow, and so
creates a few hundred thousand long-lived objects; the collector runs over and over while
they pile up (about 50 ms of a one-step run) and frees almost nothing. `loading` pauses it
while the command loads; `start_running` freezes what was loaded out of later collections
(so they stay cheap while aiohttp loads and the run goes on) and turns collection back on
before any workflow code runs, so a long run's memory behaves as usual.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import TypeVar

_F = TypeVar("_F", bound=Callable[..., int])
_paused = False


def loading(command: _F) -> _F:
    """Run `command` with collection paused until `start_running`, and never return
    with collection left off when it was on before."""

    @functools.wraps(command)
    def wrapper(*args: object, **kwargs: object) -> int:
        global _paused
        was_on = gc.isenabled()
        gc.disable()
        _paused = was_on
        try:
            return command(*args, **kwargs)
        finally:
            _paused = False
            if was_on:
                gc.enable()

    return wrapper  # type: ignore[return-value]


def start_running() -> None:
    """Collection back on, with everything loaded so far left out of it."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
