"""What a provider is: a wire protocol (pure encode/decode), an endpoint (data), and the
`ModelClient` seam that everything above providers calls.

A wire protocol module (`openai.py`, `anthropic.py`, ...) does no I/O: it turns a
`ModelRequest` into an `HttpRequest`, and bytes back into a `ModelResponse` or stream
events. `ProviderClient` (in `_client.py`) joins a protocol, an endpoint and a transport.
Routing, retries, fallback, recording and the agent loop all see only `ModelClient`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Literal, Protocol
from urllib.parse import urlsplit

from agentloom._record import FACTORY, FrozenRecord, freeze, frozen_record, set_field, thaw
from agentloom.errors import ConfigError
from agentloom.messages import ModelRequest, ModelResponse, StreamEvent
from agentloom.transport import HttpRequest, HttpTimeout

ReasoningStyle = Literal["effort", "budget", "thinking_config", "think", "none"]


@frozen_record
class Capabilities(FrozenRecord):
    """Per-model facts a request is checked against before anything is sent."""

    tools: bool = True
    forced_tool_choice: bool = True
    native_json_schema: bool = True
    image: bool = True
    image_url: bool = False
    pdf: bool = False
    audio_types: frozenset[str] = frozenset()
    reasoning: ReasoningStyle = "none"
    speaker_names: bool = False
    """True where the wire format has a `name` on messages (OpenAI)."""

    def __init__(
        self, *, tools: bool = True, forced_tool_choice: bool = True,
        native_json_schema: bool = True, image: bool = True, image_url: bool = False,
        pdf: bool = False, audio_types: frozenset[str] = frozenset(),
        reasoning: ReasoningStyle = "none", speaker_names: bool = False,
    ) -> None:
        set_field(self, "tools", tools)
        set_field(self, "forced_tool_choice", forced_tool_choice)
        set_field(self, "native_json_schema", native_json_schema)
        set_field(self, "image", image)
        set_field(self, "image_url", image_url)
        set_field(self, "pdf", pdf)
        set_field(self, "audio_types", audio_types)
        set_field(self, "reasoning", reasoning)
        set_field(self, "speaker_names", speaker_names)


@frozen_record
class Endpoint(FrozenRecord):
    """Where a provider lives and how to authenticate: data, not code.

    `name` is the provider's configured name (`openai`, `generic_openai`, `my_vllm`, ...);
    `protocol` the wire protocol it speaks (`openai`, `anthropic`, `gemini`, `ollama`).
    """

    name: str
    protocol: str
    base_url: str
    api_key: str | None = None
    api_key_env: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    models: tuple[str, ...] | None = None
    """Models this endpoint serves; None means the protocol's own naming rule decides."""
    timeout: HttpTimeout = field(default_factory=HttpTimeout)
    max_reply_bytes: int | None = None
    """The largest reply accepted (decompressed; a stream in total); None: the transport's
    default (32 MB)."""
    api: str | dict[str, str] | None = None
    """For the OpenAI protocol: `responses` or `chat_completions`, for every model or per
    model (`{"gpt-5": "responses"}`); None: the Responses API for OpenAI's reasoning models
    at OpenAI itself, chat completions for the rest."""

    def __init__(
        self, *, name: str, protocol: str, base_url: str, api_key: str | None = None,
        api_key_env: str | None = None, headers: dict[str, str] = FACTORY,
        models: tuple[str, ...] | None = None, timeout: HttpTimeout = FACTORY,
        max_reply_bytes: int | None = None, api: str | dict[str, str] | None = None,
    ) -> None:
        if "@" in base_url:
            _refuse_two_authorizations(name, protocol, base_url, api_key, headers)
        set_field(self, "name", name)
        set_field(self, "protocol", protocol)
        set_field(self, "base_url", base_url)
        set_field(self, "api_key", api_key)
        set_field(self, "api_key_env", api_key_env)
        set_field(self, "headers", {} if headers is FACTORY else headers)
        set_field(self, "models", models)
        set_field(self, "timeout", HttpTimeout() if timeout is FACTORY else timeout)
        set_field(self, "max_reply_bytes", max_reply_bytes)
        set_field(self, "api", api)


_BEARER_PROTOCOLS = frozenset({"openai", "ollama", "llamacpp"})
"""The protocols that send their key as `Authorization: Bearer`."""


def _refuse_two_authorizations(name: str, protocol: str, base_url: str, api_key: str | None,
                               headers: dict[str, str]) -> None:
    """A user and password in the base URL go as `Authorization: Basic` (a proxy's
    login), which a request can't carry beside the key's `Authorization: Bearer` or a
    configured Authorization header: said here, once, rather than by the HTTP client at
    every call in words that name neither."""
    if "@" not in urlsplit(base_url).netloc:
        return  # an @ in the path or query is no login
    if api_key and protocol in _BEARER_PROTOCOLS:
        clash = "its API key, which it sends as Authorization: Bearer"
    elif headers is not FACTORY and any(k.lower() == "authorization" for k in headers):
        clash = "an Authorization header of its own"
    else:
        return
    raise ConfigError(
        f"provider {name!r}: its base URL carries a user name and password (sent as "
        f"Authorization: Basic) and the provider has {clash}; a request carries one "
        "Authorization: take the login out of the base URL, or leave the key unset")


class StreamDecoder(Protocol):
    """Incremental decoder: feed raw bytes as they arrive, get events out."""

    def feed(self, data: bytes) -> list[StreamEvent]: ...

    def close(self) -> list[StreamEvent]:
        """End of body: flush what is buffered."""
        ...


class WireProtocol(Protocol):
    name: str

    def capabilities(self, model: str) -> Capabilities: ...

    def serves(self, model: str) -> bool:
        """Whether a model name belongs to this protocol's vendor family."""
        ...

    def encode(self, request: ModelRequest, endpoint: Endpoint) -> HttpRequest: ...

    def decode(self, body: bytes, request: ModelRequest, endpoint: Endpoint) -> ModelResponse: ...

    def stream_decoder(self, request: ModelRequest, endpoint: Endpoint) -> StreamDecoder: ...


@frozen_record
class AttemptRecord(FrozenRecord):
    """One attempt at a call, content-free: for summaries' failed_attempts and timelines."""

    provider: str
    model: str
    attempt: int
    """1 for the first try of a candidate, 2 for its first retry, ..."""
    ok: bool
    duration_seconds: float
    wait_before_seconds: float = 0.0
    status: int | None = None
    phase: str | None = None
    request_sent: bool | None = None
    error_type: str | None = None

    def __init__(
        self, *, provider: str, model: str, attempt: int, ok: bool, duration_seconds: float,
        wait_before_seconds: float = 0.0, status: int | None = None, phase: str | None = None,
        request_sent: bool | None = None, error_type: str | None = None,
    ) -> None:
        this = thaw(self)
        this.provider = provider
        this.model = model
        this.attempt = attempt
        this.ok = ok
        this.duration_seconds = duration_seconds
        this.wait_before_seconds = wait_before_seconds
        this.status = status
        this.phase = phase
        this.request_sent = request_sent
        this.error_type = error_type
        freeze(this)


EventSink = Callable[[StreamEvent], None]
AttemptSink = Callable[[AttemptRecord], None]


class ModelClient(Protocol):
    """Anything that answers a ModelRequest: a provider client, a router with retries and
    fallback, a replaying client, or a scripted test model.

    With `request.stream` set, events are passed to `on_event` as they arrive; either
    way the finished `ModelResponse` is returned. Failures raise `ProviderError`.
    Every attempt (including retries and fallbacks) is reported to `on_attempt`.
    """

    async def complete(
        self,
        request: ModelRequest,
        *,
        on_event: EventSink | None = None,
        on_attempt: AttemptSink | None = None,
    ) -> ModelResponse: ...
