"""A fake Anthropic Messages server on 127.0.0.1, for our tests and yours.

It speaks the real wire format: `POST /v1/messages` answers a `message` object, or with
`"stream": true` the SSE sequence message_start, content_block_start/delta/stop (thinking
with its signature, text, tool_use with input_json_delta), message_delta, message_stop,
with pings between. `thinking.display: omitted` gets signed thinking without its text.
Like the real API it wants `x-api-key` and `anthropic-version`, and
when the request ends with an assistant turn (a prefill) the reply continues it: a
scripted text that starts with the prefill is sent without it.

    async with FakeAnthropicServer() as server:
        server.script(FakeReply(text="Hi", reasoning="Let me think"))
"""

from __future__ import annotations

import hashlib
import itertools
import json
from typing import Any

from aiohttp import web

from agentloom.testing._server import (
    FakeError,
    FakeReply,
    FakeServer,
    split_text,
)

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                403: "permission_error", 404: "not_found_error", 413: "request_too_large",
                429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}
_ids = itertools.count(1)


def _usage(reply: FakeReply) -> dict[str, Any]:
    return {
        "input_tokens": reply.input_tokens,
        "output_tokens": reply.output_tokens,
        "cache_read_input_tokens": reply.cached_tokens or 0,
        "cache_creation_input_tokens": reply.cache_write_tokens or 0,
    }


def _segments(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """The prompt in cache order (tools, system, then each turn's blocks): each segment's
    text without its mark, and whether it carries a `cache_control` mark."""
    out: list[tuple[str, bool]] = []

    def add(block: Any) -> None:
        marked = isinstance(block, dict) and "cache_control" in block
        plain = {k: v for k, v in block.items() if k != "cache_control"} \
            if isinstance(block, dict) else block
        out.append((json.dumps(plain, sort_keys=True), marked))

    for tool in body.get("tools") or ():
        add(tool)
    system = body.get("system")
    for block in ([{"type": "text", "text": system}] if isinstance(system, str) else
                  system or ()):
        add(block)
    for message in body.get("messages") or ():
        content = message.get("content")
        for block in ([{"type": "text", "text": content}] if isinstance(content, str)
                      else content or ()):
            add({"role": message.get("role"), **block} if isinstance(block, dict) else block)
    return out


class PromptCache:
    """Anthropic's prompt cache, as the API describes it: a request caches its prompt up
    to each `cache_control` mark; a later request reads the longest cached prefix of its
    own and writes the rest up to its last mark. Tokens are counted as 4 characters."""

    def __init__(self) -> None:
        self.prefixes: set[str] = set()

    def usage(self, body: Any) -> tuple[int, int, int] | None:
        """(uncached input, cache read, cache write) tokens; None without marks."""
        if not isinstance(body, dict):
            return None
        segments = _segments(body)
        marks = [i for i, (_text, marked) in enumerate(segments) if marked]
        if not marks:
            return None
        hashes, sizes, running, size = [], [], hashlib.sha256(), 0
        for text, _marked in segments:
            running.update(text.encode())
            hashes.append(running.hexdigest())
            size += max(1, len(text) // 4)
            sizes.append(size)
        last = marks[-1]
        hit = max((i for i in range(last + 1) if hashes[i] in self.prefixes), default=None)
        read = sizes[hit] if hit is not None else 0
        self.prefixes.update(hashes[i] for i in marks)
        return sizes[-1] - sizes[last], read, sizes[last] - read


def _prefill(body: Any) -> str:
    messages = body.get("messages") if isinstance(body, dict) else None
    if not messages or messages[-1].get("role") != "assistant":
        return ""
    content = messages[-1].get("content")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


def _text(body: Any, reply: FakeReply) -> str:
    prefill = _prefill(body)
    return reply.text[len(prefill):] if prefill and reply.text.startswith(prefill) else reply.text


def _args(args: dict[str, Any] | str) -> dict[str, Any]:
    if isinstance(args, str):
        value = json.loads(args) if args else {}
        return value if isinstance(value, dict) else {}
    return args


class FakeAnthropicServer(FakeServer):
    """Serves POST /v1/messages. A request with `cache_control` marks gets its cache reads
    and writes from `prompt_cache` (unless the scripted reply gives its own counts)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.prompt_cache = PromptCache()

    def usage(self, body: Any, reply: FakeReply) -> dict[str, Any]:
        usage = _usage(reply)
        counted = self.prompt_cache.usage(body)
        if counted is not None and reply.cached_tokens is None and \
                reply.cache_write_tokens is None:
            usage["input_tokens"], usage["cache_read_input_tokens"], \
                usage["cache_creation_input_tokens"] = counted
        return usage

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/v1/messages", self._messages)]

    def error_body(self, entry: FakeError) -> FakeError:
        """A plain-text scripted error, wrapped as the API wraps its errors."""
        if isinstance(entry.body, dict):
            return entry
        kind = _ERROR_TYPES.get(entry.status, "api_error")
        return FakeError(status=entry.status, headers=entry.headers,
                         body={"type": "error", "error": {"type": kind, "message": entry.body}})

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await self.record(request)
        if "x-api-key" not in request.headers:
            return self.error_response(self.error_body(FakeError(
                status=401, body="x-api-key header is required")))
        if "anthropic-version" not in request.headers:
            return self.error_response(self.error_body(FakeError(
                status=400, body="anthropic-version header is required")))
        taken = self.take(request, body)
        if isinstance(taken, web.StreamResponse):
            return taken
        entry, drop_after = taken
        if isinstance(body, dict) and body.get("stream"):
            return await self.stream_lines(request, self.events(body, entry),
                                           content_type="text/event-stream",
                                           drop_after=drop_after)
        return web.json_response(self.message(body, entry))

    def _head(self, body: Any, reply: FakeReply) -> tuple[str, str]:
        model = reply.model or (body.get("model") if isinstance(body, dict) else None)
        return f"msg_fake{next(_ids)}", model or "claude-sonnet-4-5"

    def _blocks(self, body: Any, reply: FakeReply, rid: str) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if reply.reasoning is not None:
            thinking = (body.get("thinking") if isinstance(body, dict) else None) or {}
            shown = "" if thinking.get("display") == "omitted" else reply.reasoning
            blocks.append({"type": "thinking", "thinking": shown,
                           "signature": reply.reasoning_signature or f"sig-{rid}"})
        text = _text(body, reply)
        if text or not reply.tool_calls:
            blocks.append({"type": "text", "text": text})
        for i, (name, args) in enumerate(reply.tool_calls):
            blocks.append({"type": "tool_use", "id": f"toolu_{rid}_{i}", "name": name,
                           "input": _args(args)})
        return blocks

    @staticmethod
    def _finish(reply: FakeReply) -> str:
        return reply.finish_reason or ("tool_use" if reply.tool_calls else "end_turn")

    def message(self, body: Any, reply: FakeReply) -> dict[str, Any]:
        """A whole `message` object for this reply."""
        rid, model = self._head(body, reply)
        return {
            "id": rid, "type": "message", "role": "assistant", "model": model,
            "content": self._blocks(body, reply, rid), "stop_reason": self._finish(reply),
            "stop_sequence": None, "usage": self.usage(body, reply),
        }

    def events(self, body: Any, reply: FakeReply) -> list[bytes]:
        """The SSE events of a streamed reply."""
        rid, model = self._head(body, reply)

        def event(name: str, data: dict[str, Any]) -> bytes:
            return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

        start_usage = {**self.usage(body, reply), "output_tokens": 1}
        out = [event("message_start", {"type": "message_start", "message": {
            "id": rid, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": start_usage}})]
        for index, block in enumerate(self._blocks(body, reply, rid)):
            out.extend(self._block_events(event, index, block, reply))
        out.append(event("ping", {"type": "ping"}))
        out.append(event("message_delta", {
            "type": "message_delta",
            "delta": {"stop_reason": self._finish(reply), "stop_sequence": None},
            "usage": {"output_tokens": reply.output_tokens}}))
        out.append(event("message_stop", {"type": "message_stop"}))
        return out

    @staticmethod
    def _block_events(event: Any, index: int, block: dict[str, Any],
                      reply: FakeReply) -> list[bytes]:
        kind = block["type"]
        start: dict[str, Any]
        if kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": piece}
                      for piece in split_text(block["thinking"], None)]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece}
                      for piece in split_text(block["text"], reply.chunks)]
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            text = json.dumps(block["input"])
            half = len(text) // 2
            deltas = [{"type": "input_json_delta", "partial_json": piece}
                      for piece in (text[:half], text[half:]) if piece]
        out = [event("content_block_start", {"type": "content_block_start", "index": index,
                                             "content_block": start})]
        out.extend(event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                 "delta": d}) for d in deltas)
        out.append(event("content_block_stop", {"type": "content_block_stop", "index": index}))
        return out
