"""MultiObserver isolation, optional hooks, and the Transcript type."""

from __future__ import annotations

import logging

import pytest

from agentloom import Agent
from agentloom.loop import MultiObserver, NullObserver, Observer, Transcript, current_conversation
from agentloom.loop.observer import Dispatch
from agentloom.messages import Message
from agentloom.testing.scripted import ScriptedModel


class Count(NullObserver):
    def __init__(self) -> None:
        self.requests = 0
        self.ends = 0

    def on_request(self, request, iteration):  # type: ignore[no-untyped-def]
        self.requests += 1

    def on_conversation_end(self, summary):  # type: ignore[no-untyped-def]
        self.ends += 1


class Broken(NullObserver):
    def on_request(self, request, iteration):  # type: ignore[no-untyped-def]
        raise RuntimeError("broken")


def test_multi_observer_isolates_each_member(caplog: pytest.LogCaptureFixture) -> None:
    a, b = Count(), Count()
    caplog.set_level(logging.ERROR)
    with Agent(ScriptedModel(["x"]), observer=MultiObserver(a, Broken(), b)) as agent:
        agent.run("hi")
    assert (a.requests, a.ends, b.requests, b.ends) == (1, 1, 1, 1)
    assert any("Broken.on_request" in r.getMessage() for r in caplog.records)


def test_observer_list_and_partial_observers() -> None:
    class OnlyEnd:  # not a NullObserver: the hooks it lacks are skipped
        def __init__(self) -> None:
            self.ids: list[str] = []

        def on_conversation_end(self, summary):  # type: ignore[no-untyped-def]
            self.ids.append(summary.conversation_id)

    a, partial = Count(), OnlyEnd()
    with Agent(ScriptedModel(["x"]), observer=[a, partial]) as agent:
        agent.run("hi", conversation_id="given")
    assert a.ends == 1 and partial.ids == ["given"]
    assert isinstance(NullObserver(), Observer)


def test_dispatch_swallows_and_current_conversation_outside_a_run() -> None:
    Dispatch([Broken()]).emit("on_request", None, 1)
    assert current_conversation() is None


def test_transcript() -> None:
    t = Transcript.coerce("hello")
    assert [m.role for m in t] == ["user"] and t.text == ""
    t2 = t.append(Message.assistant("hi there"))
    assert t2.text == "hi there" and len(t) == 1 and len(t2) == 2
    assert Transcript.from_json(t2.to_json()) == t2
    assert t2[:1] == t and t2 == list(t2.messages)
    assert Transcript.coerce(t2) is t2
