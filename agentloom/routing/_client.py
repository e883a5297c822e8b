"""`ProviderClient`: one attempt at one endpoint, over one transport.

It joins a pure wire protocol, an endpoint (data) and a transport, and turns every way a
call can fail into one `ProviderError` whose attributes (status, phase, request_sent,
retryable, retry_after, partial) are all that routing needs to decide on a retry or a
fallback. It never retries: that is routing's job, so each layer does one thing.
Streaming is the primitive; a non-streaming call decodes the whole body at once.
"""

from __future__ import annotations

import time
from typing import Any

from agentloom import _jsontext
from agentloom.errors import ConfigError, ProviderError, ReplyTooLarge
from agentloom.messages import ModelRequest, ModelResponse
from agentloom.providers import (
    AttemptRecord,
    AttemptSink,
    Endpoint,
    EventSink,
    ResponseBuilder,
    WireProtocol,
)
from agentloom.redact import REDACTED, Redactor
from agentloom.routing._retry import retry_after_seconds
from agentloom.transport import (
    BodyTooLarge,
    BufferedResponse,
    HttpResponse,
    Transport,
    TransportError,
)

RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
_REQUEST_ID_HEADERS = ("x-request-id", "request-id", "x-goog-request-id", "cf-ray")
_BODY_EXCERPT = 500
# Bad bytes from a decoder: JSON that does not parse or has the wrong shape.
_DECODE_ERRORS = (ValueError, KeyError, TypeError, IndexError, AttributeError)

_perf = time.perf_counter
_PATTERNS = Redactor()  # the always-on patterns (sk-..., Bearer ..., key=...)


def _error_message(body: bytes) -> str:
    """The provider's own message out of an error body, else its first bytes."""
    text = body.decode("utf-8", "replace")
    try:
        obj: Any = _jsontext.loads(text)
    except ValueError:
        return text[:200].strip()
    if isinstance(obj, list) and obj:
        obj = obj[0]
    if isinstance(obj, dict):
        err = obj.get("error", obj)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("error")
            if isinstance(msg, str):
                return msg[:300]
        elif isinstance(err, str):
            return err[:300]
    return text[:200].strip()


def _request_id(headers: dict[str, str]) -> str | None:
    for name in _REQUEST_ID_HEADERS:
        value = headers.get(name)
        if value:
            return value
    return None


class ProviderClient:
    """A `ModelClient` for one endpoint: `await client.complete(request)`.

    One attempt only. Exactly one `AttemptRecord` reaches `on_attempt` per call that got
    as far as the network (attempt number 1: routing renumbers its retries). A missing
    key raises `ConfigError` before anything is sent, and reports no attempt.
    """

    __slots__ = ("endpoint", "protocol", "transport")

    def __init__(self, endpoint: Endpoint, protocol: WireProtocol, transport: Transport) -> None:
        self.endpoint = endpoint
        self.protocol = protocol
        self.transport = transport

    async def complete(
        self,
        request: ModelRequest,
        *,
        on_event: EventSink | None = None,
        on_attempt: AttemptSink | None = None,
    ) -> ModelResponse:
        endpoint = self.endpoint
        if endpoint.api_key_env and not endpoint.api_key:
            raise ConfigError(
                f"provider {endpoint.name!r} needs an API key: set {endpoint.api_key_env}"
            )
        http_request = self.protocol.encode(request, endpoint)
        if endpoint.max_reply_bytes is not None:
            http_request.max_bytes = endpoint.max_reply_bytes
        start = _perf()
        try:
            try:
                response = await self.transport.handle(http_request)
            except TransportError as exc:
                raise self._transport_error(request, exc) from exc
            if request.stream and 200 <= response.status < 300:
                result = await self._read_stream(request, response, start, on_event)
            elif type(response) is BufferedResponse and response.chunks is None:
                # Already in memory (the aiohttp transport reads a reply that is not
                # streamed before returning it): nothing to await, nothing to close.
                result = self._decode_whole(request, response, response.body)
            else:
                try:
                    body = await response.read()
                except TransportError as exc:
                    raise self._transport_error(request, exc) from exc
                finally:
                    await response.aclose()
                result = self._decode_whole(request, response, body)
        except ProviderError as exc:
            if on_attempt is not None:
                on_attempt(self._record(request, start, exc))
            raise
        if on_attempt is not None:
            on_attempt(AttemptRecord(provider=endpoint.name, model=request.model, attempt=1,
                                     ok=True, duration_seconds=_perf() - start,
                                     status=response.status, request_sent=True))
        return result

    # --- reading -------------------------------------------------------------------------

    def _decode_whole(
        self, request: ModelRequest, response: HttpResponse, body: bytes
    ) -> ModelResponse:
        if not 200 <= response.status < 300:
            raise self._status_error(request, response.status, response.headers, body)
        try:
            return self.protocol.decode(body, request, self.endpoint)
        except ProviderError:
            raise
        except _DECODE_ERRORS as exc:
            raise self._body_error(request, response.status, response.headers, body, exc) from exc

    async def _read_stream(
        self, request: ModelRequest, response: HttpResponse, start: float,
        on_event: EventSink | None,
    ) -> ModelResponse:
        decoder = self.protocol.stream_decoder(request, self.endpoint)
        builder = ResponseBuilder(request.model)
        add = builder.add
        first: float | None = None
        try:
            async for chunk in response.aiter_bytes():
                events = decoder.feed(chunk)
                if events:
                    if first is None:
                        first = _perf() - start
                    for event in events:
                        add(event)
                        if on_event is not None:
                            on_event(event)
            for event in decoder.close():
                add(event)
                if on_event is not None:
                    on_event(event)
        except TransportError as exc:
            raise self._transport_error(request, exc, partial=first is not None) from exc
        except ProviderError as exc:
            exc.partial = first is not None
            raise
        except _DECODE_ERRORS as exc:
            err = self._body_error(request, response.status, response.headers, b"", exc)
            err.partial = first is not None
            raise err from exc
        finally:
            await response.aclose()
        return builder.build(provider=self.endpoint.name, time_to_first_token=first)

    # --- errors --------------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        """A provider's words with our key taken out: a 401 often echoes the key it got,
        and this text goes on to checkpoints, stderr, traces and spans."""
        key = self.endpoint.api_key
        if key and key in text:
            text = text.replace(key, REDACTED)
        return _PATTERNS.redact_text(text)

    def _scrub_headers(self, headers: dict[str, str]) -> dict[str, str]:
        return {k: self._scrub(v) for k, v in _PATTERNS.redact_headers(headers).items()}

    def _status_error(
        self, request: ModelRequest, status: int, headers: dict[str, str], body: bytes
    ) -> ProviderError:
        name = self.endpoint.name
        return ProviderError(
            self._scrub(f"{name} returned HTTP {status} for model {request.model}: "
                        f"{_error_message(body)}"),
            provider=name, model=request.model, status=status, phase="status",
            request_sent=True, retryable=status in RETRYABLE_STATUSES,
            headers=self._scrub_headers(headers),
            retry_after=retry_after_seconds(headers, now_wall=time.time()),
            body=self._scrub(body[:_BODY_EXCERPT].decode("utf-8", "replace")),
            request_id=_request_id(headers),
        )

    def _body_error(
        self, request: ModelRequest, status: int, headers: dict[str, str], body: bytes,
        exc: Exception,
    ) -> ProviderError:
        name = self.endpoint.name
        return ProviderError(
            self._scrub(f"{name} sent a reply that could not be read "
                        f"({type(exc).__name__}: {exc})"),
            provider=name, model=request.model, status=status,
            phase="body", request_sent=True, retryable=True,
            headers=self._scrub_headers(headers),
            body=self._scrub(body[:_BODY_EXCERPT].decode("utf-8", "replace")) or None,
            request_id=_request_id(headers),
        )

    def _transport_error(
        self, request: ModelRequest, exc: TransportError, *, partial: bool = False
    ) -> ProviderError:
        name = self.endpoint.name
        if isinstance(exc, BodyTooLarge):
            return ReplyTooLarge(
                f"{name} sent a reply larger than {exc.limit} bytes for model "
                f"{request.model}; reading stopped there (providers.{name}.max_reply_bytes "
                "raises the cap)", provider=name, model=request.model, phase="body",
                request_sent=True, retryable=False, partial=partial)
        return ProviderError(
            self._scrub(f"{name} call failed before a full reply ({exc})"), provider=name,
            model=request.model, status=None, phase=exc.phase,  # type: ignore[arg-type]
            request_sent=exc.request_sent, retryable=True, partial=partial,
        )

    def _record(self, request: ModelRequest, start: float, exc: ProviderError) -> AttemptRecord:
        return AttemptRecord(
            provider=self.endpoint.name, model=request.model, attempt=1, ok=False,
            duration_seconds=_perf() - start, status=exc.status, phase=exc.phase,
            request_sent=exc.request_sent, error_type=type(exc).__name__,
        )
