"""Running the suite: every check of every capability a store has, each on fresh storage.

`validate(factory)` returns a `CapabilityReport` (what passed, what failed and why);
`iter_checks()` and `run_check()` let a pytest module give each check its own test id.
"""

from __future__ import annotations

import contextlib
import time
import traceback
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from agentloom.testing.store_conformance import (
    atomic_write,
    claim,
    deltas,
    list_runs,
    pending_tool_calls,
    prune,
    put_get,
    query_runs,
    queued_exchanges,
    resume_after_crash,
    writes,
)
from agentloom.testing.store_conformance._capabilities import (
    OPTIONAL_CAPABILITIES,
    REQUIRED_CAPABILITIES,
    Capability,
    detect_capabilities,
)
from agentloom.testing.store_conformance._initializer import CheckContext, CheckFn, StoreFactory

CHECKS: dict[Capability, list[CheckFn]] = {
    Capability.PUT_GET: put_get.CHECKS,
    Capability.LIST: list_runs.CHECKS,
    Capability.PENDING_TOOL_CALLS: pending_tool_calls.CHECKS,
    Capability.ATOMIC_WRITE: atomic_write.CHECKS,
    Capability.RESUME_AFTER_CRASH: resume_after_crash.CHECKS,
    Capability.PRUNE: prune.CHECKS,
    Capability.CLAIM: claim.CHECKS,
    Capability.DELTAS: deltas.CHECKS,
    Capability.QUERY: query_runs.CHECKS,
    Capability.WRITES: writes.CHECKS,
    Capability.QUEUED_EXCHANGES: queued_exchanges.CHECKS,
}


class CapabilityMissing(Exception):
    """The store lacks an optional capability that a check needs (a skip, not a failure)."""


@dataclass(slots=True, frozen=True)
class CheckResult:
    capability: Capability
    name: str
    passed: bool
    seconds: float
    error: str | None = None


@dataclass(slots=True)
class CapabilityReport:
    store: str
    detected: frozenset[Capability]
    results: list[CheckResult] = field(default_factory=list)

    @property
    def failed(self) -> list[CheckResult]:
        return [r for r in self.results if not r.passed]

    @property
    def ok(self) -> bool:
        return not self.failed and self.detected >= REQUIRED_CAPABILITIES

    def render(self) -> str:
        lines = [f"store conformance: {self.store}: "
                 f"{len(self.results) - len(self.failed)}/{len(self.results)} checks passed"]
        missing = sorted(c.value for c in OPTIONAL_CAPABILITIES - self.detected)
        if missing:
            lines.append(f"  optional capabilities not offered: {', '.join(missing)}")
        for r in self.failed:
            lines.append(f"  FAIL {r.capability.value}/{r.name}: {r.error}")
        return "\n".join(lines)


def iter_checks(capabilities: frozenset[Capability] | None = None
                ) -> list[tuple[Capability, CheckFn]]:
    caps = capabilities if capabilities is not None else frozenset(Capability)
    return [(cap, fn) for cap in Capability if cap in caps for fn in CHECKS[cap]]


def check_id(cap: Capability, fn: CheckFn) -> str:
    return f"{cap.value}/{fn.__name__.removeprefix('check_')}"


@contextlib.asynccontextmanager
async def _lifespan(factory: StoreFactory) -> AsyncIterator[None]:
    if factory.lifespan is None:
        yield
    else:
        async with factory.lifespan():
            yield


async def run_check(factory: StoreFactory, cap: Capability, fn: CheckFn) -> None:
    """Run one check on fresh storage. Raises `CapabilityMissing` if the store lacks an
    optional capability, else whatever the check raises."""
    async with factory.storage() as opener:
        ctx = CheckContext(opener=opener)
        try:
            probe = await ctx.open()
            if cap not in detect_capabilities(probe):
                raise CapabilityMissing(f"{factory.name} does not offer {cap.value}")
            await fn(ctx)
        finally:
            await ctx.close_all()


async def validate(factory: StoreFactory,
                   capabilities: frozenset[Capability] | None = None) -> CapabilityReport:
    async with _lifespan(factory):
        async with factory.storage() as opener:
            ctx = CheckContext(opener=opener)
            detected = detect_capabilities(await ctx.open())
            await ctx.close_all()
        wanted = detected if capabilities is None else detected & capabilities
        report = CapabilityReport(store=factory.name, detected=detected)
        for cap, fn in iter_checks(wanted):
            start = time.perf_counter()
            try:
                await run_check(factory, cap, fn)
            except Exception as exc:
                last = traceback.extract_tb(exc.__traceback__)[-1]
                where = f"{last.filename.rsplit('/', 1)[-1]}:{last.lineno}"
                report.results.append(CheckResult(
                    cap, fn.__name__, False, time.perf_counter() - start,
                    f"{type(exc).__name__}: {exc} ({where})"))
            else:
                report.results.append(
                    CheckResult(cap, fn.__name__, True, time.perf_counter() - start))
        return report
