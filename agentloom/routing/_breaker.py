"""A circuit breaker per provider endpoint, so a dead endpoint is skipped quickly.

After `failure_threshold` consecutive failures the breaker opens: calls are refused
without touching the network (the router moves to the next candidate). After
`recovery_seconds` it lets `half_open_max` probe calls through; a probe's success closes
it, a failure opens it again. Rate limiting (429), cancelled streams and the caller's own
bad requests say nothing about the endpoint's health and are recorded as `ignored`.
State is read through public methods only, and `snapshot()` feeds run summaries.
"""

from __future__ import annotations

from typing import Any, Literal

from agentloom._clock import SYSTEM_CLOCK, Clock
from agentloom._record import FrozenRecord, frozen_record, set_field

BreakerState = Literal["closed", "open", "half_open"]
Outcome = Literal["success", "failure", "ignored"]


@frozen_record
class BreakerSettings(FrozenRecord):
    """BreakerSettings()                                   # 5 failures, 30 s, 1 probe
    BreakerSettings(failure_threshold=None)             # never opens"""

    failure_threshold: int | None = 5
    recovery_seconds: float = 30.0
    half_open_max: int = 1

    def __init__(
        self, *, failure_threshold: int | None = 5, recovery_seconds: float = 30.0,
        half_open_max: int = 1,
    ) -> None:
        set_field(self, "failure_threshold", failure_threshold)
        set_field(self, "recovery_seconds", recovery_seconds)
        set_field(self, "half_open_max", half_open_max)
        self.__post_init__()

    def __post_init__(self) -> None:
        if self.failure_threshold is not None and self.failure_threshold < 1:
            raise ValueError(f"failure_threshold must be >= 1, got {self.failure_threshold}")
        if self.recovery_seconds < 0:
            raise ValueError(f"recovery_seconds must be >= 0, got {self.recovery_seconds}")
        if self.half_open_max < 1:
            raise ValueError(f"half_open_max must be >= 1, got {self.half_open_max}")


class CircuitBreaker:
    """One endpoint's breaker. Call `allow()` before a call; if it said yes, call
    `record(outcome)` exactly once after it."""

    __slots__ = (
        "_clock",
        "_failures",
        "_in_flight",
        "_opened_at",
        "_times_opened",
        "name",
        "settings",
    )

    def __init__(
        self, name: str, settings: BreakerSettings | None = None, *, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.name = name
        self.settings = settings or BreakerSettings()
        self._clock = clock
        self._failures = 0
        self._opened_at: float | None = None
        self._in_flight = 0
        self._times_opened = 0

    @property
    def state(self) -> BreakerState:
        if self._opened_at is None:
            return "closed"
        if self._clock.now() - self._opened_at >= self.settings.recovery_seconds:
            return "half_open"
        return "open"

    def allow(self) -> bool:
        if self._opened_at is None:
            return True  # closed: the every-call case, without the state's clock read
        state = self.state
        if state == "closed":
            return True
        if state == "open":
            return False
        if self._in_flight < self.settings.half_open_max:
            self._in_flight += 1
            return True
        return False

    def record(self, outcome: Outcome) -> None:
        if self._opened_at is None and outcome == "success":
            self._failures = 0  # closed (no probe in flight): the every-call case
            return
        half_open = self._opened_at is not None and self.state == "half_open"
        if half_open and self._in_flight:
            self._in_flight -= 1
        if outcome == "success":
            self._failures = 0
            self._opened_at = None
            self._in_flight = 0
        elif outcome == "failure":
            self._failures += 1
            threshold = self.settings.failure_threshold
            if half_open or (threshold is not None and self._failures >= threshold):
                self._open()

    def _open(self) -> None:
        self._opened_at = self._clock.now()
        self._in_flight = 0
        self._times_opened += 1

    def snapshot(self) -> dict[str, Any]:
        """Plain data for summaries: state, consecutive failures, times opened."""
        return {
            "endpoint": self.name,
            "state": self.state,
            "consecutive_failures": self._failures,
            "times_opened": self._times_opened,
        }


class Breakers:
    """The breakers of one runtime, one per endpoint name, created on first use."""

    def __init__(self, settings: BreakerSettings | None = None, *, clock: Clock = SYSTEM_CLOCK):
        self.settings = settings or BreakerSettings()
        self._clock = clock
        self._by_name: dict[str, CircuitBreaker] = {}

    def configure(self, settings: BreakerSettings) -> None:
        """New thresholds for every breaker, existing ones included (workflow config)."""
        self.settings = settings
        for breaker in self._by_name.values():
            breaker.settings = settings

    def get(self, name: str) -> CircuitBreaker:
        breaker = self._by_name.get(name)
        if breaker is None:
            breaker = self._by_name[name] = CircuitBreaker(name, self.settings, clock=self._clock)
        return breaker

    def snapshot(self) -> dict[str, dict[str, Any]]:
        return {name: b.snapshot() for name, b in sorted(self._by_name.items())}
