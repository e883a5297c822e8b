"""The OpenAI Responses API (`POST /v1/responses`) for `FakeOpenAIServer`: plain JSON and
SSE, as the real API answers.

A scripted `FakeReply` becomes output items: a `reasoning` item when it has reasoning
(with `encrypted_content` when the request asked for it in `include`), a `message` item
with the text, and one `function_call` item per tool call. Streams send the events a
client reads: `response.created`, `response.output_item.added`/`.done`, text, reasoning
summary and call-argument deltas, and `response.completed` with usage.
"""

from __future__ import annotations

import json
from typing import Any

from agentloom.testing._server import FakeReply, split_text


def usage(reply: FakeReply) -> dict[str, Any]:
    details: dict[str, Any] = {"cached_tokens": reply.cached_tokens or 0}
    if reply.cache_write_tokens is not None:  # newer API versions always send it
        details["cache_write_tokens"] = reply.cache_write_tokens
    return {
        "input_tokens": reply.input_tokens,
        "input_tokens_details": details,
        "output_tokens": reply.output_tokens,
        "output_tokens_details": {"reasoning_tokens": reply.reasoning_tokens or 0},
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }


def output_items(body: Any, reply: FakeReply, rid: str) -> list[dict[str, Any]]:
    include = body.get("include") if isinstance(body, dict) else None
    items: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        item: dict[str, Any] = {"id": f"rs_{rid}", "type": "reasoning",
                                "summary": [{"type": "summary_text", "text": reply.reasoning}]}
        if isinstance(include, list) and "reasoning.encrypted_content" in include:
            item["encrypted_content"] = reply.reasoning_signature or f"enc-{rid}"
        items.append(item)
    if reply.text or not reply.tool_calls:
        items.append({"id": f"msg_{rid}", "type": "message", "status": "completed",
                      "role": "assistant",
                      "content": [{"type": "output_text", "text": reply.text,
                                   "annotations": []}]})
    for i, (name, args) in enumerate(reply.tool_calls):
        arguments = args if isinstance(args, str) else json.dumps(args)
        items.append({"id": f"fc_{rid}_{i}", "type": "function_call", "status": "completed",
                      "call_id": f"call_{i}", "name": name, "arguments": arguments})
    return items


def response_object(body: Any, reply: FakeReply, rid: str, model: str) -> dict[str, Any]:
    incomplete = reply.finish_reason in ("max_output_tokens", "content_filter")
    return {
        "id": f"resp_{rid}", "object": "response", "created_at": 0, "model": model,
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": reply.finish_reason} if incomplete else None,
        "error": None, "output": output_items(body, reply, rid), "usage": usage(reply),
        "parallel_tool_calls": True,
        "tool_choice": body.get("tool_choice", "auto") if isinstance(body, dict) else "auto",
        "tools": body.get("tools", []) if isinstance(body, dict) else [],
    }


def _encode(payload: dict[str, Any]) -> bytes:
    return (f"event: {payload['type']}\ndata: ".encode() + json.dumps(payload).encode()
            + b"\n\n")


def stream_events(body: Any, reply: FakeReply, rid: str, model: str) -> list[bytes]:
    final = response_object(body, reply, rid, model)
    head = {**final, "status": "in_progress", "output": [], "usage": None}
    out: list[bytes] = []

    def _event(payload: dict[str, Any]) -> bytes:
        return _encode({**payload, "sequence_number": len(out)})

    out.append(_event({"type": "response.created", "response": head}))
    for index, item in enumerate(final["output"]):
        kind = item["type"]
        start = dict(item)
        if kind == "message":
            start["content"] = []
        elif kind == "function_call":
            start["arguments"] = ""
        elif kind == "reasoning":
            start["summary"] = []
        out.append(_event({"type": "response.output_item.added", "output_index": index,
                           "item": start}))
        if kind == "message":
            for piece in split_text(reply.text, reply.chunks):
                out.append(_event({"type": "response.output_text.delta", "item_id": item["id"],
                                   "output_index": index, "content_index": 0,
                                   "delta": piece, "logprobs": []}))
        elif kind == "function_call":
            text = item["arguments"]
            for piece in (text[: len(text) // 2], text[len(text) // 2:]):
                if piece:
                    out.append(_event({"type": "response.function_call_arguments.delta",
                                       "item_id": item["id"], "output_index": index,
                                       "delta": piece}))
        elif kind == "reasoning":
            for piece in split_text(reply.reasoning or "", None):
                out.append(_event({"type": "response.reasoning_summary_text.delta",
                                   "item_id": item["id"], "output_index": index,
                                   "summary_index": 0, "delta": piece}))
        out.append(_event({"type": "response.output_item.done", "output_index": index,
                           "item": item}))
    out.append(_event({"type": "response.completed", "response": final}))
    return out
