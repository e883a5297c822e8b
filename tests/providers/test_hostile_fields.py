"""Hostile fields of a reply, in every protocol, streamed and not.

A reply's fields off the wire are any JSON value, whatever the protocol promises. What
each decoder makes of one of the wrong type:

- a tool call's `name` that is not text can't be dispatched: the reply is unreadable (a
  body error), not a `ToolCallPart(name=5)` handed to the loop;
- a tool call's `id` that is not text is read as a missing one (the decoder makes one up,
  as it does for a missing id): it is only the token that pairs the call with its result;
- two calls of one reply with one id get distinct ids (the first keeps its own, a later
  one is suffixed): the loop answers each call under its id, and a provider refuses the
  next request when two results (or two calls) share one (`tool_use ids must be unique`);
  some servers do reuse an id across parallel calls;
- non-streamed arguments that are not text: a JSON object is read as its JSON text (as
  the protocols whose arguments are objects are), anything else (a list, a number,
  true/false) is a body error, as it is streamed;
- `model`, the response id and the finish reason are metadata: one of the wrong type is
  read as unknown (the request's model, None, None) rather than failing the call, and no
  longer reaches the loop (a finish reason that is an object was unhashable there) or the
  pricing (a model that is a number has no `.lower()`);
- non-streamed text, reasoning and signatures that are not text are a body error, as
  they are streamed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from agentloom import Agent
from agentloom.errors import ProviderError
from agentloom.http import AiohttpTransport
from agentloom.messages import Message, ModelRequest, ModelResponse
from agentloom.providers import get_protocol
from agentloom.providers._assemble import ResponseBuilder
from agentloom.providers._base import Endpoint
from agentloom.routing import ProviderClient
from agentloom.testing._server import FakeBadBody, FakeServer
from agentloom.testing.fake_anthropic import FakeAnthropicServer
from agentloom.testing.fake_gemini import FakeGeminiServer
from agentloom.testing.fake_ollama import FakeOllamaServer
from agentloom.testing.fake_openai import FakeOpenAIServer

OMIT: Any = object()
"""A field left out of the reply."""

Call = tuple[Any, Any, Any]
"""(id, name, arguments) of one tool call; arguments given as an object are written as
each protocol writes them (text for OpenAI's, an object for the others)."""

GOOD_CALL: Call = ("c1", "get", {"a": 1})


def _put(obj: dict[str, Any], key: str, value: Any) -> None:
    if value is not OMIT:
        obj[key] = value


def _text_args(args: Any) -> Any:
    return json.dumps(args) if isinstance(args, dict) else args


def _sse(*events: dict[str, Any], named: bool = False) -> bytes:
    return b"".join(
        ((f"event: {e['type']}\n" if named else "") + f"data: {json.dumps(e)}\n\n").encode()
        for e in events)


def _openai(calls: list[Call], model: Any, rid: Any, finish: Any, stream: bool) -> bytes:
    if not stream:
        message: dict[str, Any] = {"role": "assistant", "content": None if calls else "hi"}
        if calls:
            message["tool_calls"] = []
        for cid, name, args in calls:
            call: dict[str, Any] = {"type": "function",
                                    "function": {"name": name, "arguments": _text_args(args)}}
            _put(call, "id", cid)
            message["tool_calls"].append(call)
        body: dict[str, Any] = {"object": "chat.completion", "choices": [
            {"index": 0, "message": message, "finish_reason": finish}]}
        _put(body, "model", model)
        _put(body, "id", rid)
        return json.dumps(body).encode()
    chunks: list[dict[str, Any]] = []
    for i, (cid, name, args) in enumerate(calls):
        call = {"index": i, "type": "function",
                "function": {"name": name, "arguments": _text_args(args)}}
        _put(call, "id", cid)
        chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    if not calls:
        chunks.append({"choices": [{"index": 0, "delta": {"content": "hi"}}]})
    last: dict[str, Any] = {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
    _put(last, "model", model)
    _put(last, "id", rid)
    return _sse(*chunks, last) + b"data: [DONE]\n\n"


def _responses(calls: list[Call], model: Any, rid: Any, finish: Any, stream: bool) -> bytes:
    items: list[dict[str, Any]] = []
    for i, (cid, name, args) in enumerate(calls):
        item: dict[str, Any] = {"type": "function_call", "id": f"fc_{i}", "name": name,
                                "arguments": _text_args(args)}
        _put(item, "call_id", cid)
        items.append(item)
    if not calls:
        items.append({"type": "message", "role": "assistant",
                      "content": [{"type": "output_text", "text": "hi"}]})
    response: dict[str, Any] = {"status": finish, "output": [] if stream else items}
    _put(response, "model", model)
    _put(response, "id", rid)
    if not stream:
        return json.dumps(response).encode()
    events: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        if item["type"] == "function_call":
            events.append({"type": "response.output_item.added", "output_index": i,
                           "item": {**item, "arguments": ""}})
            events.append({"type": "response.function_call_arguments.delta",
                           "output_index": i, "delta": item["arguments"]})
        else:
            events.append({"type": "response.output_text.delta", "output_index": i,
                           "delta": "hi"})
    events.append({"type": "response.completed", "response": response})
    return _sse(*events, named=True)


def _anthropic(calls: list[Call], model: Any, rid: Any, finish: Any, stream: bool) -> bytes:
    if not stream:
        content: list[dict[str, Any]] = []
        for cid, name, args in calls:
            block: dict[str, Any] = {"type": "tool_use", "name": name, "input": args}
            _put(block, "id", cid)
            content.append(block)
        if not calls:
            content.append({"type": "text", "text": "hi"})
        body: dict[str, Any] = {"type": "message", "role": "assistant", "content": content,
                                "stop_reason": finish,
                                "usage": {"input_tokens": 1, "output_tokens": 1}}
        _put(body, "model", model)
        _put(body, "id", rid)
        return json.dumps(body).encode()
    message: dict[str, Any] = {"usage": {"input_tokens": 1}}
    _put(message, "model", model)
    _put(message, "id", rid)
    events: list[dict[str, Any]] = [{"type": "message_start", "message": message}]
    for i, (cid, name, args) in enumerate(calls):
        block = {"type": "tool_use", "name": name, "input": {}}
        _put(block, "id", cid)
        events += [
            {"type": "content_block_start", "index": i, "content_block": block},
            {"type": "content_block_delta", "index": i,
             "delta": {"type": "input_json_delta", "partial_json": _text_args(args)}},
            {"type": "content_block_stop", "index": i}]
    if not calls:
        events += [
            {"type": "content_block_start", "index": 0,
             "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": "text_delta", "text": "hi"}},
            {"type": "content_block_stop", "index": 0}]
    events += [{"type": "message_delta", "delta": {"stop_reason": finish},
                "usage": {"output_tokens": 1}},
               {"type": "message_stop"}]
    return _sse(*events, named=True)


def _gemini(calls: list[Call], model: Any, rid: Any, finish: Any, stream: bool) -> bytes:
    parts: list[dict[str, Any]] = []
    for cid, name, args in calls:
        call: dict[str, Any] = {"name": name, "args": args}
        _put(call, "id", cid)
        parts.append({"functionCall": call})
    if not calls:
        parts.append({"text": "hi"})
    last: dict[str, Any] = {
        "candidates": [{"content": {"role": "model", "parts": [] if stream else parts},
                        "finishReason": finish}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1}}
    _put(last, "modelVersion", model)
    _put(last, "responseId", rid)
    if not stream:
        return json.dumps(last).encode()
    chunks = [{"candidates": [{"content": {"role": "model", "parts": [part]}}]}
              for part in parts]
    return _sse(*chunks, last)


def _ollama(calls: list[Call], model: Any, rid: Any, finish: Any, stream: bool) -> bytes:
    tool_calls: list[dict[str, Any]] = []
    for cid, name, args in calls:
        call: dict[str, Any] = {"function": {"name": name, "arguments": args}}
        _put(call, "id", cid)
        tool_calls.append(call)
    last: dict[str, Any] = {"message": {"role": "assistant", "content": ""}, "done": True,
                            "done_reason": finish, "prompt_eval_count": 1, "eval_count": 1}
    _put(last, "model", model)
    if not stream:
        last["message"] = {"role": "assistant", "content": "" if calls else "hi",
                           "tool_calls": tool_calls}
        return json.dumps(last).encode()
    lines = [{"message": {"role": "assistant", "content": "", "tool_calls": [c]},
              "done": False} for c in tool_calls]
    if not calls:
        lines.append({"message": {"role": "assistant", "content": "hi"}, "done": False})
    return b"".join(json.dumps(line).encode() + b"\n" for line in [*lines, last])


Make = Callable[[list[Call], Any, Any, Any, bool], bytes]
CASES: dict[str, tuple[str, str, Make, str]] = {
    # case: (protocol, model, body maker, a good finish reason)
    "openai": ("openai", "gpt-4o", _openai, "stop"),
    "responses": ("openai_responses", "gpt-5", _responses, "completed"),
    "anthropic": ("anthropic", "claude-sonnet-4-5", _anthropic, "end_turn"),
    "gemini": ("gemini", "gemini-2.5-flash", _gemini, "STOP"),
    "ollama": ("ollama", "llama3.2:3b", _ollama, "stop"),
}
ALL = [pytest.param(case, stream, id=f"{case}-{'stream' if stream else 'whole'}")
       for case in CASES for stream in (False, True)]
STREAMED = ["openai", "responses", "anthropic", "gemini", "ollama"]


def _body(case: str, stream: bool, calls: list[Call] | None = None, *, model: Any = OMIT,
          rid: Any = OMIT, finish: Any = OMIT) -> bytes:
    _, good_model, make, good_finish = CASES[case]
    return make([GOOD_CALL] if calls is None else calls,
                good_model if model is OMIT else model, "r1" if rid is OMIT else rid,
                good_finish if finish is OMIT else finish, stream)


def _decode(case: str, stream: bool, body: bytes) -> ModelResponse:
    protocol, model, _, _ = CASES[case]
    endpoint = Endpoint(name=case, protocol=protocol, base_url="http://127.0.0.1:1",
                        api_key="k")
    request = ModelRequest(model=model, messages=(Message.user("hi"),), stream=stream)
    wire = get_protocol(protocol)
    if not stream:
        return wire.decode(body, request, endpoint)
    decoder = wire.stream_decoder(request, endpoint)
    builder = ResponseBuilder(model)
    for event in decoder.feed(body) + decoder.close():
        builder.add(event)
    return builder.build(provider=case)


def _calls(response: ModelResponse) -> list[tuple[Any, Any, Any]]:
    return [(c.id, c.name, c.arguments) for c in response.tool_calls]


# --- the good reply, as a baseline ----------------------------------------------------------


@pytest.mark.parametrize(("case", "stream"), ALL)
def test_a_good_reply_decodes_to_its_call_and_metadata(case: str, stream: bool) -> None:
    response = _decode(case, stream, _body(case, stream))
    (call,) = response.tool_calls
    assert (call.name, json.loads(call.arguments)) == ("get", {"a": 1})
    assert call.id == "c1"
    assert response.model == CASES[case][1]
    assert response.response_id == (None if case == "ollama" else "r1")
    assert type(response.finish_reason) is str


# --- a tool call's name -----------------------------------------------------------------


BAD_NAMES = [5, True, ["get"], {"name": "get"}]


@pytest.mark.parametrize(("case", "stream"), ALL)
@pytest.mark.parametrize("name", BAD_NAMES, ids=repr)
def test_a_tool_name_that_is_not_text_is_a_bad_reply(case: str, stream: bool,
                                                     name: Any) -> None:
    body = _body(case, stream, [("c1", name, {"a": 1})])
    try:
        response = _decode(case, stream, body)
    except ValueError as exc:
        assert "name" in str(exc)
        return
    pytest.fail(f"decoded to tool calls {_calls(response)!r}")


@pytest.mark.parametrize("server_class", [FakeOpenAIServer, FakeAnthropicServer,
                                          FakeGeminiServer, FakeOllamaServer],
                         ids=lambda c: c.__name__)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_the_client_fails_a_call_with_a_name_that_is_not_text(
        server_class: type[FakeServer], stream: bool) -> None:
    case = {FakeOpenAIServer: "openai", FakeAnthropicServer: "anthropic",
            FakeGeminiServer: "gemini", FakeOllamaServer: "ollama"}[server_class]
    protocol, model, _, _ = CASES[case]
    transport = AiohttpTransport()
    try:
        async with server_class() as server:
            base = server.base_url + ("/v1" if case == "openai" else "")
            endpoint = Endpoint(name=case, protocol=protocol, base_url=base, api_key="k")
            client = ProviderClient(endpoint, get_protocol(protocol), transport)
            server.script(FakeBadBody(body=_body(case, stream, [("c1", 5, {"a": 1})])))
            request = ModelRequest(model=model, messages=(Message.user("hi"),),
                                   stream=stream)
            with pytest.raises(ProviderError) as info:
                await client.complete(request)
    finally:
        await transport.aclose()
    assert (info.value.phase, info.value.request_sent, info.value.provider) == (
        "body", True, case)
    assert "name" in str(info.value)


# --- a tool call's id ---------------------------------------------------------------------


BAD_IDS = [5, True, ["c1"], {"id": "c1"}]


@pytest.mark.parametrize(("case", "stream"), ALL)
@pytest.mark.parametrize("call_id", BAD_IDS, ids=repr)
def test_a_tool_call_id_that_is_not_text_reads_as_a_missing_one(case: str, stream: bool,
                                                                call_id: Any) -> None:
    response = _decode(case, stream, _body(case, stream, [(call_id, "get", {"a": 1})]))
    missing = _decode(case, stream, _body(case, stream, [(OMIT, "get", {"a": 1})]))
    (call,) = response.tool_calls
    assert type(call.id) is str and call.id
    assert _calls(response) == _calls(missing)


@pytest.mark.parametrize(("case", "stream"), ALL)
def test_calls_that_share_an_id_get_distinct_ones(case: str, stream: bool) -> None:
    calls: list[Call] = [("c1", "get", {"a": 1}), ("c1", "get", {"a": 2}),
                         ("c1_1", "get", {"a": 3}), ("c1", "get", {"a": 4})]
    response = _decode(case, stream, _body(case, stream, calls))
    ids = [c.id for c in response.tool_calls]
    assert len(set(ids)) == 4, ids
    assert ids[0] == "c1" and ids[2] == "c1_1"  # the first holder keeps its own id
    assert [json.loads(c.arguments)["a"] for c in response.tool_calls] == [1, 2, 3, 4]


@pytest.mark.parametrize(("case", "stream"), ALL)
def test_three_thousand_calls_with_one_id_get_as_many_ids(case: str, stream: bool) -> None:
    response = _decode(case, stream, _body(case, stream, [("c", "get", {})] * 3000))
    assert len({c.id for c in response.tool_calls}) == 3000


def test_an_agent_answers_each_of_two_calls_that_share_an_id_under_its_own(
        openai_server: FakeOpenAIServer) -> None:
    def get(a: int) -> str:
        """Look `a` up."""
        return f"value {a}"

    reply = _body("openai", False, [("dup", "get", {"a": 1}), ("dup", "get", {"a": 2})],
                  finish="tool_calls")
    openai_server.script(FakeBadBody(body=reply), "done")
    env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": openai_server.openai_base_url,
           "AGENTLOOM_MODEL": "gpt-4o-mini"}
    with Agent.from_env(env, tools=[get]) as agent:
        assert agent.run_result("go").text == "done"
    second = openai_server.requests[1].json["messages"]
    (assistant,) = [m for m in second if m["role"] == "assistant"]
    call_ids = [c["id"] for c in assistant["tool_calls"]]
    results = {m["tool_call_id"]: m["content"] for m in second if m["role"] == "tool"}
    assert len(set(call_ids)) == 2 and set(results) == set(call_ids)
    assert [results[i] for i in call_ids] == ["value 1", "value 2"]


# --- arguments of a non-streamed call ----------------------------------------------------


@pytest.mark.parametrize("case", ["openai", "responses"])
@pytest.mark.parametrize("arguments", [[1], 5, 1.5, True], ids=repr)
def test_whole_arguments_that_are_neither_text_nor_an_object_are_a_bad_reply(
        case: str, arguments: Any) -> None:
    body = _body(case, False, [("c1", "get", arguments)])
    try:
        response = _decode(case, False, body)
    except ValueError as exc:
        assert "arguments" in str(exc)
        return
    pytest.fail(f"decoded to tool calls {_calls(response)!r}")


@pytest.mark.parametrize("case", ["openai", "responses"])
def test_whole_arguments_written_as_an_object_are_read_as_its_json(case: str) -> None:
    _, model, make, finish = CASES[case]
    call: Call = ("c1", "get", {"a": 1})
    body = json.loads(make([call], model, "r1", finish, False))
    # The arguments as an object, not as the JSON text of one.
    if case == "openai":
        body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = {"a": 1}
    else:
        body["output"][0]["arguments"] = {"a": 1}
    response = _decode(case, False, json.dumps(body).encode())
    ((call_id, name, arguments),) = _calls(response)
    assert (call_id, name, json.loads(arguments)) == ("c1", "get", {"a": 1})


# --- metadata: model, response id, finish reason -------------------------------------------


BAD_META = [5, True, ["x"], {"x": 1}]


@pytest.mark.parametrize(("case", "stream"), ALL)
@pytest.mark.parametrize("value", BAD_META, ids=repr)
def test_a_model_that_is_not_text_reads_as_the_requested_one(case: str, stream: bool,
                                                             value: Any) -> None:
    response = _decode(case, stream, _body(case, stream, [], model=value))
    assert response.model == CASES[case][1]
    assert response.text == "hi"


@pytest.mark.parametrize(("case", "stream"), [p for p in ALL if p.values[0] != "ollama"])
@pytest.mark.parametrize("value", BAD_META, ids=repr)
def test_a_response_id_that_is_not_text_reads_as_none(case: str, stream: bool,
                                                      value: Any) -> None:
    response = _decode(case, stream, _body(case, stream, [], rid=value))
    assert response.response_id is None
    assert response.text == "hi"


@pytest.mark.parametrize(("case", "stream"), ALL)
@pytest.mark.parametrize("value", BAD_META, ids=repr)
def test_a_finish_reason_that_is_not_text_reads_as_none(case: str, stream: bool,
                                                        value: Any) -> None:
    response = _decode(case, stream, _body(case, stream, [], finish=value))
    assert response.finish_reason is None
    assert response.text == "hi"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("value", BAD_META, ids=repr)
def test_a_responses_incomplete_reason_that_is_not_text_reads_as_none(
        stream: bool, value: Any) -> None:
    response: dict[str, Any] = {"id": "r1", "model": "gpt-5", "status": 7,
                                "incomplete_details": {"reason": value}, "output": []}
    if stream:
        body = _sse({"type": "response.incomplete", "response": response}, named=True)
    else:
        body = json.dumps(response).encode()
    assert _decode("responses", stream, body).finish_reason is None


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("value", BAD_META, ids=repr)
def test_a_gemini_block_reason_that_is_not_text_reads_as_none(stream: bool,
                                                              value: Any) -> None:
    chunk = {"promptFeedback": {"blockReason": value}, "modelVersion": "gemini-2.5-flash"}
    body = _sse(chunk) if stream else json.dumps(chunk).encode()
    assert _decode("gemini", stream, body).finish_reason is None


# --- non-streamed text, reasoning and signatures ------------------------------------------


def _anthropic_whole(*content: dict[str, Any]) -> bytes:
    return json.dumps({"type": "message", "id": "m", "model": "claude-sonnet-4-5",
                       "content": list(content), "stop_reason": "end_turn"}).encode()


def _gemini_whole(*parts: dict[str, Any]) -> bytes:
    return json.dumps({"candidates": [{"content": {"role": "model", "parts": list(parts)},
                                       "finishReason": "STOP"}]}).encode()


BAD_PIECES = {
    "anthropic text": ("anthropic", lambda v: _anthropic_whole({"type": "text", "text": v})),
    "anthropic thinking": ("anthropic", lambda v: _anthropic_whole(
        {"type": "thinking", "thinking": v, "signature": "s"})),
    "anthropic signature": ("anthropic", lambda v: _anthropic_whole(
        {"type": "thinking", "thinking": "t", "signature": v})),
    "anthropic redacted": ("anthropic", lambda v: _anthropic_whole(
        {"type": "redacted_thinking", "data": v})),
    "gemini text": ("gemini", lambda v: _gemini_whole({"text": v})),
    "gemini thought": ("gemini", lambda v: _gemini_whole({"text": v, "thought": True})),
    "gemini signature": ("gemini", lambda v: _gemini_whole(
        {"text": "t", "thought": True, "thoughtSignature": v})),
}


@pytest.mark.parametrize("where", BAD_PIECES)
@pytest.mark.parametrize("value", [5, ["x"], {"x": 1}], ids=repr)
def test_whole_text_or_reasoning_that_is_not_text_is_a_bad_reply(where: str,
                                                                 value: Any) -> None:
    case, make = BAD_PIECES[where]
    try:
        response = _decode(case, False, make(value))
    except ValueError as exc:
        assert "not text" in str(exc)
        return
    pytest.fail(f"decoded to parts {response.parts!r}")


@pytest.mark.parametrize("where", BAD_PIECES)
def test_whole_text_and_reasoning_that_are_text_decode(where: str) -> None:
    case, make = BAD_PIECES[where]
    assert _decode(case, False, make("ok")).parts
