"""The Anthropic Messages wire protocol (`POST /v1/messages`), plain and streamed (SSE).

Pure translation, no I/O. What the format forces on us, and how we answer:
- `max_tokens` is required: 4096 when unset, plus the thinking budget when thinking is on.
- Thinking blocks are signed; their signature (or a redacted block's opaque data) is kept
  in `ReasoningPart` and sent back unchanged on the next turn of a tool loop. Reasoning
  parts without a signature (from another provider) are not sent: Anthropic refuses them.
- With thinking on, `temperature` is not sent: the API only accepts its default then.
  `capture_reasoning: false` asks for `display: omitted` (signatures, no text).
- Structured output is native where the model has it (`output_config.format`, a JSON
  schema the reply is decoded against; see `NATIVE_SCHEMA_MODELS`). Elsewhere, or for a
  bare JSON object, the schema goes in the system prompt and the reply is prefilled with
  `{` (not with thinking on, which refuses prefill); the prefill is put back in front of
  the returned text, so callers see the whole JSON. `structured_mode` says which.
- Consecutive turns of one role (tool results, then a user turn) merge into one turn, as
  the API wants tool results grouped in the user turn that follows the calls.
- `cache: auto` puts `cache_control` breakpoints (at most `MAX_BREAKPOINTS`) on the last
  tool, the system prompt and the last block of the conversation, so each turn of a tool
  loop reads the prefix the turn before wrote.
- Usage: `input_tokens` excludes cached tokens (`input_includes_cached=False`); reasoning
  tokens are counted inside `output_tokens` and not reported apart (None).

This module is the protocol object and the loader's rules, and answers for every public
name of the protocol: the request body is built in `_anthropic_encode`, replies and
streams are decoded in `_anthropic_decode`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from agentloom.errors import ConfigError
from agentloom.messages import ModelRequest, ModelResponse, ReasoningConfig
from agentloom.providers._anthropic_decode import (
    AnthropicStreamDecoder as AnthropicStreamDecoder,
)
from agentloom.providers._anthropic_decode import decode as decode
from agentloom.providers._anthropic_decode import decode_parts as decode_parts
from agentloom.providers._anthropic_decode import decode_usage as decode_usage
from agentloom.providers._anthropic_encode import DEFAULT_MAX_TOKENS as DEFAULT_MAX_TOKENS
from agentloom.providers._anthropic_encode import MAX_BREAKPOINTS as MAX_BREAKPOINTS
from agentloom.providers._anthropic_encode import effective_prefill as effective_prefill
from agentloom.providers._anthropic_encode import encode_body as encode_body
from agentloom.providers._anthropic_encode import encode_messages as encode_messages
from agentloom.providers._anthropic_encode import max_tokens_for as max_tokens_for
from agentloom.providers._anthropic_encode import structured_mode as structured_mode
from agentloom.providers._anthropic_encode import thinking_on as thinking_on
from agentloom.providers._anthropic_encode import to_anthropic_schema as to_anthropic_schema
from agentloom.providers._base import Capabilities, Endpoint
from agentloom.providers._common import build_http_request, join_url, key_headers
from agentloom.providers.profiles import ANTHROPIC as _CAPS
from agentloom.providers.profiles import ANTHROPIC_NATIVE_SCHEMA_MODELS as NATIVE_SCHEMA_MODELS
from agentloom.transport import HttpRequest

API_VERSION = "2023-06-01"
MIN_BUDGET = 1024
_NATIVE_CAPS = dataclasses.replace(_CAPS, native_json_schema=True)


# --- load-time rules ----------------------------------------------------------------------


def check_reasoning_settings(
    model: str, max_tokens: int | None, reasoning: ReasoningConfig | None
) -> None:
    """The workflow loader's check for a Claude step: thinking needs `budget_tokens`,
    and a set `max_tokens` must be above it (the budget is part of the reply's limit)."""
    if reasoning is None or not reasoning.enabled or not PROTOCOL.serves(model):
        return
    budget = reasoning.budget_tokens
    if budget is None:
        raise ConfigError(
            f"model {model!r}: thinking.enabled on a Claude model needs thinking.budget_tokens"
        )
    if budget < MIN_BUDGET:
        raise ConfigError(
            f"model {model!r}: thinking.budget_tokens must be at least {MIN_BUDGET} "
            f"for Claude, got {budget}"
        )
    if max_tokens is not None and max_tokens <= budget:
        raise ConfigError(
            f"model {model!r}: max_tokens ({max_tokens}) must be above "
            f"thinking.budget_tokens ({budget}); leave max_tokens unset to send "
            f"{budget + DEFAULT_MAX_TOKENS}"
        )


# --- the protocol object ------------------------------------------------------------------


class AnthropicProtocol:
    name = "anthropic"

    def capabilities(self, model: str) -> Capabilities:
        return _NATIVE_CAPS if model.startswith(NATIVE_SCHEMA_MODELS) else _CAPS

    def serves(self, model: str) -> bool:
        return model.startswith("claude-")

    def encode(self, request: ModelRequest, endpoint: Endpoint) -> HttpRequest:
        return build_http_request(
            request, endpoint,
            url=join_url(endpoint.base_url, "/v1", "/messages"),
            body=encode_body(request),
            headers={**key_headers(endpoint, "x-api-key"), "anthropic-version": API_VERSION},
        )

    def decode(self, body: bytes, request: ModelRequest, endpoint: Endpoint) -> ModelResponse:
        return decode(body, request, endpoint)

    def stream_decoder(self, request: ModelRequest, endpoint: Endpoint) -> AnthropicStreamDecoder:
        return AnthropicStreamDecoder(request, endpoint)


PROTOCOL = AnthropicProtocol()


def __getattr__(name: str) -> Any:
    # Migration face: the public AgentLoom's provider class of this name (agentloom.compat).
    if name == "AnthropicProvider":
        from agentloom.compat.gateway import AnthropicProvider

        return AnthropicProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
