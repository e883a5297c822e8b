"""One error taxonomy for the whole library.

    AgentLoomError                      base of everything we raise on purpose
    ├── ConfigError                     misuse: bad arguments, unknown provider, missing key
    │   ├── WorkflowError               a workflow file problem, with file:line and field
    │   │   └── TemplateError           "Prompt template error": broken braces, unknown refs
    │   └── NonFiniteNumber             a request holds inf or NaN, which JSON can't write
    ├── ProviderError                   a model call failed; facts as attributes:
    │                                   provider, model, status, phase, request_sent,
    │                                   retryable, headers (lowercased), retry_after
    │   └── ProviderCallError           what an Agent run raises (also an AgentLoopError):
    │       ├── AuthError               401/403, or a provider named without its key
    │       ├── BadRequestError         400 (ContextLengthExceeded: the prompt is too long)
    │       ├── ModelNotFound, InsufficientCredits, UnexpectedRedirect
    │       ├── RateLimited             429
    │       ├── ProviderUnavailable     5xx, 409, a dropped connection
    │       │   └── ProviderUnreachable TLS or proxy failure: this machine can't get there
    │       ├── ProviderTimeout         408 or a timeout
    │       └── ResponseInvalid         a 200 whose body could not be used
    ├── ToolError                       raised by a tool: its message goes back to the model
    ├── StructuredOutputError           no valid JSON after the re-asks
    ├── BudgetExceeded                  a run's cost/token budget would be crossed
    │   └── PriceUnknown                a cost budget meets a model with no price (also
    │                                   a ConfigError: a price fixes it)
    ├── DeadlineExceeded                a deadline passed (run or step)
    ├── ReplayMismatch                  strict replay found no record for a call
    └── AgentLoopError                  a failed agent run; carries `.summary`
        └── LoopBudgetExceeded          the agent loop ran out (kind, limit, actual)

Code branches on attributes (`err.retryable`, `err.phase`), never on class names spread
over modules and never on message text. Retry code reads `retryable` and nothing else.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

Phase: TypeAlias = Literal["connect", "tls", "proxy", "send", "read", "status", "body", "local"]
"""Where a call failed. `local` means before anything reached the network (e.g. an
attachment the provider can't take)."""


class AgentLoomError(Exception):
    """Base of every error AgentLoom raises on purpose."""

    retryable: bool = False


class ConfigError(AgentLoomError):
    """The caller asked for something that cannot work; fixing the input fixes it."""


class WorkflowError(ConfigError):
    """A problem in a workflow file. `str()` is `file:line: message`."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.field = field
        super().__init__(self._render())

    def _render(self) -> str:
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        return f"{where}{self.message}"


class TemplateError(WorkflowError):
    """A prompt template that cannot be rendered. Never retried."""

    def __init__(self, message: str, **kwargs: Any) -> None:
        if not message.startswith("Prompt template error"):
            message = f"Prompt template error: {message}"
        super().__init__(message, **kwargs)


class NonFiniteNumber(ConfigError, ValueError):
    """A request value is infinite or NaN (`temperature=float("inf")`): JSON has no way
    to write it, so the request is not sent. The message names the value's path."""


class ProviderError(AgentLoomError):
    """A model call failed.

    Attributes:
        provider: the provider's name (`openai`, `anthropic`, ...).
        model: the model asked for.
        status: the HTTP status, or None when no response arrived.
        phase: where it failed (connect, tls, proxy, send, read, status, body, local).
        request_sent: True if the request reached the server, False if surely not,
            None if we cannot tell (a connection dropped mid-send).
        retryable: whether trying again may succeed. Set from the status and the
            policy's retryable codes, or True for failures without a status.
        headers: the response headers, keys lowercased.
        retry_after: seconds the server asked us to wait, if it said.
        body: the first part of the response body, for the message.
        partial: True when a streamed reply failed after some of it was delivered, so
            the call must not move to another provider (only the step's retry decides).
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        model: str | None = None,
        status: int | None = None,
        phase: Phase = "status",
        request_sent: bool | None = None,
        retryable: bool = False,
        headers: dict[str, str] | None = None,
        retry_after: float | None = None,
        body: str | None = None,
        request_id: str | None = None,
        partial: bool = False,
    ) -> None:
        self.provider = provider
        self.partial = partial
        self.model = model
        self.status = status
        self.phase: Phase = phase
        self.request_sent = request_sent
        self.retryable = retryable
        self.headers = headers or {}
        self.retry_after = retry_after
        self.body = body
        self.request_id = request_id
        super().__init__(message)

    def __str__(self) -> str:
        bits = [f"provider={self.provider}"]
        if self.model:
            bits.append(f"model={self.model}")
        if self.status is not None:
            bits.append(f"status={self.status}")
        bits.append(f"phase={self.phase}")
        bits.append(f"request_sent={self.request_sent}")
        return f"{self.args[0]} ({', '.join(bits)})"


class ReplyTooLarge(ProviderError):
    """A reply (its body after decompression, or a stream's total) passed the provider's
    `max_reply_bytes`. Never retried: the same call would send the same reply."""


class ToolError(AgentLoomError):
    """Raise from a tool to send a safe, readable error back to the model."""


class StructuredOutputError(AgentLoomError):
    """The model gave no valid structured reply within the re-asks. Not retried."""

    def __init__(self, message: str, *, raw_text: str | None = None) -> None:
        self.raw_text = raw_text
        super().__init__(message)


class BudgetExceeded(AgentLoomError):
    """A run's budget (cost or tokens) would be crossed by the next call, or was."""

    def __init__(self, message: str, *, kind: str, limit: Any, actual: Any) -> None:
        self.kind = kind
        self.limit = limit
        self.actual = actual
        super().__init__(message)


class PriceUnknown(BudgetExceeded, ConfigError):
    """A cost budget is set and a model has no price: its cost can't be checked, so the
    call is refused before it is sent (the budget fails closed). A price fixes it."""

    def __init__(self, message: str, *, limit: Any) -> None:
        super().__init__(message, kind="cost", limit=limit, actual=None)


class DeadlineExceeded(AgentLoomError):
    """A deadline passed: the run's (`config.timeout`) or a step attempt's (`timeout`)."""

    retryable = True

    def __init__(self, message: str = "deadline exceeded", *, scope: str = "run") -> None:
        self.scope = scope
        # A run deadline is final; a step attempt's timeout may be retried.
        self.retryable = scope != "run"
        super().__init__(message)


class ReplayMismatch(AgentLoomError):
    """Strict replay found no recorded exchange for a call. Never falls back to a fake."""


class AgentLoopError(AgentLoomError):
    """A failed agent run. `.summary` is its ConversationSummary, so a handler needs no
    observer; `.__cause__` is the underlying error."""

    def __init__(self, message: str, *, summary: Any = None) -> None:
        # A loop.summary.ConversationSummary; typed loosely because errors sit below the
        # loop in the layers and may not import it.
        self.summary: Any = summary
        super().__init__(message)


class LoopBudgetExceeded(AgentLoopError):
    """The agent loop ran out of a budget. `kind` is iterations, deadline, tokens (the
    run's token budget) or max_tokens (a reply cut off mid tool call at the max_tokens
    ceiling).

    An AgentLoopError, so a run's handler finds `.summary` on it too."""

    def __init__(self, kind: str, limit: Any, actual: Any) -> None:
        self.kind = kind
        self.limit = limit
        self.actual = actual
        super().__init__(f"loop budget exceeded: {kind} (limit {limit}, actual {actual})")



class ProviderCallError(ProviderError, AgentLoopError):
    """A provider failure as an Agent run raises it: a ProviderError (same attributes)
    that is also an AgentLoopError carrying `.summary`, with the router's error as its
    cause. Its subclass names the kind of failure, as spec 002's library names them, so
    `except AuthError` works; `typed_provider_error` picks it."""


class AuthError(ProviderCallError):
    """401 / 403, or a provider named without its key."""


class MissingKeyError(AuthError, ConfigError):
    """A provider was named but its key is not set: raised before any request, and a
    ConfigError too (fixing the configuration fixes it)."""


class BadRequestError(ProviderCallError):
    """400: the request itself is wrong; retrying changes nothing."""


class ContextLengthExceeded(BadRequestError):
    """The request does not fit in the model's context window."""


class ModelNotFound(ProviderCallError):
    """404: the provider does not serve this model."""


class InsufficientCredits(ProviderCallError):
    """402: the account has no credit left."""


class UnexpectedRedirect(ProviderCallError):
    """A 3xx: redirects are never followed."""


class RateLimited(ProviderCallError):
    """429."""


class ProviderUnavailable(ProviderCallError):
    """5xx, 409, or a transient transport failure (see `phase`)."""


class ProviderUnreachable(ProviderUnavailable):
    """TLS or proxy failure: a fault in this machine's environment."""


class ProviderTimeout(ProviderCallError):
    """408, or the call timed out."""


class ResponseInvalid(ProviderCallError):
    """A success status whose body could not be used."""


_CONTEXT_MARKERS = ("context_length_exceeded", "maximum context length", "context window",
                    "prompt is too long")


def provider_error_class(status: int | None, phase: str | None,
                         body: str | None = None) -> type[ProviderCallError]:
    """The kind of a provider failure, from its status and phase (never its message)."""
    if status is not None:
        if status in (401, 403):
            return AuthError
        if status == 402:
            return InsufficientCredits
        if status == 404:
            return ModelNotFound
        if status == 408:
            return ProviderTimeout
        if status == 429:
            return RateLimited
        if status == 400:
            lowered = (body or "").lower()
            if any(m in lowered for m in _CONTEXT_MARKERS):
                return ContextLengthExceeded
            return BadRequestError
        if 300 <= status < 400:
            return UnexpectedRedirect
        if status >= 500 or status == 409:
            return ProviderUnavailable
        if status < 300:
            return ResponseInvalid
        return ProviderCallError
    if phase in ("tls", "proxy"):
        return ProviderUnreachable
    if phase == "body":
        return ResponseInvalid
    if phase == "local":
        return BadRequestError
    return ProviderUnavailable


def typed_provider_error(err: ProviderError) -> ProviderCallError:
    """`err` as the ProviderCallError subclass its status and phase name, same attributes,
    `err` as its cause (itself when it is one already)."""
    if isinstance(err, ProviderCallError):
        return err
    cls = provider_error_class(err.status, err.phase, err.body)
    typed = cls(
        str(err.args[0]) if err.args else "model call failed", provider=err.provider,
        model=err.model, status=err.status, phase=err.phase, request_sent=err.request_sent,
        retryable=err.retryable, headers=err.headers, retry_after=err.retry_after,
        body=err.body, request_id=err.request_id, partial=err.partial,
    )
    typed.__cause__ = err
    return typed


def kind_of(value: object) -> str:
    """A value's kind in the words of the YAML or JSON it came from, with its article
    (`a mapping`, `text`, `a number`), for messages about data a user wrote."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"
