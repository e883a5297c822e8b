"""One model call across its candidates: retries, fallback, breaker, limiter, budget, cost.

A `Router` is a `ModelClient` over an ordered list of `Candidate`s (the primary, then
each fallback entry with its own provider, model and settings). For each candidate: skip
it if it cannot take the request (a capability check) or its breaker is open; otherwise
try it, retrying what the candidate's `RetryPolicy` calls retryable, with backoff and
Retry-After through the injected clock. A permanent error ends that candidate at once;
the next candidate gets its turn. A streamed reply that already delivered a chunk is
never retried or moved elsewhere here (the text would be doubled): the error goes up, and
the caller's own retry decides. Every attempt is reported content-free, numbered per
candidate, with the wait before it. When all candidates fail, `CallFailed` (a
`ProviderError`) carries the decisive error's facts plus every error and attempt.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from decimal import Decimal
from typing import Any

from agentloom._clock import SYSTEM_CLOCK, Clock, SystemClock
from agentloom._record import FACTORY, FrozenRecord, frozen_record, set_field, thaw
from agentloom.errors import AgentLoomError, ProviderError
from agentloom.messages import ModelRequest, ModelResponse, StreamEvent, Usage
from agentloom.pricing import Price, PriceTable, Rates, price_usage
from agentloom.providers import (
    AttemptRecord,
    AttemptSink,
    Capabilities,
    EventSink,
    ModelClient,
    check_attachments,
)
from agentloom.routing._breaker import CircuitBreaker, Outcome
from agentloom.routing._budget import RunBudget, estimate_prompt_tokens, output_bound
from agentloom.routing._limiter import RateLimiter
from agentloom.routing._retry import RetryPolicy, retry_after_of
from agentloom.routing.retry_notice import retry_listener
from agentloom.transport import TransportError

CheckHook = Callable[[ModelRequest, Capabilities], "str | None"]
"""Returns why a provider cannot take a request, or None if it can."""


@frozen_record
class Candidate(FrozenRecord):
    """One provider + model to try, with its own settings."""

    provider: str
    model: str
    client: ModelClient
    protocol: str | None = None
    """The wire protocol the candidate's provider speaks (informational)."""
    retry: RetryPolicy | None = None
    """None: the router's policy."""
    capabilities: Capabilities | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    """Extra body parameters; the request's own `extra` wins over them."""
    headers: Mapping[str, str] = field(default_factory=dict)
    max_tokens: int | None = None
    """Ceiling: used when the request sets none, and caps a larger one."""
    price: Price | None = None
    """A price for this model that wins over the table (a profile's pricing)."""
    breaker: CircuitBreaker | None = None
    limiter: RateLimiter | None = None
    unavailable: str | None = None
    """Why this candidate can't be used at all (a fallback provider whose key isn't set):
    it is then skipped like a provider that can't take the request. It matters only when
    the chain reaches it, so a working primary never trips over it."""

    def __init__(
        self, *, provider: str, model: str, client: ModelClient, protocol: str | None = None,
        retry: RetryPolicy | None = None, capabilities: Capabilities | None = None,
        params: Mapping[str, Any] = FACTORY, headers: Mapping[str, str] = FACTORY,
        max_tokens: int | None = None, price: Price | None = None,
        breaker: CircuitBreaker | None = None, limiter: RateLimiter | None = None,
        unavailable: str | None = None,
    ) -> None:
        set_field(self, "provider", provider)
        set_field(self, "model", model)
        set_field(self, "client", client)
        set_field(self, "protocol", protocol)
        set_field(self, "retry", retry)
        set_field(self, "capabilities", capabilities)
        set_field(self, "params", {} if params is FACTORY else params)
        set_field(self, "headers", {} if headers is FACTORY else headers)
        set_field(self, "max_tokens", max_tokens)
        set_field(self, "price", price)
        set_field(self, "breaker", breaker)
        set_field(self, "limiter", limiter)
        set_field(self, "unavailable", unavailable)


class CallFailed(ProviderError):
    """Every candidate failed. Its attributes are the decisive error's (the last real
    failure, preferred over "cannot take this request" refusals), so callers read
    `.status`, `.retryable`, `.request_sent` as for any ProviderError.

    Attributes:
        errors: every candidate's error, in order.
        attempts: every attempt made, as reported to on_attempt.
    """

    def __init__(
        self,
        message: str,
        *,
        decisive: ProviderError,
        retryable: bool,
        errors: Sequence[ProviderError],
        attempts: Sequence[AttemptRecord],
    ) -> None:
        super().__init__(
            message,
            provider=decisive.provider,
            model=decisive.model,
            status=decisive.status,
            phase=decisive.phase,
            request_sent=decisive.request_sent,
            retryable=retryable,
            headers=decisive.headers,
            retry_after=decisive.retry_after,
            body=decisive.body,
            request_id=decisive.request_id,
            partial=getattr(decisive, "partial", False),
        )
        self.errors = tuple(errors)
        self.attempts = tuple(attempts)


def check_tools(request: ModelRequest, capabilities: Capabilities) -> str | None:
    if request.tools and not capabilities.tools:
        return "the model does not support tool calling"
    return None


def check_media(request: ModelRequest, capabilities: Capabilities) -> str | None:
    """Attachments (images, PDFs, audio), by the providers' capability facts."""
    if not _has_media(request.messages):
        return None  # the common case: nothing to check
    try:
        reason = check_attachments([p for m in request.messages for p in m.parts], capabilities)
    except AgentLoomError as exc:
        return str(exc)
    return reason or None


def _has_media(messages: Sequence[Any]) -> bool:
    # Plain loops: this runs before every attempt, and a generator per call costs more
    # than the scan of a short conversation.
    for m in messages:
        for p in m.parts:
            if p.kind in _MEDIA_KINDS:
                return True
    return False


_MEDIA_KINDS = frozenset({"image", "document", "audio"})
DEFAULT_CHECKS: tuple[CheckHook, ...] = (check_tools, check_media)


class _Sink:
    """The event sink of one streamed attempt: passes events on and remembers that one
    went out (a reply that reached the caller is never retried or moved elsewhere)."""

    __slots__ = ("delivered", "on_event")

    def __init__(self, on_event: EventSink | None) -> None:
        self.on_event = on_event
        self.delivered = False

    def __call__(self, event: StreamEvent) -> None:
        self.delivered = True
        if self.on_event is not None:
            self.on_event(event)


class _Log:
    """One call's bookkeeping in one object: the records an attempt's client reported
    (it is the client's `on_attempt`, and holds them until the router numbers them), the
    errors and failed attempts `CallFailed` carries, and which errors were refusals. Its
    lists are made on first use, so a call that succeeds at once makes none, and fewer
    objects live through each call's wait for the collector to walk."""

    __slots__ = ("attempts", "errors", "pending", "refused")

    def __init__(self) -> None:
        self.pending: list[AttemptRecord] | None = None
        self.errors: list[ProviderError] = _NONE
        self.attempts: list[AttemptRecord] = _NONE
        self.refused: set[int] = _NO_IDS

    def __call__(self, record: AttemptRecord) -> None:
        if self.pending is None:
            self.pending = [record]
        else:
            self.pending.append(record)

    def fail(self, err: ProviderError) -> None:
        if self.errors is _NONE:
            self.errors = []
        self.errors.append(err)

    def keep(self, record: AttemptRecord) -> None:
        if self.attempts is _NONE:
            self.attempts = []
        self.attempts.append(record)

    def refuse(self, err: ProviderError) -> None:
        if self.refused is _NO_IDS:
            self.refused = set()
        self.refused.add(id(err))
        self.fail(err)


_NONE: list[Any] = []
"""The empty list every `_Log` starts with; it is replaced, never added to."""
_NO_IDS: set[int] = set()


class Router:
    """A ModelClient that tries candidates in order.

    router = Router([Candidate(provider="openai", model="gpt-4o-mini", client=a),
                     Candidate(provider="anthropic", model="claude-haiku-4-5", client=b)],
                    retry=RetryPolicy(max_retries=2), clock=clock)
    response = await router.complete(request, on_attempt=records.append)
    """

    def __init__(
        self,
        candidates: Sequence[Candidate],
        *,
        retry: RetryPolicy | None = None,
        clock: Clock = SYSTEM_CLOCK,
        budget: RunBudget | None = None,
        prices: PriceTable | None = None,
        checks: Sequence[CheckHook] = DEFAULT_CHECKS,
        rng: random.Random | None = None,
    ) -> None:
        if not candidates:
            raise ValueError("a Router needs at least one candidate")
        self.candidates = tuple(candidates)
        self.retry = retry or RetryPolicy()
        self.budget = budget
        self._clock = clock
        self._prices = prices
        self._checks = tuple(checks)
        self._rng = rng or _jitter_rng()
        self._priced: tuple[tuple[Candidate, Price | None, Rates | None], ...] | None = None
        """Each candidate with its price (and the price's rates), looked up on first need:
        price tables don't change."""
        self._fast = False
        """Whether the first candidate may take the straight path of `complete`: no rate
        limiter to wait on, no budget to reserve from, nothing but the default checks."""
        # The system clock's `now` is `time.monotonic`: called directly, one frame less.
        self._now: Callable[[], float] = (
            time.monotonic if type(clock) is SystemClock else clock.now)

    # --- the call ------------------------------------------------------------------------

    async def complete(
        self,
        request: ModelRequest,
        *,
        on_event: EventSink | None = None,
        on_attempt: AttemptSink | None = None,
    ) -> ModelResponse:
        priced = self._priced
        if priced is None:
            priced = self._prepare()
        if not self._fast or self.budget is not None:
            return await self._from(0, request, on_event, on_attempt, None)
        # The first attempt at the first candidate, straight through: what `_from` and
        # `_try` do for it, without their frames, their bookkeeping objects or the
        # budget and limiter steps this router has none of. A failure goes on to the
        # full path where `_try` would have gone: its retries, then the other candidates.
        cand, price, rates = priced[0]
        req = request
        if (request.model != cand.model or cand.params or cand.headers
                or cand.max_tokens is not None):
            req = self.request_for(cand, request)
        caps = cand.capabilities
        if caps is not None:
            # The default checks, each called only when it could refuse (the same reasons).
            reason = None
            if req.tools and not caps.tools:
                reason = check_tools(req, caps)
            elif _has_media(req.messages):
                reason = check_media(req, caps)
            if reason:
                refused = _Log()
                self._refuse(refused, cand, reason)
                return await self._from(1, request, on_event, on_attempt, refused)
        breaker = cand.breaker
        if breaker is not None and not breaker.allow():
            shut = _Log()
            shut.fail(self._open_error(cand))
            return await self._from(1, request, on_event, on_attempt, shut)
        policy = cand.retry or self.retry
        sink = _Sink(on_event) if (req.stream or on_event) else None
        pending: list[AttemptRecord] = []
        log: _Log | None = None
        pause: float | None = None
        outcome: Outcome = "ignored"
        started = self._now()
        try:
            response = await cand.client.complete(req, on_event=sink, on_attempt=pending.append)
            outcome = "success"
            if rates is not None and response.usage.cost_usd is None:
                response = _with_cost(response, rates.cost(response.usage))
        except (ProviderError, TransportError) as exc:
            log = _Log()
            log.pending = pending or None
            err = self._as_provider_error(exc, cand)
            if sink is not None and sink.delivered and not getattr(err, "partial", False):
                err.partial = True
            outcome = self._outcome(err, policy)
            self._report(on_attempt, log, cand, 1, 0.0, started, err)
            log.fail(err)
            pause = self._pause(err, policy, 1)
            if pause is not None and breaker is not None:
                breaker.record(outcome)
                breaker = None
        finally:
            if breaker is not None:
                breaker.record(outcome)
        if log is None:
            if on_attempt is not None:
                if not pending:
                    on_attempt(self._own_record(cand, 1, 0.0, started, None))
                for record in pending:
                    if record.attempt != 1 or record.wait_before_seconds != 0.0:
                        record = dataclasses.replace(record, attempt=1, wait_before_seconds=0.0)
                    on_attempt(record)
            return response
        if pause is not None:
            listener = retry_listener.get()
            if listener is not None:
                listener(1, err)
            await self._clock.sleep(pause)
            retried = await self._try(
                cand, price, req, on_event, on_attempt, log, first=2, wait=pause)
            if retried is not None:
                return retried
        if getattr(log.errors[-1], "partial", False):
            raise self._failure(request, log)
        return await self._from(1, request, on_event, on_attempt, log)

    def _prepare(self) -> tuple[tuple[Candidate, Price | None, Rates | None], ...]:
        priced = []
        for cand in self.candidates:
            price = self.price_of(cand)
            priced.append((cand, price, None if price is None else Rates(price)))
        self._priced = tuple(priced)
        first = self.candidates[0]
        self._fast = (first.limiter is None and first.unavailable is None
                      and self._checks == DEFAULT_CHECKS)
        return self._priced

    async def _from(
        self,
        start: int,
        request: ModelRequest,
        on_event: EventSink | None,
        on_attempt: AttemptSink | None,
        log: _Log | None,
    ) -> ModelResponse:
        """The call from candidate `start` on (0: the whole call, budget check first)."""
        priced = self._priced
        assert priced is not None
        if log is None:
            log = _Log()
        if start == 0 and self.budget is not None:
            for cand, price, _ in priced:
                if cand.unavailable is None:
                    self.budget.require_price(
                        cand.provider, cand.model, priced=price is not None
                    )
        for cand, price, _ in priced[start:]:
            req = self.request_for(cand, request)
            reason = self._refusal(cand, req)
            if reason is not None:
                self._refuse(log, cand, reason)
                continue
            response = await self._try(cand, price, req, on_event, on_attempt, log)
            if response is not None:
                return response
            if log.errors and getattr(log.errors[-1], "partial", False):
                break  # text already reached the caller: no other provider may continue it
        raise self._failure(request, log)

    @staticmethod
    def _refuse(log: _Log, cand: Candidate, reason: str) -> None:
        log.refuse(ProviderError(
            f"{cand.provider} cannot take this request: {reason}",
            provider=cand.provider,
            model=cand.model,
            phase="local",
            request_sent=False,
            retryable=False,
        ))

    @staticmethod
    def _open_error(cand: Candidate) -> ProviderError:
        return ProviderError(
            f"circuit breaker for {cand.provider} is open after repeated failures",
            provider=cand.provider,
            model=cand.model,
            phase="local",
            request_sent=False,
            retryable=True,
        )

    def _pause(self, err: ProviderError, policy: RetryPolicy, attempt: int) -> float | None:
        """The wait before the next attempt after `err`, or None: no next attempt."""
        if err.partial or not policy.is_retryable(err) or attempt > policy.max_retries:
            return None
        return policy.wait_before_retry(
            attempt, retry_after_of(err, now_wall=self._clock.wall()), self._rng
        )

    async def _try(
        self,
        cand: Candidate,
        price: Price | None,
        req: ModelRequest,
        on_event: EventSink | None,
        on_attempt: AttemptSink | None,
        log: _Log,
        *,
        first: int = 1,
        wait: float = 0.0,
    ) -> ModelResponse | None:
        """Attempts `first`... at one candidate (`wait`: the pause before `first`)."""
        policy = cand.retry or self.retry
        clock = self._clock
        # The worst-case size only feeds the budget and the limiter: skip it without them.
        if self.budget is not None or cand.limiter is not None:
            prompt_estimate = estimate_prompt_tokens(req)
            bound = output_bound(
                req, self.budget.default_output_tokens if self.budget else 4096)
        else:
            prompt_estimate = bound = 0
        for attempt in range(first, policy.max_retries + 2):
            breaker = cand.breaker
            if breaker is not None and not breaker.allow():
                if attempt > 1:
                    return None  # it opened during our retries: the last real error stands
                log.fail(self._open_error(cand))
                return None
            outcome: Outcome = "ignored"
            reservation = None
            sink = _Sink(on_event) if (req.stream or on_event) else None
            started = clock.now()
            try:
                if self.budget is not None:
                    worst = (
                        None
                        if price is None
                        else price_usage(
                            Usage(input_tokens=prompt_estimate, output_tokens=bound), price
                        )
                    )
                    reservation = self.budget.reserve(
                        cost=worst, tokens=prompt_estimate + bound, model=cand.model
                    )
                if cand.limiter is not None:
                    wait += await cand.limiter.acquire(prompt_estimate + bound)
                    started = clock.now()
                response = await cand.client.complete(req, on_event=sink, on_attempt=log)
                outcome = "success"
                response = self._settle(cand, price, response, prompt_estimate + bound)
                if reservation is not None and self.budget is not None:
                    self.budget.commit(
                        reservation,
                        cost=response.usage.cost_usd,
                        tokens=_tokens_used(response.usage),
                    )
                    reservation = None
            except (ProviderError, TransportError) as exc:
                err = self._as_provider_error(exc, cand)
                if sink is not None and sink.delivered and not getattr(err, "partial", False):
                    err.partial = True
                outcome = self._outcome(err, policy)
                self._report(on_attempt, log, cand, attempt, wait, started, err)
                log.fail(err)
                if self.budget is not None and reservation is not None:
                    self.budget.release(reservation)
                    reservation = None
                # None: not retryable, out of retries, or asked to wait longer than we allow
                pause = self._pause(err, policy, attempt)
                if pause is None:
                    return None
                if breaker is not None:
                    breaker.record(outcome)
                    breaker = None
                listener = retry_listener.get()
                if listener is not None:
                    listener(attempt, err)
                await clock.sleep(pause)
                wait = pause
                continue
            finally:
                if breaker is not None:
                    breaker.record(outcome)
                if reservation is not None and self.budget is not None:
                    self.budget.release(reservation)
            self._report(on_attempt, log, cand, attempt, wait, started, None)
            return response
        return None  # pragma: no cover - the loop returns on its last attempt

    # --- helpers -----------------------------------------------------------------------

    def request_for(self, cand: Candidate, request: ModelRequest) -> ModelRequest:
        """The request as this candidate gets it: its model, its params and headers under
        the request's own, and its max_tokens ceiling."""
        if (request.model == cand.model and not cand.params and not cand.headers
                and cand.max_tokens is None):
            return request  # the every-call case: nothing to change
        changes: dict[str, Any] = {}
        if request.model != cand.model:
            changes["model"] = cand.model
        if cand.params:
            changes["extra"] = {**cand.params, **request.extra}
        if cand.headers:
            changes["headers"] = {**cand.headers, **request.headers}
        if cand.max_tokens is not None:
            mt = request.max_tokens
            changes["max_tokens"] = cand.max_tokens if mt is None else min(mt, cand.max_tokens)
        return request.replace(**changes) if changes else request

    def price_of(self, cand: Candidate) -> Price | None:
        if cand.price is not None:
            return cand.price
        return (self._prices or PriceTable.default()).lookup(cand.provider, cand.model)

    def _refusal(self, cand: Candidate, request: ModelRequest) -> str | None:
        if cand.unavailable is not None:
            return cand.unavailable
        if cand.capabilities is None:
            return None
        for check in self._checks:
            reason = check(request, cand.capabilities)
            if reason:
                return reason
        return None

    @staticmethod
    def _as_provider_error(exc: ProviderError | TransportError, cand: Candidate) -> ProviderError:
        if isinstance(exc, ProviderError):
            return exc
        return ProviderError(
            str(exc),
            provider=cand.provider,
            model=cand.model,
            phase=exc.phase,  # type: ignore[arg-type]
            request_sent=exc.request_sent,
            retryable=True,
        )

    @staticmethod
    def _outcome(err: ProviderError, policy: RetryPolicy) -> Outcome:
        # A 429 means busy, not broken; a 4xx means our request was bad, not the endpoint.
        if err.status == 429 or err.phase == "local":
            return "ignored"
        return "failure" if policy.is_retryable(err) else "ignored"

    def _report(
        self,
        on_attempt: AttemptSink | None,
        log: _Log,
        cand: Candidate,
        attempt: int,
        wait: float,
        started: float,
        err: ProviderError | None,
    ) -> None:
        """Each attempt the client reported, numbered for this candidate and with the
        wait before it, else one record of our own; passed on, and a failed attempt's kept
        for `CallFailed` (a success ends the call, so its records are never needed)."""
        records = log.pending
        log.pending = None
        if records is None:
            records = [self._own_record(cand, attempt, wait, started, err)]
        before = wait
        for record in records:
            if record.attempt != attempt or record.wait_before_seconds != before:
                record = dataclasses.replace(
                    record, attempt=attempt, wait_before_seconds=before)
            before = 0.0
            if err is not None:
                log.keep(record)  # frozen: an unchanged record is passed as is
            if on_attempt is not None:
                on_attempt(record)

    def _own_record(
        self, cand: Candidate, attempt: int, wait: float, started: float,
        err: ProviderError | None,
    ) -> AttemptRecord:
        return AttemptRecord(
            provider=cand.provider,
            model=cand.model,
            attempt=attempt,
            ok=err is None,
            duration_seconds=max(0.0, self._clock.now() - started),
            wait_before_seconds=wait,
            status=err.status if err else None,
            phase=err.phase if err else None,
            request_sent=err.request_sent if err else True,
            error_type=type(err).__name__ if err else None,
        )

    @staticmethod
    def _settle(
        cand: Candidate, price: Price | None, response: ModelResponse, reservation_tokens: int
    ) -> ModelResponse:
        """Cost from the price table unless the provider reported one; TPM refund."""
        if response.usage.cost_usd is None and price is not None:
            response = _with_cost(response, price_usage(response.usage, price))
        if cand.limiter is not None:
            cand.limiter.settle(reservation_tokens, _tokens_used(response.usage))
        return response

    def _failure(self, request: ModelRequest, log: _Log) -> CallFailed:
        errors, refusals, attempts = log.errors, log.refused, log.attempts
        real = [e for e in errors if id(e) not in refusals]
        decisive = real[-1] if real else errors[-1]
        policy = self.retry
        for cand in self.candidates:
            if cand.provider == decisive.provider and cand.model == decisive.model:
                policy = cand.retry or self.retry
                break
        retryable = id(decisive) not in refusals and (policy.is_retryable(decisive))
        if len(errors) == 1:
            message = str(decisive.args[0]) if decisive.args else "model call failed"
        elif not real:
            message = f"no provider can take this request for model {request.model}: " + "; ".join(
                f"{e.provider}/{e.model}: {e.args[0]}" for e in errors
            )
        else:
            message = (
                f"all {len(self.candidates)} candidates failed for model "
                f"{request.model}: "
                + "; ".join(f"{e.provider}/{e.model}: {_short(e)}" for e in errors)
            )
        failure = CallFailed(
            message, decisive=decisive, retryable=retryable, errors=errors, attempts=attempts
        )
        failure.__cause__ = decisive
        return failure


_RESPONSE_FIELDS = ("parts", "usage", "finish_reason", "model", "provider", "response_id",
                    "time_to_first_token")
_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
                 "reasoning_tokens", "cost_usd", "input_includes_cached", "cost_estimated")
# Built field by field on a fresh object (what their `__init__`s do, without the keyword
# calls that cost ~9 k instructions each, on every priced call) only while these are all
# of the classes' fields; a new field falls back to replace.
_DIRECT = (tuple(f.name for f in dataclasses.fields(ModelResponse)) == _RESPONSE_FIELDS
           and tuple(f.name for f in dataclasses.fields(Usage)) == _USAGE_FIELDS)
_new = object.__new__
_set_class = vars(object)["__class__"].__set__
_TWINS: list[type] = []
"""The mutable twins of Usage and ModelResponse (see `agentloom._record`), taken on the
first priced call: making one costs more than a process that never prices should pay."""


def _with_cost(response: ModelResponse, cost: Decimal | None) -> ModelResponse:
    """The response with its usage's cost set (and marked estimated when known)."""
    usage = response.usage
    if not _DIRECT:
        return dataclasses.replace(response, usage=usage.with_cost(cost))
    if not _TWINS:
        _TWINS.extend(type(thaw(_new(cls))) for cls in (Usage, ModelResponse))
    # Made as the twin and frozen by a class swap: a third of thaw(new) + freeze.
    priced: Any = _new(_TWINS[0])
    priced.input_tokens = usage.input_tokens
    priced.output_tokens = usage.output_tokens
    priced.cache_read_tokens = usage.cache_read_tokens
    priced.cache_write_tokens = usage.cache_write_tokens
    priced.reasoning_tokens = usage.reasoning_tokens
    priced.cost_usd = cost
    priced.input_includes_cached = usage.input_includes_cached
    priced.cost_estimated = cost is not None
    _set_class(priced, Usage)
    copy: Any = _new(_TWINS[1])
    copy.parts = response.parts
    copy.usage = priced
    copy.finish_reason = response.finish_reason
    copy.model = response.model
    copy.provider = response.provider
    copy.response_id = response.response_id
    copy.time_to_first_token = response.time_to_first_token
    _set_class(copy, ModelResponse)
    return copy  # type: ignore[no-any-return]


def _tokens_used(usage: Usage) -> int | None:
    return usage.total_tokens  # output_tokens include reasoning for every provider


def _short(err: ProviderError) -> str:
    head = str(err.args[0]) if err.args else type(err).__name__
    return f"{head} (status {err.status})" if err.status is not None else head


_JITTER_RNG: list[random.Random] = []


def _jitter_rng() -> random.Random:
    """One generator for every router's backoff jitter: seeding a fresh one for each
    router (one per step of every run) cost more than the rest of its set-up."""
    if not _JITTER_RNG:
        _JITTER_RNG.append(random.Random())
    return _JITTER_RNG[0]
