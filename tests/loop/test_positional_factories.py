"""The positional factories an Agent call builds its records with make exactly what the
class calls make: every field set, same class, equal, frozen."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest

from agentloom.loop._options import LoopResult, loop_result
from agentloom.loop.request import build_request, turn_request
from agentloom.loop.transcript import Transcript, of
from agentloom.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolSpec,
    Usage,
    new_message,
    new_response,
    new_usage,
    text_part,
)
from agentloom.routing._priced import with_cost


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


def test_usage_and_response_factories_match_the_class_calls() -> None:
    usage = new_usage(9, 7, 2, None, 1, Decimal("0.5"), True, False)
    assert type(usage) is Usage
    assert _fields(usage) == _fields(Usage(
        input_tokens=9, output_tokens=7, cache_read_tokens=2, reasoning_tokens=1,
        cost_usd=Decimal("0.5"), input_includes_cached=True))
    parts = (TextPart(text="a"),)
    reply = new_response(parts, usage, "stop", "m", "p", "id-1", 0.25)
    assert type(reply) is ModelResponse
    assert _fields(reply) == _fields(ModelResponse(
        parts=parts, usage=usage, finish_reason="stop", model="m", provider="p",
        response_id="id-1", time_to_first_token=0.25))
    assert hash(reply) == hash(dataclasses.replace(reply))
    with pytest.raises(dataclasses.FrozenInstanceError):
        usage.input_tokens = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        reply.model = "x"  # type: ignore[misc]


def test_a_priced_copy_changes_the_cost_alone() -> None:
    usage = Usage(input_tokens=9, output_tokens=7, cache_write_tokens=3,
                  input_includes_cached=False)
    reply = ModelResponse(parts=(TextPart(text="a"),), usage=usage, finish_reason="stop",
                          model="m", provider="p", response_id="r", time_to_first_token=0.1)
    priced = with_cost(reply, Decimal("0.002"))
    assert priced == dataclasses.replace(reply, usage=dataclasses.replace(
        usage, cost_usd=Decimal("0.002"), cost_estimated=True))
    assert usage.with_cost(None) == usage  # no price: not estimated either
    assert type(priced) is ModelResponse and type(priced.usage) is Usage


def test_turn_request_is_replace_of_messages_stream_and_tool_choice() -> None:
    spec = ToolSpec(name="f", description="d")
    request = ModelRequest(model="m", messages=(Message.user("hi"),), temperature=0.1,
                           max_tokens=5, tools=(spec,), tool_choice="required", stream=True,
                           extra={"seed": 1}, headers={"x": "y"}, prefill="{", cache="auto")
    msgs = (Message.user("hi"), Message.assistant("yo"))
    turn = turn_request(request, msgs, False, "auto")
    assert type(turn) is ModelRequest
    assert _fields(turn) == _fields(
        request.replace(messages=msgs, stream=False, tool_choice="auto"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        turn.model = "x"  # type: ignore[misc]
