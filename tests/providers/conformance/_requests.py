"""A recorded request read back into our types, and the shape two wire bodies share.

`conversation(case)` turns a recorded (accepted) request body into a `ModelRequest`: the
same turns, tools and settings. Encoding that with our protocol must give a body of the
same shape: the same turns with the same kinds of block in the same order, the same tool
names, and no top-level field the provider did not accept. Values differ where the
framework that recorded the traffic chose differently (ids, tool descriptions), so only
the shape is compared.
"""

from __future__ import annotations

import json
from typing import Any

from agentloom.messages import (
    ImagePart,
    Message,
    ModelRequest,
    Part,
    ReasoningConfig,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    VendorPart,
)


class Unmodelled(Exception):
    """The request uses something our types do not model (the case is not compared)."""


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return json.dumps(content)


# --- Anthropic -----------------------------------------------------------------------------

def _anthropic_block(block: dict[str, Any]) -> Part:
    kind = block["type"]
    if kind == "text":
        return TextPart(text=block["text"])
    if kind == "tool_use":
        return ToolCallPart(id=block["id"], name=block["name"],
                            arguments=json.dumps(block.get("input", {})))
    if kind == "tool_result":
        return ToolResultPart(call_id=block["tool_use_id"], name="",
                              content=_text_of(block.get("content", "")),
                              is_error=bool(block.get("is_error")))
    if kind == "thinking":
        return ReasoningPart(text=block.get("thinking", ""), signature=block.get("signature"))
    if kind == "redacted_thinking":
        return ReasoningPart(text="", redacted=block["data"])
    if kind == "image" and block["source"].get("type") == "url":
        return ImagePart(url=block["source"]["url"])
    if kind in ("image", "document", "search_result", "container_upload"):
        raise Unmodelled(kind)
    return VendorPart(provider="anthropic", data=block)


def anthropic_conversation(body: dict[str, Any]) -> ModelRequest:
    messages: list[Message] = []
    system = body.get("system")
    if system:
        messages.append(Message.system(_text_of(system)))
    for m in body["messages"]:
        content = m["content"]
        if m["role"] == "system":
            raise Unmodelled("a system turn inside the conversation")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        parts = tuple(_anthropic_block(b) for b in blocks)
        if m["role"] == "user" and parts and all(isinstance(p, ToolResultPart) for p in parts):
            messages.append(Message(role="tool", parts=parts))
        else:
            messages.append(Message(role=m["role"], parts=parts))
    tools, vendor = [], []
    for t in body.get("tools") or ():
        if "input_schema" in t:
            tools.append(ToolSpec(name=t["name"], description=t.get("description", ""),
                                  parameters=t["input_schema"]))
        else:
            vendor.append(t)
    thinking = body.get("thinking") or {}
    reasoning = (ReasoningConfig(enabled=True, budget_tokens=thinking.get("budget_tokens"))
                 if thinking.get("type") == "enabled" else None)
    choice = (body.get("tool_choice") or {}).get("type", "auto")
    return ModelRequest(
        model=body["model"], messages=tuple(messages), tools=tuple(tools),
        vendor_tools=tuple(vendor), reasoning=reasoning, max_tokens=body.get("max_tokens"),
        tool_choice={"any": "required"}.get(choice, choice) if choice != "tool" else "auto",
        stream=bool(body.get("stream")), temperature=body.get("temperature"),
    )


def _anthropic_shape(body: dict[str, Any]) -> list[tuple[str, list[str]]]:
    out = []
    for m in body["messages"]:
        content = m["content"]
        kinds = ["text"] if isinstance(content, str) else [b["type"] for b in content]
        out.append((m["role"], sorted(kinds) if m["role"] == "user" else kinds))
    return out


# --- OpenAI chat completions ---------------------------------------------------------------

def chat_conversation(body: dict[str, Any]) -> ModelRequest:
    messages: list[Message] = []
    for m in body["messages"]:
        role = m["role"]
        content = m.get("content")
        if isinstance(content, list) and any(
                not isinstance(p, dict) or p.get("type") != "text" for p in content):
            raise Unmodelled("media")
        if role in ("system", "developer") and messages and messages[-1].role != "system":
            raise Unmodelled("a system turn inside the conversation")
        text = _text_of(content) if content is not None else ""
        if role in ("system", "developer"):
            messages.append(Message.system(text))
        elif role == "tool":
            messages.append(Message(role="tool", parts=(ToolResultPart(
                call_id=m["tool_call_id"], name="", content=text),)))
        elif role == "assistant":
            parts: list[Part] = [TextPart(text=text)] if text else []
            for c in m.get("tool_calls") or ():
                parts.append(ToolCallPart(id=c["id"], name=c["function"]["name"],
                                          arguments=c["function"]["arguments"]))
            messages.append(Message(role="assistant", parts=tuple(parts)))
        else:
            messages.append(Message.user(text))
    tools, vendor = [], []
    for t in body.get("tools") or ():
        if t.get("type") == "function":
            fn = t["function"]
            tools.append(ToolSpec(name=fn["name"], description=fn.get("description", ""),
                                  parameters=fn.get("parameters") or {}))
        else:
            vendor.append(t)
    return ModelRequest(model=body["model"], messages=tuple(messages), tools=tuple(tools),
                        vendor_tools=tuple(vendor), stream=bool(body.get("stream")))


def _chat_shape(body: dict[str, Any]) -> list[tuple[str, list[str]]]:
    out = []
    for m in body["messages"]:
        role = "system" if m["role"] == "developer" else m["role"]
        kinds = ["tool_call"] * len(m.get("tool_calls") or ())
        if m.get("content"):
            kinds.insert(0, "text")
        out.append((role, kinds))
    return out


# --- Gemini --------------------------------------------------------------------------------

_GEMINI_TOOL_PARTS = ("executableCode", "codeExecutionResult", "toolCall", "toolResponse")


def gemini_conversation(case: dict[str, Any]) -> ModelRequest:
    body = case["request"]["body"]
    messages: list[Message] = []
    system = body.get("systemInstruction")
    if system:
        messages.append(Message.system(_text_of(system.get("parts"))))
    for c in body.get("contents") or ():
        parts: list[Part] = []
        results: list[Part] = []
        for p in c["parts"]:
            if any(k in p for k in _GEMINI_TOOL_PARTS):
                parts.append(VendorPart(provider="gemini", data=p))
                continue
            if p.get("thoughtSignature"):
                parts.append(ReasoningPart(text="", signature=p["thoughtSignature"]))
            if "functionCall" in p:
                fc = p["functionCall"]
                parts.append(ToolCallPart(id=f"c{len(parts)}", name=fc["name"],
                                          arguments=json.dumps(fc.get("args") or {})))
            elif "functionResponse" in p:
                fr = p["functionResponse"]
                results.append(ToolResultPart(call_id="", name=fr["name"],
                                              content=json.dumps(fr.get("response"))))
            elif "text" in p and not p.get("thought"):
                parts.append(TextPart(text=p["text"]))
            elif not p.get("thought"):
                raise Unmodelled(str(list(p)))
        role = "assistant" if c.get("role") == "model" else "user"
        if results:
            messages.append(Message(role="tool", parts=tuple(results)))
        if parts:
            messages.append(Message(role=role, parts=tuple(parts)))
    tools, vendor = [], []
    if not all(isinstance(t, dict) for t in body.get("tools") or ()):
        raise Unmodelled("tools")
    for t in body.get("tools") or ():
        if "functionDeclarations" in t:
            tools.extend(ToolSpec(name=f["name"], description=f.get("description", ""),
                                  parameters=f.get("parameters") or {"type": "object"})
                         for f in t["functionDeclarations"])
        else:
            vendor.append(t)
    model = case["request"]["path"].split("/models/")[1].split(":")[0]
    return ModelRequest(model=model, messages=tuple(messages), tools=tuple(tools),
                        vendor_tools=tuple(vendor), stream=case["stream"])


def _gemini_shape(body: dict[str, Any]) -> list[tuple[str, list[str]]]:
    out = []
    for c in body.get("contents") or ():
        kinds = []
        for p in c["parts"]:
            if p.get("thought") or p == {"text": ""}:
                continue  # an empty turn we leave out
            kind = next((k for k in ("functionCall", "functionResponse", "text",
                                     *_GEMINI_TOOL_PARTS) if k in p), "?")
            kinds.append(kind)
        if kinds:
            out.append((c.get("role", "user"), kinds))
    return out


# --- OpenAI Responses ----------------------------------------------------------------------

def _input_parts(content: Any) -> tuple[Part, ...]:
    if isinstance(content, str):
        return (TextPart(text=content),)
    parts: list[Part] = []
    for block in content or ():
        if block.get("type") in ("input_text", "output_text"):
            parts.append(TextPart(text=block.get("text", "")))
        elif block.get("type") == "input_image" and isinstance(block.get("image_url"), str) \
                and block["image_url"].startswith("http"):
            parts.append(ImagePart(url=block["image_url"]))
        else:
            raise Unmodelled(str(block.get("type")))
    return tuple(parts)


def responses_conversation(body: dict[str, Any]) -> ModelRequest:
    messages: list[Message] = []
    if body.get("instructions"):
        messages.append(Message.system(_text_of(body["instructions"])))
    items = body["input"]
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in items:
        kind = item.get("type", "message")
        if kind == "message":
            role = item["role"]
            if role in ("system", "developer"):
                if messages and messages[-1].role != "system":
                    raise Unmodelled("a system turn inside the conversation")
                messages.append(Message(role="system", parts=_input_parts(item["content"])))
            else:
                messages.append(Message(role=role, parts=_input_parts(item["content"])))
        elif kind == "function_call":
            messages.append(Message(role="assistant", parts=(ToolCallPart(
                id=item["call_id"], name=item["name"], arguments=item["arguments"]),)))
        elif kind == "function_call_output":
            if not isinstance(item.get("output"), str):
                raise Unmodelled("a structured tool output")
            messages.append(Message(role="tool", parts=(ToolResultPart(
                call_id=item["call_id"], name="", content=item["output"]),)))
        else:
            messages.append(Message(role="assistant", parts=(
                VendorPart(provider="openai_responses", data=item),)))
    tools, vendor = [], []
    for t in body.get("tools") or ():
        if t.get("type") == "function":
            tools.append(ToolSpec(name=t["name"], description=t.get("description") or "",
                                  parameters=t.get("parameters") or {}))
        else:
            vendor.append(t)
    return ModelRequest(model=body["model"], messages=tuple(messages), tools=tuple(tools),
                        vendor_tools=tuple(vendor), stream=bool(body.get("stream")))


def _responses_shape(body: dict[str, Any]) -> list[tuple[str, list[str]]]:
    items = body["input"]
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    out = []
    for item in items:
        kind = item.get("type", "message")
        if kind == "message":
            if item["role"] in ("system", "developer"):
                continue  # we send system turns as `instructions`
            content = item["content"]
            if content == "" or (isinstance(content, list) and not any(
                    b.get("text") or b.get("type") not in ("input_text", "output_text")
                    for b in content)):
                continue  # an empty message, which we leave out
            out.append((item["role"], ["message"]))
        else:
            out.append(("assistant" if kind != "function_call_output" else "tool", [kind]))
    return out


def conversation(case: dict[str, Any]) -> ModelRequest:
    family, body = case["family"], case["request"]["body"]
    if family == "responses":
        return responses_conversation(body)
    if family == "anthropic":
        return anthropic_conversation(body)
    if family == "gemini":
        return gemini_conversation(case)
    return chat_conversation(body)


def shape(family: str, body: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """Turns as (role, block kinds). Consecutive turns of one role are one turn (the APIs
    take either; we send them merged), and a user turn's kinds are a set."""
    raw = {"anthropic": _anthropic_shape, "gemini": _gemini_shape,
           "responses": _responses_shape}.get(family, _chat_shape)(body)
    merged: list[tuple[str, list[str]]] = []
    for role, kinds in raw:
        if merged and merged[-1][0] == role and role != "tool":
            merged[-1][1].extend(kinds)
        else:
            merged.append((role, list(kinds)))
    return [(r, sorted(set(k)) if r in ("user", "tool") else k) for r, k in merged]


def tool_names(family: str, body: dict[str, Any]) -> list[str]:
    if family == "gemini":
        return [f["name"] for t in body.get("tools") or ()
                for f in t.get("functionDeclarations", ())] + [
            next(iter(t)) for t in body.get("tools") or () if "functionDeclarations" not in t]
    names = []
    for t in body.get("tools") or ():
        names.append(t.get("name") or (t.get("function") or {}).get("name") or t.get("type"))
    return names
