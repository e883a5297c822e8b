"""Model capability facts, per model family, apart from the wire modules.

A wire module knows how to encode and decode; what a model can take (tools, forced tool
choice, native JSON schema, images, PDFs, audio, reasoning style) is data kept here, one
frozen `Capabilities` per family, so a new family or a model-specific exception is an entry
in this file rather than an edit to a protocol module. Two wires keep their own facts,
being one model API each rather than a family of models: the Responses API
(`openai_responses`) and the embedded model's server (`llamacpp`). `check_attachments`
reads these facts for a request's media parts. No I/O.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from agentloom.messages import AudioPart, DocumentPart, ImagePart
from agentloom.providers._base import Capabilities

GEMINI_AUDIO_TYPES = frozenset({
    "audio/wav", "audio/x-wav", "audio/mp3", "audio/mpeg", "audio/aiff", "audio/aac",
    "audio/ogg", "audio/flac", "wav", "mp3", "aiff", "aac", "ogg", "flac",
})

OPENAI = Capabilities(
    tools=True, forced_tool_choice=True, native_json_schema=True, image=True, image_url=True,
    pdf=False, audio_types=frozenset({"audio/wav", "audio/mpeg"}), reasoning="effort",
    speaker_names=True,
)
ANTHROPIC = Capabilities(
    tools=True, forced_tool_choice=True, native_json_schema=False, image=True,
    image_url=True, pdf=True, audio_types=frozenset(), reasoning="budget",
    speaker_names=False,
)
GEMINI = Capabilities(
    tools=True, forced_tool_choice=True, native_json_schema=True, image=True,
    image_url=False, pdf=True, audio_types=GEMINI_AUDIO_TYPES, reasoning="thinking_config",
    speaker_names=False,
)
OLLAMA = Capabilities(
    tools=True, forced_tool_choice=False, native_json_schema=True, image=True,
    image_url=False, pdf=False, audio_types=frozenset(), reasoning="think",
    speaker_names=False,
)


def check_attachments(parts: Iterable[object], caps: Capabilities) -> str | None:
    """None when a provider with these capabilities takes every part, else the reason."""
    for part in parts:
        if isinstance(part, ImagePart):
            if not caps.image:
                return "it does not take images"
            if part.data is None and part.url is not None and not caps.image_url:
                return "it does not fetch images by URL (use fetch: local)"
        elif isinstance(part, DocumentPart):
            if not caps.pdf:
                return "it does not take PDF documents"
            if part.data is None and not caps.image_url:
                return "it does not fetch documents by URL (use fetch: local)"
        elif isinstance(part, AudioPart) and not _audio_ok(part.media_type, caps.audio_types):
            if not caps.audio_types:
                return "it does not take audio"
            return f"it does not take {part.media_type} audio"
    return None


def _audio_ok(media_type: str, accepted: frozenset[str]) -> bool:
    if not accepted:
        return False
    subtype = media_type.split("/", 1)[-1].lower()
    aliases = {subtype, media_type.lower()}
    if subtype in ("mpeg", "mp3", "x-mp3"):
        aliases |= {"mp3", "audio/mpeg", "audio/mp3"}
    if subtype in ("wav", "x-wav", "wave", "vnd.wave"):
        aliases |= {"wav", "audio/wav", "audio/x-wav"}
    return bool(aliases & {a.lower() for a in accepted})

ANTHROPIC_NATIVE_SCHEMA_MODELS = (
    "claude-haiku-4-5", "claude-sonnet-4-5", "claude-sonnet-4-6", "claude-opus-4-1",
    "claude-opus-4-5", "claude-opus-4-6", "claude-opus-4-7", "claude-opus-4-8",
    "claude-opus-5", "claude-sonnet-5", "claude-fable-5", "claude-mythos-5",
)
"""Claude models that take a JSON schema for their reply (`output_config.format`)."""


# --- OpenAI's families ------------------------------------------------------------------

_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")
OPENAI_SERVED_PREFIXES = ("gpt-", "chatgpt-", "o1", "o3", "o4", "davinci", "babbage", "ft:gpt-",
                    "codex-", "computer-use-")
APIS = ("responses", "chat_completions")
"""The OpenAI protocol's two wires, chosen per provider or model (`api:`)."""


@functools.lru_cache(maxsize=256)  # asked on every request; model names are few
def is_reasoning_model(model: str) -> bool:
    """o-series and GPT-5 models, except o1-mini and the gpt-5 chat models."""
    name = model.rsplit("/", 1)[-1].lower()
    if not name.startswith(_REASONING_PREFIXES):
        return False
    if name.startswith("gpt-5"):
        return "-chat" not in name
    if name.startswith("o1-mini"):
        return False
    # "o1", "o3-mini", "o4-mini-2025-..." but not a name that merely starts with "o1x".
    return len(name) == 2 or name[2] == "-"
