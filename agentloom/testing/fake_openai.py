"""A fake OpenAI server on 127.0.0.1 (Chat Completions and the Responses API), for our
tests and yours.

It speaks the real wire format (plain JSON, and SSE with `data: [DONE]` and the final
usage chunk when `stream_options.include_usage` is set), so anything that talks to OpenAI
or a compatible server can be pointed at `server.base_url + "/v1"` and run offline.

    async with FakeOpenAIServer() as server:
        server.script("Hello!", FakeError(status=429, headers={"Retry-After": "2"}))
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

from aiohttp import web

from agentloom.testing import fake_openai_responses as wire
from agentloom.testing._server import (
    FakeReply,
    FakeServer,
    split_text,
)

_COMPLETION_IDS = itertools.count(1)
"""Completion ids stay unique across every fake server of a process."""


def _usage(reply: FakeReply) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }
    if reply.cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
    if reply.reasoning_tokens is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reply.reasoning_tokens}
    return usage


def _arguments(args: dict[str, Any] | str) -> str:
    return args if isinstance(args, str) else json.dumps(args)

class FakeOpenAIServer(FakeServer):
    """Serves POST /v1/chat/completions and /v1/responses (also without /v1) and
    GET /v1/models."""


    def routes(self) -> list[web.RouteDef]:
        return [
            web.post("/v1/chat/completions", self._chat),
            web.post("/chat/completions", self._chat),
            web.post("/v1/responses", self._responses),
            web.post("/responses", self._responses),
            web.get("/v1/models", self._models),
        ]

    @property
    def openai_base_url(self) -> str:
        """The base URL an OpenAI client expects (with `/v1`)."""
        return self.base_url + "/v1"

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response(
            {"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model",
                                         "created": 0, "owned_by": "agentloom-fake"}]}
        )

    def _ids(self, body: Any, reply: FakeReply) -> tuple[str, str, int]:
        model = reply.model or (body.get("model") if isinstance(body, dict) else None)
        return f"chatcmpl-fake{next(_COMPLETION_IDS)}", model or "gpt-4o-mini", int(
            time.time()
        )

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await self.record(request)
        taken = self.take(request, body)
        if isinstance(taken, web.StreamResponse):
            return taken
        reply, drop_after = taken
        if drop_after is not None or (isinstance(body, dict) and body.get("stream")):
            return await self._stream(request, body, reply, drop_after=drop_after)
        return web.json_response(self.completion(body, reply))

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        body = await self.record(request)
        taken = self.take(request, body)
        if isinstance(taken, web.StreamResponse):
            return taken
        reply, drop_after = taken
        rid, model, _created = self._ids(body, reply)
        if drop_after is not None or (isinstance(body, dict) and body.get("stream")):
            return await self.stream_lines(request, wire.stream_events(body, reply, rid, model),
                                           content_type="text/event-stream",
                                           drop_after=drop_after)
        return web.json_response(wire.response_object(body, reply, rid, model))

    def completion(self, body: Any, reply: FakeReply) -> dict[str, Any]:
        """A whole `chat.completion` object for this reply."""
        rid, model, created = self._ids(body, reply)
        message: dict[str, Any] = {"role": "assistant",
                                   "content": reply.text if reply.text or not reply.tool_calls
                                   else None}
        if reply.reasoning:
            message["reasoning_content"] = reply.reasoning
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": f"call_{i}", "type": "function",
                 "function": {"name": name, "arguments": _arguments(args)}}
                for i, (name, args) in enumerate(reply.tool_calls)
            ]
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        return {
            "id": rid, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish,
                         "logprobs": None}],
            "usage": _usage(reply),
        }

    def chunks(self, body: Any, reply: FakeReply) -> list[bytes]:
        """The SSE events of a streamed reply, each one `data: ...\\n\\n`."""
        rid, model, created = self._ids(body, reply)
        head = {"id": rid, "object": "chat.completion.chunk", "created": created,
                "model": model}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            obj = {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            return b"data: " + json.dumps(obj).encode() + b"\n\n"

        out = [chunk({"role": "assistant", "content": ""})]
        if reply.reasoning:
            out.extend(chunk({"reasoning_content": piece})
                       for piece in split_text(reply.reasoning, None))
        out.extend(chunk({"content": piece}) for piece in split_text(reply.text, reply.chunks))
        for i, (name, args) in enumerate(reply.tool_calls):
            text = _arguments(args)
            half = len(text) // 2
            out.append(chunk({"tool_calls": [{"index": i, "id": f"call_{i}", "type": "function",
                                              "function": {"name": name, "arguments": ""}}]}))
            for piece in (text[:half], text[half:]):
                if piece:
                    out.append(chunk({"tool_calls": [{"index": i,
                                                      "function": {"arguments": piece}}]}))
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        out.append(chunk({}, finish))
        options = body.get("stream_options") if isinstance(body, dict) else None
        if isinstance(options, dict) and options.get("include_usage"):
            usage = {**head, "choices": [], "usage": _usage(reply)}
            out.append(b"data: " + json.dumps(usage).encode() + b"\n\n")
        out.append(b"data: [DONE]\n\n")
        return out

    async def _stream(
        self, request: web.Request, body: Any, reply: FakeReply, *, drop_after: int | None
    ) -> web.StreamResponse:
        return await self.stream_lines(request, self.chunks(body, reply),
                                       content_type="text/event-stream",
                                       drop_after=drop_after)
