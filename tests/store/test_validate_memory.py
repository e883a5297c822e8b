"""The conformance suite tests itself: it passes the in-memory store and catches broken ones."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from _store_factories import memory_storage

from agentloom.store import Checkpoint, CheckpointDelta, MemoryBackend, MemoryStore
from agentloom.testing.store_conformance import (
    OPTIONAL_CAPABILITIES,
    REQUIRED_CAPABILITIES,
    Capability,
    store_factory,
    validate,
)


async def test_memory_store_passes_everything() -> None:
    report = await validate(memory_storage)
    assert report.ok, report.render()
    assert report.detected == REQUIRED_CAPABILITIES | OPTIONAL_CAPABILITIES
    assert len(report.results) >= 20
    assert "checks passed" in report.render()


class _ForgetfulStore(MemoryStore):
    """Loses the seq: every save claims to be seq 1 (a broken backend)."""

    async def save_checkpoint(self, run_id: str, checkpoint: Checkpoint) -> int:
        await super().save_checkpoint(run_id, checkpoint)
        return 1


class _AppendlessStore(MemoryStore):
    """Drops what a loop turn appends: a delta backend that rewrites instead of adding."""

    async def save_delta(self, run_id: str, delta: CheckpointDelta) -> int:
        return await super().save_delta(run_id, replace(delta, loop_messages_kept={}))


class _NoClaims:
    """A store without the optional claim methods (delegates everything else)."""

    def __init__(self, inner: MemoryStore) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        if name in ("claim_run", "release_claim"):
            raise AttributeError(name)
        return getattr(self._inner, name)


async def test_a_broken_store_fails_with_a_named_check() -> None:
    @store_factory("forgetful")
    async def storage() -> AsyncIterator[Any]:
        backend = MemoryBackend()
        yield lambda now: _ForgetfulStore(backend, now=now)

    report = await validate(storage)
    assert not report.ok
    failed = {r.name for r in report.failed}
    assert "check_seq_is_monotonic" in failed
    assert all(r.capability in (Capability.PUT_GET, Capability.ATOMIC_WRITE,
                                Capability.RESUME_AFTER_CRASH, Capability.DELTAS)
               for r in report.failed)
    text = report.render()
    assert "FAIL put_get/check_seq_is_monotonic" in text and "put_get.py:" in text


async def test_optional_capability_is_detected_not_required() -> None:
    @store_factory("no-claims")
    async def storage() -> AsyncIterator[Any]:
        backend = MemoryBackend()
        yield lambda now: _NoClaims(MemoryStore(backend, now=now))

    report = await validate(storage)
    assert report.ok, report.render()
    assert Capability.CLAIM not in report.detected
    assert all(r.capability is not Capability.CLAIM for r in report.results)
    assert "optional capabilities not offered: claim" in report.render()


async def test_a_store_that_loses_appended_loop_messages_fails_the_delta_checks() -> None:
    @store_factory("appendless")
    async def storage() -> AsyncIterator[Any]:
        backend = MemoryBackend()
        yield lambda now: _AppendlessStore(backend, now=now)

    report = await validate(storage)
    assert not report.ok
    assert {(r.capability, r.name) for r in report.failed} == {
        (Capability.DELTAS, "check_loop_messages_append")}
    assert "FAIL deltas/check_loop_messages_append" in report.render()
