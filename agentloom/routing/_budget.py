"""A run's spending cap, shared by every call of the run, checked before each call.

Checking after a call is too late when fifty steps run at once: each would see the budget
untouched and all would go. So every call first `reserve()`s its worst case (prompt
tokens estimated from the text, `max_tokens` as the output bound) and is refused if
spent + reserved + this would pass the cap; after the call `commit()` swaps the
reservation for what the call really used. Concurrent calls therefore cannot overshoot.
A call whose actual cost is unknown keeps its reserved worst case as spent (fail closed).

A budget may sit `within` another: a nested run's own cap inside its top-level run's.
Every call then reserves in both, and the outer one holds everything its nested runs
spend, so nested work can't spend past the run's cap.
"""

from __future__ import annotations

import itertools
import threading
from decimal import Decimal
from typing import Any

from agentloom._record import FrozenRecord, frozen_record, set_field
from agentloom.errors import BudgetExceeded, ConfigError, PriceUnknown
from agentloom.messages import (
    AudioPart,
    DocumentPart,
    ImagePart,
    ModelRequest,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

DEFAULT_OUTPUT_CEILING = 4096
"""The output bound assumed for a call that sets no max_tokens (and no profile ceiling)."""
_MEDIA_TOKENS = 1500
_MESSAGE_OVERHEAD = 4


def estimate_prompt_tokens(request: ModelRequest) -> int:
    """A deliberately generous prompt size: ~4 characters per token, rounded up, plus a
    little per message, per tool schema, and a flat amount per attachment."""
    chars = 0
    media = 0
    for message in request.messages:
        chars += _MESSAGE_OVERHEAD * 4
        for part in message.parts:
            if isinstance(part, TextPart | ReasoningPart):
                chars += len(part.text)
            elif isinstance(part, ToolCallPart):
                chars += len(part.name) + len(part.arguments)
            elif isinstance(part, ToolResultPart):
                chars += len(part.content)
            elif isinstance(part, ImagePart | DocumentPart | AudioPart):
                media += 1
    for tool in request.tools:
        chars += len(tool.name) + len(tool.description) + len(str(tool.parameters))
    if request.response_format is not None and request.response_format.schema:
        chars += len(str(request.response_format.schema))
    return -(-chars // 4) + media * _MEDIA_TOKENS


def output_bound(request: ModelRequest, default: int = DEFAULT_OUTPUT_CEILING) -> int:
    bound = request.max_tokens if request.max_tokens is not None else default
    if request.reasoning is not None and request.reasoning.budget_tokens:
        # Providers that bill thinking beside max_tokens (Anthropic adds the budget).
        bound = max(bound, request.reasoning.budget_tokens + (request.max_tokens or 0))
    return bound


@frozen_record(kw_only=False)
class Reservation(FrozenRecord):
    """What one call in flight holds against the run's budget until it ends."""

    id: int
    cost: Decimal | None
    tokens: int | None
    outer: Reservation | None = None
    """The same call's reservation in the budget this one is within."""

    def __init__(self, id: int, cost: Decimal | None, tokens: int | None,
                 outer: Reservation | None = None) -> None:
        set_field(self, "id", id)
        set_field(self, "cost", cost)
        set_field(self, "tokens", tokens)
        set_field(self, "outer", outer)


class RunBudget:
    """Cost and token caps for one run; None disables a cap.

    budget = RunBudget(max_cost_usd=Decimal("0.50"), max_tokens=200_000)
    runtime.client(model="gpt-4o-mini", budget=budget)   # every call of the run

    `within` is the budget of the run this one is nested in: its caps hold as well, and
    it counts what this one spends. `refusal` is the first call this budget refused.
    """

    def __init__(
        self,
        max_cost_usd: Decimal | float | str | None = None,
        max_tokens: int | None = None,
        *,
        default_output_tokens: int = DEFAULT_OUTPUT_CEILING,
        within: RunBudget | None = None,
    ) -> None:
        self.max_cost_usd = _money(max_cost_usd)
        if max_tokens is not None and (isinstance(max_tokens, bool) or max_tokens < 0):
            raise ConfigError(f"token budget must be >= 0, got {max_tokens!r}")
        self.max_tokens = max_tokens
        self.default_output_tokens = default_output_tokens
        self.spent_usd = Decimal(0)
        self.spent_tokens = 0
        self._reserved: dict[int, Reservation] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()  # batch executors may share a budget across threads
        self.within = within
        self.refusal: BudgetExceeded | None = None

    @property
    def exhausted(self) -> BudgetExceeded | None:
        """The refusal that ends the run: this budget's, or that of one it is within."""
        if self.refusal is not None:
            return self.refusal
        return self.within.exhausted if self.within is not None else None

    @property
    def reserved_usd(self) -> Decimal:
        return sum((r.cost or Decimal(0) for r in self._reserved.values()), Decimal(0))

    @property
    def reserved_tokens(self) -> int:
        return sum(r.tokens or 0 for r in self._reserved.values())

    def require_price(self, provider: str, model: str, *, priced: bool) -> None:
        """Fail before the first call when a cost cap meets a model with no price."""
        if self.within is not None:
            self.within.require_price(provider, model, priced=priced)
        if self.max_cost_usd is not None and not priced:
            refusal = PriceUnknown(
                f"a cost budget of ${self.max_cost_usd} is set, but model {model!r} at "
                f"provider {provider!r} has no price, so its cost cannot be checked; give "
                f"it a price (a price file, or `pricing: {{input: ..., output: ...}}` in "
                f"its profile, USD per 1M tokens) or drop the cost budget",
                limit=self.max_cost_usd,
            )
            if self.refusal is None:
                self.refusal = refusal
            raise refusal

    def reserve(self, *, cost: Decimal | None, tokens: int | None, model: str = "?") -> Reservation:
        """Hold a call's worst case. Raises `BudgetExceeded` if it could cross a cap."""
        outer = (None if self.within is None
                 else self.within.reserve(cost=cost, tokens=tokens, model=model))
        try:
            return self._reserve(cost, tokens, model, outer)
        except BudgetExceeded as exc:
            if outer is not None and self.within is not None:
                self.within.release(outer)
            if self.refusal is None:
                self.refusal = exc
            raise

    def _reserve(self, cost: Decimal | None, tokens: int | None, model: str,
                 outer: Reservation | None) -> Reservation:
        with self._lock:
            if self.max_cost_usd is not None:
                if cost is None:
                    self.require_price("?", model, priced=False)
                would = self.spent_usd + self.reserved_usd + (cost or Decimal(0))
                if would > self.max_cost_usd:
                    raise BudgetExceeded(
                        f"cost budget ${self.max_cost_usd} would be crossed by the next call "
                        f"to {model} (spent ${self.spent_usd}, in flight "
                        f"${self.reserved_usd}, this call up to ${cost})",
                        kind="cost",
                        limit=self.max_cost_usd,
                        actual=would,
                    )
            if self.max_tokens is not None:
                would_t = self.spent_tokens + self.reserved_tokens + (tokens or 0)
                if would_t > self.max_tokens:
                    raise BudgetExceeded(
                        f"token budget {self.max_tokens} would be crossed by the next call "
                        f"to {model} (used {self.spent_tokens}, in flight "
                        f"{self.reserved_tokens}, this call up to {tokens})",
                        kind="tokens",
                        limit=self.max_tokens,
                        actual=would_t,
                    )
            reservation = Reservation(next(self._ids), cost, tokens, outer)
            self._reserved[reservation.id] = reservation
            return reservation

    def commit(self, reservation: Reservation, *, cost: Decimal | None, tokens: int | None) -> None:
        """Replace a reservation by what the call used. Unknown amounts keep the reserved
        worst case. Never raises: the call already happened; `check()` says if a cap was
        crossed anyway (an estimate can be short)."""
        with self._lock:
            self._reserved.pop(reservation.id, None)
            self.spent_usd += cost if cost is not None else (reservation.cost or Decimal(0))
            self.spent_tokens += tokens if tokens is not None else (reservation.tokens or 0)
        if reservation.outer is not None and self.within is not None:
            self.within.commit(reservation.outer, cost=cost, tokens=tokens)

    def release(self, reservation: Reservation) -> None:
        """Drop a reservation for a call that failed before producing anything billable."""
        with self._lock:
            self._reserved.pop(reservation.id, None)
        if reservation.outer is not None and self.within is not None:
            self.within.release(reservation.outer)

    def charge(self, *, cost: Decimal | None, tokens: int | None) -> None:
        """Count what was spent before this budget existed: a resumed run's finished
        steps, and the stored replies it is served instead of asking again."""
        with self._lock:
            self.spent_usd += cost or Decimal(0)
            self.spent_tokens += tokens or 0
        if self.within is not None:
            self.within.charge(cost=cost, tokens=tokens)

    def check(self) -> None:
        """Raise `BudgetExceeded` if what was spent already passed a cap."""
        if self.within is not None:
            self.within.check()
        if self.max_cost_usd is not None and self.spent_usd > self.max_cost_usd:
            raise BudgetExceeded(
                f"cost budget ${self.max_cost_usd} exceeded: spent ${self.spent_usd}",
                kind="cost",
                limit=self.max_cost_usd,
                actual=self.spent_usd,
            )
        if self.max_tokens is not None and self.spent_tokens > self.max_tokens:
            raise BudgetExceeded(
                f"token budget {self.max_tokens} exceeded: used {self.spent_tokens}",
                kind="tokens",
                limit=self.max_tokens,
                actual=self.spent_tokens,
            )

    def snapshot(self) -> dict[str, Any]:
        return {
            "max_cost_usd": self.max_cost_usd,
            "spent_usd": self.spent_usd,
            "max_tokens": self.max_tokens,
            "spent_tokens": self.spent_tokens,
        }


def _money(value: Decimal | float | str | None) -> Decimal | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise ConfigError(f"cost budget must be a number of USD, got {value!r}")
    try:
        amount = Decimal(str(value))
    except Exception:
        raise ConfigError(f"cost budget must be a number of USD, got {value!r}") from None
    if not amount.is_finite() or amount < 0:
        raise ConfigError(f"cost budget must be >= 0 USD, got {value!r}")
    return amount
