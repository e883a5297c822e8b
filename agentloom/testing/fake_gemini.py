"""A fake Google Gemini server on 127.0.0.1, for our tests and yours.

It speaks the real wire format: `POST /v1beta/models/{model}:generateContent` answers a
`GenerateContentResponse`; `:streamGenerateContent?alt=sse` sends one per SSE event,
separated by CRLF blank lines as Google does, the last one with the finish reason and
usage. Thought parts are sent only when the request asks for them
(`thinkingConfig.includeThoughts`), as the real API does; the key comes in
`x-goog-api-key` (or `?key=`).

    async with FakeGeminiServer() as server:
        server.script(FakeReply(text="Hi", tool_calls=[("lookup", {"q": "x"})]))
"""

from __future__ import annotations

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

_STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL",
                 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
_ids = itertools.count(1)


def _usage(reply: FakeReply) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "promptTokenCount": reply.input_tokens,
        "candidatesTokenCount": reply.output_tokens,
        "totalTokenCount": reply.input_tokens + reply.output_tokens
        + (reply.reasoning_tokens or 0),
    }
    if reply.reasoning_tokens is not None:
        usage["thoughtsTokenCount"] = reply.reasoning_tokens
    if reply.cached_tokens is not None:
        usage["cachedContentTokenCount"] = reply.cached_tokens
    return usage


def _args(args: dict[str, Any] | str) -> dict[str, Any]:
    if isinstance(args, str):
        value = json.loads(args) if args else {}
        return value if isinstance(value, dict) else {}
    return args


def _wants_thoughts(body: Any) -> bool:
    config = body.get("generationConfig") if isinstance(body, dict) else None
    thinking = (config or {}).get("thinkingConfig") or {}
    return bool(thinking.get("includeThoughts"))


class FakeGeminiServer(FakeServer):
    """Serves POST /v1beta/models/{model}:generateContent and :streamGenerateContent."""

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/v1beta/models/{target}", self._generate)]

    def error_body(self, entry: FakeError) -> FakeError:
        """A plain-text scripted error, wrapped as Google wraps its errors."""
        if isinstance(entry.body, dict):
            return entry
        return FakeError(status=entry.status, headers=entry.headers, body={"error": {
            "code": entry.status, "message": entry.body,
            "status": _STATUS_NAMES.get(entry.status, "UNKNOWN")}})

    async def _generate(self, request: web.Request) -> web.StreamResponse:
        body = await self.record(request)
        model, _, action = request.match_info["target"].partition(":")
        if action not in ("generateContent", "streamGenerateContent"):
            return self.error_response(self.error_body(FakeError(
                status=404, body=f"unknown method {action!r}")))
        if "x-goog-api-key" not in request.headers and "key" not in request.query:
            return self.error_response(self.error_body(FakeError(
                status=403, body="Method doesn't allow unregistered callers")))
        taken = self.take(request, body)
        if isinstance(taken, web.StreamResponse):
            return taken
        entry, drop_after = taken
        if action == "streamGenerateContent":
            return await self.stream_lines(request, self.chunks(body, model, entry),
                                           content_type="text/event-stream",
                                           drop_after=drop_after)
        return web.json_response(self.response(body, model, entry))

    def _parts(self, body: Any, reply: FakeReply, text: str | None) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        signature = reply.reasoning_signature
        if reply.reasoning and _wants_thoughts(body):
            parts.append({"text": reply.reasoning, "thought": True})
        if text:
            parts.append({"text": text})
        for name, args in reply.tool_calls:
            parts.append({"functionCall": {"name": name, "args": _args(args)}})
        if signature and parts:
            # Google puts the signature on the first function call, else the last part.
            calls = [p for p in parts if "functionCall" in p]
            (calls[0] if calls else parts[-1])["thoughtSignature"] = signature
        return parts

    @staticmethod
    def _candidate(parts: list[dict[str, Any]], finish: str | None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish is not None:
            candidate["finishReason"] = finish
        return candidate

    def response(self, body: Any, model: str, reply: FakeReply) -> dict[str, Any]:
        """A whole `GenerateContentResponse` for this reply."""
        return {
            "candidates": [self._candidate(self._parts(body, reply, reply.text),
                                           reply.finish_reason or "STOP")],
            "usageMetadata": _usage(reply),
            "modelVersion": reply.model or model,
            "responseId": f"resp-fake{next(_ids)}",
        }

    def chunks(self, body: Any, model: str, reply: FakeReply) -> list[bytes]:
        """The SSE events of a streamed reply: text pieces, then calls, finish and usage."""
        rid = f"resp-fake{next(_ids)}"
        version = reply.model or model

        def chunk(parts: list[dict[str, Any]], finish: str | None = None,
                  usage: bool = False) -> bytes:
            obj: dict[str, Any] = {"candidates": [self._candidate(parts, finish)],
                                   "modelVersion": version, "responseId": rid}
            if usage:
                obj["usageMetadata"] = _usage(reply)
            return b"data: " + json.dumps(obj).encode() + b"\r\n\r\n"

        out: list[bytes] = []
        if reply.reasoning and _wants_thoughts(body):
            out.append(chunk([{"text": reply.reasoning, "thought": True}]))
        out.extend(chunk([{"text": piece}]) for piece in split_text(reply.text, reply.chunks))
        # An empty body: thought text went out above, only calls and signature remain.
        tail = self._parts({}, reply, None) if reply.tool_calls else []
        if reply.reasoning_signature and not reply.tool_calls:
            tail = [{"text": "", "thoughtSignature": reply.reasoning_signature}]
        out.append(chunk(tail, reply.finish_reason or "STOP", usage=True))
        return out
