"""The one RetryPolicy as a whole-operation retry (what the workflow engine's step
retries use): `should_retry` by attributes, `delay` by backoff and Retry-After."""

from __future__ import annotations

from agentloom.errors import ConfigError, DeadlineExceeded, ProviderError
from agentloom.routing import RetryPolicy

POLICY = RetryPolicy(max_retries=2, backoff_base=1.0, backoff_multiplier=2.0, jitter=0.0)


def _status(code: int, **kw: object) -> ProviderError:
    return ProviderError("x", provider="p", status=code, phase="status", **kw)  # type: ignore[arg-type]


def test_should_retry_reads_status_and_retryable_and_counts_attempts() -> None:
    assert POLICY.should_retry(_status(503), attempt=1)
    assert POLICY.should_retry(_status(429), attempt=2)
    assert not POLICY.should_retry(_status(503), attempt=3)  # past max_retries
    assert not POLICY.should_retry(_status(400), attempt=1)
    assert POLICY.should_retry(DeadlineExceeded(scope="step"), attempt=1)
    assert not POLICY.should_retry(DeadlineExceeded(scope="run"), attempt=1)
    assert not POLICY.should_retry(ConfigError("bad"), attempt=1)
    assert not POLICY.should_retry(RuntimeError("no attribute"), attempt=1)


def test_delay_is_the_backoff_unless_the_server_asks_for_longer() -> None:
    assert [POLICY.delay(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 8.0]
    assert POLICY.delay(1, _status(503, retry_after=5.0)) == 5.0
    assert POLICY.delay(3, _status(503, retry_after=0.5)) == 4.0  # backoff is longer


def test_delay_bounds_a_retry_after_by_max_retry_after() -> None:
    policy = RetryPolicy(jitter=0.0, max_retry_after=60.0)
    assert policy.delay(1, _status(429, retry_after=1e9)) == 60.0


def test_delay_reads_an_http_date_against_the_injected_wall_clock() -> None:
    err = _status(429, headers={"retry-after": "Thu, 01 Jan 2026 00:00:12 GMT"},
                  retry_after=999.0)
    assert POLICY.delay(1, err, now_wall=1_767_225_600.0) == 12.0
