"""What a recorded reply says, read straight from its body: the judge of our decoders.

Written apart from `agentloom.providers` on purpose, as plainly as each format allows: a
stream is first folded back into the message it spells out, then that message is read
the same way as a non-streamed body. `Expected` holds only what a caller sees.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agentloom.providers._sse import SSEParser

Usage5 = tuple[int | None, int | None, int | None, int | None, int | None]
"""input, output, cache read, cache write, reasoning."""


@dataclass
class Expected:
    text: str = ""
    tool_calls: list[tuple[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage5 = (None, None, None, None, None)
    reasoning: str | None = None
    signatures: list[str] = field(default_factory=list)
    model: str | None = None
    vendor_blocks: list[dict[str, Any]] = field(default_factory=list)
    error_status: int | None = None
    """Set when the reply is an error (an HTTP status, or an error event in a stream)."""


def sse_payloads(body: str) -> list[tuple[str, Any]]:
    parser = SSEParser()
    events = parser.feed(body.encode()) + parser.close()
    out = []
    for e in events:
        if e.data.strip() == "[DONE]":
            continue
        out.append((e.event, json.loads(e.data)))
    return out


def _args(raw: Any) -> Any:
    if isinstance(raw, str):
        return json.loads(raw) if raw.strip() else {}
    return raw if raw is not None else {}


# --- Anthropic ---------------------------------------------------------------------------

_ANTHROPIC_CLIENT = ("text", "tool_use", "thinking", "redacted_thinking")


def anthropic_message_from_stream(body: str) -> dict[str, Any]:
    message: dict[str, Any] = {"content": []}
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    for _name, p in sse_payloads(body):
        kind = p.get("type")
        if kind == "message_start":
            message = {**p["message"], "content": []}
        elif kind == "content_block_start":
            blocks[p["index"]] = dict(p["content_block"])
        elif kind == "content_block_delta":
            block, d = blocks[p["index"]], p["delta"]
            if d["type"] == "text_delta":
                block["text"] = block.get("text", "") + d["text"]
            elif d["type"] == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + d["thinking"]
            elif d["type"] == "signature_delta":
                block["signature"] = d["signature"]
            elif d["type"] == "input_json_delta":
                partial[p["index"]] = partial.get(p["index"], "") + d["partial_json"]
            elif d["type"] == "citations_delta":
                block.setdefault("citations", []).append(d["citation"])
        elif kind == "content_block_stop":
            i = p["index"]
            if i in partial:
                blocks[i]["input"] = json.loads(partial.pop(i) or "{}")
            message["content"].append(blocks.pop(i))
        elif kind == "message_delta":
            message.update({k: v for k, v in p["delta"].items() if k == "stop_reason"})
            message["usage"] = {**message.get("usage", {}),
                                **{k: v for k, v in p.get("usage", {}).items()
                                   if v is not None}}
        elif kind == "error":
            message["error"] = p["error"]
    return message


def anthropic(case: dict[str, Any]) -> Expected:
    resp = case["response"]
    if resp["status"] != 200:
        return Expected(error_status=resp["status"])
    msg = (anthropic_message_from_stream(resp["body"]) if case["stream"]
           else json.loads(resp["body"]))
    if "error" in msg:
        return Expected(error_status=400 if msg["error"].get("type") in (
            "invalid_request_error",) else None)
    out = Expected(finish_reason=msg.get("stop_reason"), model=msg.get("model"))
    thinking: list[str] = []
    for block in msg["content"]:
        kind = block["type"]
        if kind == "text":
            out.text += block["text"]
        elif kind == "tool_use":
            out.tool_calls.append((block["name"], block.get("input", {})))
        elif kind == "thinking":
            if block.get("thinking"):
                thinking.append(block["thinking"])
            if block.get("signature"):
                out.signatures.append(block["signature"])
        elif kind not in _ANTHROPIC_CLIENT:
            out.vendor_blocks.append(block)
    out.reasoning = "".join(thinking) or None
    u = msg.get("usage") or {}
    out.usage = (u.get("input_tokens"), u.get("output_tokens"),
                 u.get("cache_read_input_tokens"), u.get("cache_creation_input_tokens"), None)
    return out


# --- OpenAI chat completions and compatible servers --------------------------------------


def _chat_content(content: Any) -> tuple[str, str]:
    """(text, reasoning) of a message's content: a string, or typed parts (Mistral)."""
    if isinstance(content, str):
        return content, ""
    text, reasoning = [], []
    for part in content or ():
        if part.get("type") == "text":
            text.append(part.get("text", ""))
        elif part.get("type") == "thinking":
            thought = part.get("thinking")
            if isinstance(thought, str):
                reasoning.append(thought)
            else:
                reasoning.extend(t.get("text", "") for t in thought or ())
    return "".join(text), "".join(reasoning)


def chat_message_from_stream(body: str) -> dict[str, Any]:
    obj: dict[str, Any] = {"choices": [{"message": {}, "finish_reason": None}]}
    msg = obj["choices"][0]["message"]
    calls: dict[int, dict[str, Any]] = {}
    texts: list[str] = []
    reasoning: list[str] = []
    for _name, chunk in sse_payloads(body):
        if "error" in chunk and "choices" not in chunk:
            obj["error"] = chunk["error"]
            continue
        obj["model"] = chunk.get("model") or obj.get("model")
        usage = chunk.get("usage") or (chunk.get("x_groq") or {}).get("usage")
        if usage:
            obj["usage"] = usage
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            t, r = _chat_content(delta.get("content"))
            texts.append(t)
            reasoning.append(r)
            reasoning.append(delta.get("reasoning_content") or delta.get("reasoning") or "")
            for call in delta.get("tool_calls") or ():
                slot = calls.setdefault(call.get("index", 0), {"name": "", "arguments": ""})
                fn = call.get("function") or {}
                slot["name"] += fn.get("name") or ""
                slot["arguments"] += fn.get("arguments") or ""
            if choice.get("finish_reason") is not None:
                obj["choices"][0]["finish_reason"] = choice["finish_reason"]
    msg["content"] = "".join(texts)
    msg["reasoning_content"] = "".join(reasoning)
    msg["tool_calls"] = [{"function": calls[i]} for i in sorted(calls)]
    return obj


def chat(case: dict[str, Any]) -> Expected:
    resp = case["response"]
    if resp["status"] != 200:
        return Expected(error_status=resp["status"])
    obj = chat_message_from_stream(resp["body"]) if case["stream"] else json.loads(resp["body"])
    if "error" in obj and (case["stream"] or not obj.get("choices")):
        err = obj["error"] if isinstance(obj["error"], dict) else {}
        code = err.get("status_code", err.get("code"))
        if not isinstance(code, int) and err.get("type") == "invalid_request_error":
            code = 400
        return Expected(error_status=code if isinstance(code, int) else None)
    choice = obj["choices"][0]
    msg = choice["message"]
    text, reasoning = _chat_content(msg.get("content"))
    reasoning += msg.get("reasoning_content") or msg.get("reasoning") or ""
    out = Expected(text=text, finish_reason=choice.get("finish_reason"), model=obj.get("model"),
                   reasoning=reasoning or None)
    for call in msg.get("tool_calls") or ():
        out.tool_calls.append((call["function"]["name"], _args(call["function"].get("arguments"))))
    u = obj.get("usage") or (obj.get("x_groq") or {}).get("usage") or {}
    prompt = u.get("prompt_tokens_details") or {}
    completion = u.get("completion_tokens_details") or {}
    out.usage = (u.get("prompt_tokens"), u.get("completion_tokens"),
                 prompt.get("cached_tokens"), prompt.get("cache_write_tokens"),
                 completion.get("reasoning_tokens"))
    return out


# --- Gemini ------------------------------------------------------------------------------


_GEMINI_TOOL_PARTS = ("executableCode", "codeExecutionResult", "toolCall", "toolResponse")


def gemini(case: dict[str, Any]) -> Expected:
    resp = case["response"]
    if resp["status"] != 200:
        return Expected(error_status=resp["status"])
    chunks = ([p for _n, p in sse_payloads(resp["body"])] if case["stream"]
              else [json.loads(resp["body"])])
    out = Expected()
    thoughts: list[str] = []
    usage: dict[str, Any] = {}
    for chunk in chunks:
        if "error" in chunk:
            return Expected(error_status=chunk["error"].get("code"))
        out.model = chunk.get("modelVersion") or out.model
        usage = chunk.get("usageMetadata") or usage
        candidates = chunk.get("candidates") or []
        candidate = candidates[0] if candidates else {}
        if candidate.get("finishReason"):
            out.finish_reason = candidate["finishReason"]
        elif not candidates and (chunk.get("promptFeedback") or {}).get("blockReason"):
            out.finish_reason = chunk["promptFeedback"]["blockReason"]
        for part in (candidate.get("content") or {}).get("parts") or ():
            if not part.get("thought") and any(k in part for k in _GEMINI_TOOL_PARTS):
                out.vendor_blocks.append(part)  # Gemini's own tools, signature and all
                continue
            if part.get("thoughtSignature"):
                out.signatures.append(part["thoughtSignature"])
            if part.get("thought"):
                thoughts.append(part.get("text", ""))
            elif "functionCall" in part:
                out.tool_calls.append((part["functionCall"]["name"],
                                       part["functionCall"].get("args") or {}))
            elif part.get("text"):
                out.text += part["text"]
    out.reasoning = "".join(thoughts) or None
    prompt, tool_prompt = usage.get("promptTokenCount"), usage.get("toolUsePromptTokenCount")
    candidates_n, thoughts_n = usage.get("candidatesTokenCount"), usage.get("thoughtsTokenCount")
    inp = None if prompt is None and tool_prompt is None else (prompt or 0) + (tool_prompt or 0)
    outp = (None if candidates_n is None and thoughts_n is None
            else (candidates_n or 0) + (thoughts_n or 0))
    out.usage = (inp, outp, usage.get("cachedContentTokenCount"), None, thoughts_n)
    return out


ORACLES = {"anthropic": anthropic, "openai": chat, "compat": chat, "gemini": gemini}


# --- OpenAI Responses ----------------------------------------------------------------------


def responses(case: dict[str, Any]) -> Expected:
    resp = case["response"]
    if resp["status"] != 200:
        return Expected(error_status=resp["status"])
    done: dict[int, dict[str, Any]] = {}
    if case["stream"]:
        final: dict[str, Any] = {}
        for _name, p in sse_payloads(resp["body"]):
            if p.get("type") == "response.output_item.done":
                done[p["output_index"]] = p["item"]
            elif p.get("type") in ("response.completed", "response.incomplete"):
                final = p["response"]
            elif p.get("type") == "error":
                return Expected(error_status=400 if p.get("code") else None)
    else:
        final = json.loads(resp["body"])
    details = final.get("incomplete_details") or {}
    calls = any(i["type"] == "function_call" for i in final.get("output") or ())
    status = final.get("status")
    if status == "completed":
        status = "tool_calls" if calls else "stop"
    out = Expected(finish_reason=details.get("reason") or status, model=final.get("model"))
    summaries = []
    for item in final.get("output") or ():
        if item["type"] == "message":
            out.text += "".join(c.get("text", "") for c in item.get("content") or ()
                                if c.get("type") == "output_text")
        elif item["type"] == "function_call":
            out.tool_calls.append((item["name"], _args(item.get("arguments"))))
        else:
            if item["type"] == "reasoning":
                summaries.extend(s.get("text", "") for s in item.get("summary") or ())
            out.vendor_blocks.append(item)
    out.reasoning = "".join(summaries) or None
    if done:
        # A stream's items are as each `output_item.done` gave them.
        out.vendor_blocks = [done[i] for i in sorted(done)
                             if done[i]["type"] not in ("message", "function_call")]
    u = final.get("usage") or {}
    out.usage = (u.get("input_tokens"), u.get("output_tokens"),
                 (u.get("input_tokens_details") or {}).get("cached_tokens"),
                 (u.get("input_tokens_details") or {}).get("cache_write_tokens"),
                 (u.get("output_tokens_details") or {}).get("reasoning_tokens"))
    return out


ORACLES["responses"] = responses
