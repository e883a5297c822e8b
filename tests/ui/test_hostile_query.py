"""Hostile query parameters of the run list, over real HTTP to the app on 127.0.0.1: a
`limit` or `offset` that is no whole number, is negative, or is too big for the store's
integers gets a 400 that says so, never a 500."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloom.store import SqliteStore
from tests.ui.test_api import client_for

BAD = ["offset=99999999999999999999", f"offset={2**63}", "limit=100000000000000000000000",
       "offset=-5", "limit=-1", "offset=1.5", "offset=0x10", "offset=%2B5", "offset=1_0",
       "offset=%D9%A3", "offset=" + "9" * 5000]


@pytest.mark.parametrize("query", BAD)
async def test_a_bad_number_in_the_list_query_is_a_clear_400(tmp_path: Path,
                                                             query: str) -> None:
    async with SqliteStore(tmp_path / "runs.db") as store:
        await store.create_run("r1", "flow", "h", {})
        client = await client_for(store)
        try:
            r = await client.get(f"/api/runs?{query}")
            assert r.status == 400, (query, r.status, await r.text())
            name = query.split("=", 1)[0]
            assert (await r.json())["error"] == (
                f"{name} must be a whole number from 0 to 1000000000")
        finally:
            await client.close()


async def test_the_largest_offset_is_an_empty_page(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "runs.db") as store:
        await store.create_run("r1", "flow", "h", {})
        client = await client_for(store)
        try:
            page = await (await client.get("/api/runs?offset=1000000000&limit=1000")).json()
            assert (page["runs"], page["total"], page["limit"]) == ([], 1, 200)
        finally:
            await client.close()
