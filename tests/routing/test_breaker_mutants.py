"""Breaker rules a mutation run found untested: the default thresholds at their boundary,
settings just inside and outside, and probe accounting in half-open (an ignored outcome
frees its probe slot and lets no extra probe through)."""

from __future__ import annotations

import pytest

from agentloom.routing import Breakers, BreakerSettings, CircuitBreaker
from agentloom.testing import FakeClock


def opened(breaker: CircuitBreaker, failures: int) -> None:
    for _ in range(failures):
        assert breaker.allow()
        breaker.record("failure")


def test_the_default_breaker_opens_on_the_fifth_failure_and_waits_thirty_seconds() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker("p", clock=clock)
    opened(breaker, 4)
    assert breaker.state == "closed"
    opened(breaker, 1)
    assert breaker.state == "open"
    clock.advance(29.999)
    assert breaker.state == "open" and not breaker.allow()
    clock.advance(0.001)
    assert breaker.state == "half_open"
    assert breaker.allow() and not breaker.allow()  # one probe by default


def test_no_threshold_never_opens() -> None:
    breaker = CircuitBreaker("p", BreakerSettings(failure_threshold=None), clock=FakeClock())
    opened(breaker, 50)
    assert breaker.state == "closed"
    assert breaker.snapshot()["consecutive_failures"] == 50


def test_a_threshold_of_one_opens_on_the_first_failure() -> None:
    breaker = CircuitBreaker("p", BreakerSettings(failure_threshold=1), clock=FakeClock())
    opened(breaker, 1)
    assert breaker.state == "open"


def test_zero_recovery_goes_straight_to_half_open() -> None:
    breaker = CircuitBreaker(
        "p", BreakerSettings(failure_threshold=1, recovery_seconds=0), clock=FakeClock()
    )
    opened(breaker, 1)
    assert breaker.state == "half_open"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"failure_threshold": 0}, "failure_threshold must be >= 1, got 0"),
        ({"recovery_seconds": -0.001}, "recovery_seconds must be >= 0"),
        ({"half_open_max": 0}, "half_open_max must be >= 1, got 0"),
    ],
)
def test_settings_just_outside_are_refused(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        BreakerSettings(**kwargs)  # type: ignore[arg-type]


def test_an_ignored_outcome_in_half_open_frees_its_slot_and_no_more() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker("p", BreakerSettings(failure_threshold=1, half_open_max=2),
                             clock=clock)
    opened(breaker, 1)
    clock.advance(30)
    assert breaker.allow() and breaker.allow()
    assert not breaker.allow()  # two probes out
    breaker.record("ignored")
    assert breaker.state == "half_open"
    assert breaker.allow()  # the freed slot
    assert not breaker.allow()  # and only that one
    breaker.record("ignored")
    breaker.record("ignored")
    breaker.record("ignored")  # more outcomes than probes never go below zero
    assert breaker.allow() and breaker.allow() and not breaker.allow()


def test_ignored_outcomes_leave_a_closed_breaker_alone() -> None:
    breaker = CircuitBreaker("p", BreakerSettings(failure_threshold=2), clock=FakeClock())
    opened(breaker, 1)
    breaker.record("ignored")
    assert breaker.snapshot()["consecutive_failures"] == 1
    opened(breaker, 1)
    assert breaker.state == "open"


def test_a_failed_probe_resets_the_probe_count_for_the_next_half_open() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker("p", BreakerSettings(failure_threshold=1, half_open_max=2),
                             clock=clock)
    opened(breaker, 1)
    clock.advance(30)
    assert breaker.allow() and breaker.allow()
    breaker.record("failure")  # the first probe fails: open again
    assert breaker.state == "open"
    breaker.record("failure")  # the second probe's late answer, while open
    clock.advance(30)
    assert breaker.allow() and breaker.allow()  # both probe slots are free again
    assert not breaker.allow()


def test_a_successful_probe_closes_and_resets_the_failures() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker("p", BreakerSettings(failure_threshold=2), clock=clock)
    opened(breaker, 2)
    clock.advance(30)
    assert breaker.allow()
    breaker.record("success")
    assert breaker.snapshot() == {
        "endpoint": "p", "state": "closed", "consecutive_failures": 0, "times_opened": 1
    }
    opened(breaker, 1)
    assert breaker.state == "closed"  # the count started again from zero


def test_times_opened_counts_each_opening() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker("p", BreakerSettings(failure_threshold=1), clock=clock)
    opened(breaker, 1)
    clock.advance(30)
    opened(breaker, 1)
    assert breaker.snapshot()["times_opened"] == 2


def test_breakers_share_settings_and_snapshot_in_name_order() -> None:
    breakers = Breakers(BreakerSettings(failure_threshold=1), clock=FakeClock())
    b = breakers.get("b")
    a = breakers.get("a")
    assert breakers.get("b") is b and a.name == "a"
    opened(b, 1)
    assert list(breakers.snapshot()) == ["a", "b"]
    assert breakers.snapshot()["b"]["state"] == "open"
    breakers.configure(BreakerSettings(failure_threshold=3))
    assert a.settings.failure_threshold == 3 and breakers.get("c").settings.failure_threshold == 3
    assert Breakers().settings == BreakerSettings()
