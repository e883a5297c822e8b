"""`agentloom run` pauses garbage collection while it loads and always turns it back on."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from agentloom.cli._gc import loading, start_running


@pytest.fixture(autouse=True)
def _restore_gc() -> Iterator[None]:
    was_on = gc.isenabled()
    yield
    gc.unfreeze()
    if was_on:
        gc.enable()
    else:
        gc.disable()


def test_collection_is_paused_while_loading_and_back_on_for_the_run() -> None:
    gc.enable()
    seen: list[bool] = []

    @loading
    def command() -> int:
        seen.append(gc.isenabled())
        start_running()
        seen.append(gc.isenabled())
        return 7

    assert command() == 7
    assert seen == [False, True]
    assert gc.isenabled()


def test_an_early_return_or_error_turns_collection_back_on() -> None:
    gc.enable()

    @loading
    def failing() -> int:
        raise ValueError("bad file")

    with pytest.raises(ValueError):
        failing()
    assert gc.isenabled()


def test_a_caller_that_turned_collection_off_keeps_it_off() -> None:
    gc.disable()

    @loading
    def command() -> int:
        start_running()
        return gc.isenabled()

    assert command() is False
    assert not gc.isenabled()
