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
from collections.abc import Callable, Sequence
from typing import Any

from agentloom._clock import SYSTEM_CLOCK, Clock, SystemClock
from agentloom.errors import ProviderError
from agentloom.messages import ModelRequest, ModelResponse, Usage
from agentloom.pricing import Price, PriceTable, Rates, price_usage
from agentloom.providers import (
    AttemptRecord,
    AttemptSink,
    EventSink,
)
from agentloom.routing._breaker import Outcome
from agentloom.routing._budget import RunBudget, estimate_prompt_tokens, output_bound
from agentloom.routing._call_log import CallLog, DeliverySink
from agentloom.routing._candidate import (
    DEFAULT_CHECKS,
    CallFailed,
    Candidate,
    CheckHook,
    check_media,
    check_tools,
    has_media,
)
from agentloom.routing._priced import with_cost
from agentloom.routing._retry import RetryPolicy, retry_after_of
from agentloom.routing.retry_notice import retry_listener
from agentloom.transport import TransportError


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
            elif has_media(req.messages):
                reason = check_media(req, caps)
            if reason:
                refused = CallLog()
                self._refuse(refused, cand, reason)
                return await self._from(1, request, on_event, on_attempt, refused)
        breaker = cand.breaker
        if breaker is not None and not breaker.allow():
            shut = CallLog()
            shut.fail(self._open_error(cand))
            return await self._from(1, request, on_event, on_attempt, shut)
        policy = cand.retry or self.retry
        sink = DeliverySink(on_event) if (req.stream or on_event) else None
        pending: list[AttemptRecord] = []
        log: CallLog | None = None
        pause: float | None = None
        outcome: Outcome = "ignored"
        started = self._now()
        try:
            response = await cand.client.complete(req, on_event=sink, on_attempt=pending.append)
            outcome = "success"
            if rates is not None and response.usage.cost_usd is None:
                response = with_cost(response, rates.cost(response.usage))
        except (ProviderError, TransportError) as exc:
            log = CallLog()
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
        log: CallLog | None,
    ) -> ModelResponse:
        """The call from candidate `start` on (0: the whole call, budget check first)."""
        priced = self._priced
        assert priced is not None
        if log is None:
            log = CallLog()
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
    def _refuse(log: CallLog, cand: Candidate, reason: str) -> None:
        log.refuse(_local_error(cand, f"{cand.provider} cannot take this request: {reason}",
                                retryable=False))

    @staticmethod
    def _open_error(cand: Candidate) -> ProviderError:
        return _local_error(
            cand, f"circuit breaker for {cand.provider} is open after repeated failures",
            retryable=True)

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
        log: CallLog,
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
            sink = DeliverySink(on_event) if (req.stream or on_event) else None
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
        log: CallLog,
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
            response = with_cost(response, price_usage(response.usage, price))
        if cand.limiter is not None:
            cand.limiter.settle(reservation_tokens, _tokens_used(response.usage))
        return response

    def _failure(self, request: ModelRequest, log: CallLog) -> CallFailed:
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


def _local_error(cand: Candidate, message: str, *, retryable: bool) -> ProviderError:
    """An error raised here, before any request left: nothing was sent to `cand`."""
    return ProviderError(message, provider=cand.provider, model=cand.model, phase="local",
                         request_sent=False, retryable=retryable)
