"""query: `find_runs` pages through the runs a filter matches, newest first, with a total."""

from __future__ import annotations

from agentloom.store import RunQuery
from agentloom.testing.store_conformance._initializer import CheckContext, CheckFn


async def check_pages_newest_first_with_total(ctx: CheckContext) -> None:
    store = await ctx.open()
    for i in range(7):
        await store.create_run(f"run-{i}", "flow", "h", {})
    first = await store.find_runs(limit=3)
    second = await store.find_runs(limit=3, offset=3)
    last = await store.find_runs(limit=3, offset=6)
    assert first.total == second.total == last.total == 7
    ids = [r.run_id for page in (first, second, last) for r in page.runs]
    assert ids == [f"run-{i}" for i in range(6, -1, -1)], ids
    assert (await store.find_runs(limit=3, offset=9)).runs == []


async def check_filters_combine(ctx: CheckContext) -> None:
    store = await ctx.open()
    await store.create_run("a_1", "alpha", "h", {}, meta={"batch_id": "b1"})
    await store.create_run("a%2", "alpha", "h", {}, meta={"batch_id": "b2"})
    await store.create_run("bx3", "beta", "h", {}, meta={"batch_id": "b1"})
    await store.create_run("ab4", "alpha", "h", {})
    await store.set_status("bx3", "paused")

    async def ids(**kw: str) -> set[str]:
        page = await store.find_runs(RunQuery(**kw), limit=100)
        assert page.total == len(page.runs)
        return {r.run_id for r in page.runs}

    assert await ids(workflow="alpha") == {"a_1", "a%2", "ab4"}
    assert await ids(status="paused") == {"bx3"}
    assert await ids(batch_id="b1") == {"a_1", "bx3"}
    assert await ids(batch_id="b1", workflow="alpha") == {"a_1"}
    assert await ids(run_id_contains="b") == {"bx3", "ab4"}
    assert await ids(run_id_contains="_") == {"a_1"}, "_ is literal, not a wildcard"
    assert await ids(run_id_contains="%") == {"a%2"}, "% is literal, not a wildcard"
    assert await ids(workflow="gamma") == set()


CHECKS: list[CheckFn] = [check_pages_newest_first_with_total, check_filters_combine]
