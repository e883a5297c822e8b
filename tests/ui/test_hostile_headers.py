"""Every answer of the UI carries its guards, over real HTTP to the app on 127.0.0.1: the
event stream too, whose headers go out before its handler returns."""

from __future__ import annotations

from pathlib import Path

from agentloom.store import SqliteStore
from agentloom.ui._security import CSP
from tests.ui.test_api import client_for

GUARDS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
          "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"}


async def test_the_event_stream_and_the_errors_carry_the_security_headers(
        tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "runs.db") as store:
        await store.create_run("<img src=x onerror=alert(1)>", "flow", "h", {})
        await store.set_status("<img src=x onerror=alert(1)>", "succeeded")
        client = await client_for(store)
        try:
            for path in ("/api/runs/%3Cimg%20src=x%20onerror=alert(1)%3E/events",
                         "/api/runs/ghost/events", "/api/runs", "/", "/nowhere"):
                r = await client.get(path)
                await r.read()
                got = {k: r.headers.get(k) for k in GUARDS}
                assert got == GUARDS, (path, r.status, got)
            refused = await client.get("/api/runs", headers={"Host": "evil.example"})
            assert refused.status == 403
            assert {k: refused.headers.get(k) for k in GUARDS} == GUARDS
            too_big = await client.post("/api/runs/x/decision", data="[" + " " * 70_000 + "]",
                                        headers={"X-AgentLoom-Request": "1",
                                                 "Content-Type": "application/json"})
            assert too_big.status == 413
            assert {k: too_big.headers.get(k) for k in GUARDS} == GUARDS
            stream = await client.get("/api/runs/%3Cimg%20src=x%20onerror=alert(1)%3E/events")
            assert stream.headers["Content-Type"].startswith("text/event-stream")
            assert stream.headers["Cache-Control"] == "no-store"
            await stream.read()
        finally:
            await client.close()


async def test_a_host_or_origin_no_url_could_hold_is_refused_not_a_500(tmp_path: Path) -> None:
    # `[::1` made urlsplit raise: a 500 and a traceback in the log, for every request.
    async with SqliteStore(tmp_path / "runs.db") as store:
        client = await client_for(store)
        try:
            bad_host = await client.get("/api/runs", headers={"Host": "[::1"})
            assert bad_host.status == 403
            assert "loopback host name" in (await bad_host.json())["error"]
            bad_origin = await client.post(
                "/api/runs/x/decision", data="{}",
                headers={"X-AgentLoom-Request": "1", "Content-Type": "application/json",
                         "Origin": "http://[x"})
            assert bad_origin.status == 403
            assert (await bad_origin.json()) == {"error": "a write from another origin is "
                                                          "refused"}
        finally:
            await client.close()
