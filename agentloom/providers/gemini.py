"""The Google Gemini wire protocol (`generateContent`, `streamGenerateContent?alt=sse`).

Pure translation, no I/O. What the format forces on us, and how we answer:
- Turns are `contents` of `parts` with roles user/model; system turns become
  `systemInstruction`; tool results are `functionResponse` parts in a user turn. The
  contents open with a user turn (an empty one if the conversation has none first).
- Gemini sends no tool call ids: we derive stable ones from position, name and arguments,
  so the same reply always gets the same ids (recordings and replays agree).
- Thought signatures ride on parts. A thought part keeps its signature in its
  `ReasoningPart`; a signature on any other part becomes a text-less `ReasoningPart` in
  front of it. On the way back, signatures go onto the function calls in order (or onto
  the first text part of a turn without calls); thought text itself is not sent back.
- Parts of Gemini's own tools (`executableCode`, `codeExecutionResult`, `toolCall`,
  `toolResponse`) are kept whole, signature included, as `VendorPart`s and sent back as
  they came.
- `responseSchema` takes only a subset of JSON Schema: `to_gemini_schema` rewrites the
  rest; the caller validates the reply against the full schema.
- Usage: `input_tokens` is `promptTokenCount` plus `toolUsePromptTokenCount` (the
  prompts of Gemini's own tools), cached tokens included (`input_includes_cached=True`);
  `output_tokens` is candidates plus thoughts, so every provider's output count includes
  reasoning; `reasoning_tokens` says how many of them were thoughts.

This module is the protocol object and answers for every public name of the protocol: the
request body (and the schema dialect) is built in `_gemini_encode`, replies and streams
are decoded in `_gemini_decode`.
"""

from __future__ import annotations

from agentloom.messages import ModelRequest, ModelResponse
from agentloom.providers._base import Capabilities, Endpoint
from agentloom.providers._common import build_http_request, join_url, key_headers
from agentloom.providers._gemini_decode import GeminiStreamDecoder as GeminiStreamDecoder
from agentloom.providers._gemini_decode import decode as decode
from agentloom.providers._gemini_decode import decode_usage as decode_usage
from agentloom.providers._gemini_encode import encode_body as encode_body
from agentloom.providers._gemini_encode import encode_contents as encode_contents
from agentloom.providers._gemini_encode import to_gemini_schema as to_gemini_schema
from agentloom.providers.profiles import GEMINI as _CAPS
from agentloom.transport import HttpRequest


def model_path(model: str) -> str:
    return model.removeprefix("models/")


# --- the protocol object ------------------------------------------------------------------


class GeminiProtocol:
    name = "gemini"

    def capabilities(self, model: str) -> Capabilities:
        return _CAPS

    def serves(self, model: str) -> bool:
        return model_path(model).startswith("gemini-")

    def encode(self, request: ModelRequest, endpoint: Endpoint) -> HttpRequest:
        action = ":streamGenerateContent?alt=sse" if request.stream else ":generateContent"
        url = join_url(endpoint.base_url, "/v1beta",
                       f"/models/{model_path(request.model)}{action}")
        return build_http_request(request, endpoint, url=url, body=encode_body(request),
                                  headers=key_headers(endpoint, "x-goog-api-key"))

    def decode(self, body: bytes, request: ModelRequest, endpoint: Endpoint) -> ModelResponse:
        return decode(body, request, endpoint)

    def stream_decoder(self, request: ModelRequest, endpoint: Endpoint) -> GeminiStreamDecoder:
        return GeminiStreamDecoder(request, endpoint)


PROTOCOL = GeminiProtocol()
