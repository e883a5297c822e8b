"""The positional factories an Agent call builds its records with make exactly what the
class calls make: every field set, same class, equal, frozen."""

from __future__ import annotations

import dataclasses

import pytest

from agentloom.loop._options import LoopResult, loop_result
from agentloom.loop.request import build_request
from agentloom.loop.transcript import Transcript, of
from agentloom.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    Usage,
    new_message,
    text_part,
)


def _fields(obj: object) -> dict[str, object]:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}  # type: ignore[arg-type]


def test_message_and_text_part_factories_match_the_class_calls() -> None:
    made = new_message("user", (text_part("hi"),), "ann")
    assert type(made) is Message and type(made.parts[0]) is TextPart
    assert made == Message(role="user", parts=(TextPart(text="hi"),), name="ann")
    assert Message.user("hi") == Message(role="user", parts=(TextPart(text="hi"),))
    assert Message.system("s") == Message(role="system", parts=(TextPart(text="s"),))
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.role = "tool"  # type: ignore[misc]


def test_build_request_sets_every_field_as_the_class_call() -> None:
    msgs = [Message.user("hi")]
    built = build_request(model="m", messages=msgs, temperature=0.5, max_tokens=9)
    assert type(built) is ModelRequest
    expected = ModelRequest(model="m", messages=tuple(msgs), temperature=0.5, max_tokens=9)
    assert _fields(built) == _fields(expected)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.model = "x"  # type: ignore[misc]


def test_reply_text_and_tool_calls_one_part_and_many() -> None:
    call = ToolCallPart(id="1", name="f", arguments="{}")
    one = ModelResponse(parts=(TextPart(text="a"),), usage=Usage(), finish_reason="stop",
                        model="m", provider="p")
    mixed = dataclasses.replace(one, parts=(TextPart(text="a"), call, TextPart(text="b")))
    assert (one.text, one.tool_calls) == ("a", ())
    assert (mixed.text, mixed.tool_calls) == ("ab", (call,))
    assert dataclasses.replace(one, parts=(call,)).text == ""
    assert one.to_message(name="n") == Message(role="assistant", parts=one.parts, name="n")


def test_loop_result_and_transcript_factories() -> None:
    response = ModelResponse(parts=(), usage=Usage(), finish_reason="stop", model="m",
                             provider="p")
    made = loop_result(response, "t", "stop", Usage(), 1, (), "t", [], LoopResult(
        response=response, text="", finish_reason=None, usage=Usage(), iterations=0,
        new_messages=()).status)
    assert made == LoopResult(response=response, text="t", finish_reason="stop",
                              usage=Usage(), iterations=1, new_messages=(), output="t")
    msgs = (Message.user("hi"),)
    assert of(msgs) == Transcript(msgs) and type(of(msgs)) is Transcript
    assert Transcript.coerce("hi") == Transcript(msgs)
