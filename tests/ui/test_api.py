"""The JSON API and its guards, in process over a real SQLite store: filters and pages,
the run view, the event stream, decisions refused when they can't be taken, tokens,
host names, cross-site writes, and the second redaction pass."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from agentloom.redact import Redactor
from agentloom.store import Checkpoint, PauseInfo, SqliteStore
from agentloom.ui import UiSettings, create_app

WRITE = {"X-AgentLoom-Request": "1"}


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    s = SqliteStore(tmp_path / "runs.db")
    async with s:
        yield s


async def client_for(store: SqliteStore, **kw: Any) -> TestClient[Any, Any]:
    settings = UiSettings(store=store, store_url=str(store.path), poll_seconds=0.01, **kw)
    client: TestClient[Any, Any] = TestClient(TestServer(create_app(settings), host="127.0.0.1"))
    await client.start_server()
    return client


async def paused_run(store: SqliteStore, run_id: str = "p1") -> None:
    await store.create_run(run_id, "gate", "h", {"topic": "tea"})
    await store.save_checkpoint(run_id, Checkpoint(
        state={"topic": "tea"}, status="paused",
        step_results={"draft": {"id": "draft", "type": "llm_call", "status": "success",
                                "attempts": 1, "started_at": 10.0, "duration_seconds": 0.5,
                                "usage": {"input_tokens": 3, "output_tokens": 4}}},
        paused=PauseInfo(step_id="approve", waiting_for="approval", prompt="ship?")))


async def test_the_list_filters_pages_and_counts(store: SqliteStore) -> None:
    for i in range(12):
        await store.create_run(f"run-{i:02d}", "alpha" if i % 3 else "beta", "h", {},
                               meta={"batch_id": "b7"} if i < 4 else {})
    await store.save_checkpoint("run-05", Checkpoint(state={}, status="succeeded",
                                                     cost_usd=Decimal("0.5")))
    client = await client_for(store)
    try:
        page = await (await client.get("/api/runs?limit=5")).json()
        assert page["total"] == 12 and len(page["runs"]) == 5
        assert page["runs"][0]["run_id"] == "run-05" and page["runs"][0]["cost_usd"] == "0.5"
        rest = await (await client.get("/api/runs?limit=5&offset=10")).json()
        assert len(rest["runs"]) == 2
        beta = await (await client.get("/api/runs?workflow=beta")).json()
        assert {r["run_id"] for r in beta["runs"]} == {"run-00", "run-03", "run-06", "run-09"}
        batch = await (await client.get("/api/runs?batch=b7&q=0")).json()
        assert {r["run_id"] for r in batch["runs"]} == {"run-00", "run-01", "run-02", "run-03"}
        assert batch["runs"][0]["batch_id"] == "b7"
        done = await (await client.get("/api/runs?status=succeeded")).json()
        assert [r["run_id"] for r in done["runs"]] == ["run-05"]
        bad = await client.get("/api/runs?status=nope")
        assert bad.status == 400 and "status must be one of" in (await bad.json())["error"]
        assert (await client.get("/api/runs?limit=x")).status == 400
    finally:
        await client.close()


async def test_a_run_view_and_its_event_stream(store: SqliteStore) -> None:
    await paused_run(store)
    await store.create_run("done", "gate", "h", {})
    await store.set_status("done", "succeeded")
    client = await client_for(store)
    try:
        detail = await (await client.get("/api/runs/p1")).json()
        assert detail["paused"]["prompt"] == "ship?" and detail["summary"]["tokens"] == 7
        [draft] = detail["steps"]
        assert draft["id"] == "draft" and draft["attempts"] == 1
        assert detail["timeline"]["bars"][0]["lane"] == 0
        missing = await client.get("/api/runs/ghost")
        assert missing.status == 404 and "ghost" in (await missing.json())["error"]
        events = await client.get("/api/runs/done/events")
        assert events.headers["Content-Type"].startswith("text/event-stream")
        text = await events.text()  # a finished run: its facts, then the end
        assert text.startswith("event: run\ndata: {") and "event: end" in text
    finally:
        await client.close()


async def test_a_lease_past_any_claim_holds_no_decision_back(store: SqliteStore) -> None:
    # A lease another host wrote to end in year 9999 holds nothing, as for a claim: the
    # decision goes on to a resume child (whose own refusal is the answer: this run has
    # no file), not "held by another process".
    await paused_run(store)
    far = SqliteStore(store.path, now=lambda: datetime(9999, 11, 1, tzinfo=UTC))
    async with far:
        assert await far.claim_run("p1", "other-host:1:abc", 30 * 86400)
    client = await client_for(store)
    try:
        r = await client.post("/api/runs/p1/decision", json={"action": "approve"},
                              headers=WRITE)
        error = (await r.json()).get("error", "")
        assert r.status == 409 and "the workflow file of run p1 is gone" in error, error
    finally:
        await client.close()


async def test_decisions_that_cannot_be_taken_are_refused(store: SqliteStore) -> None:
    await paused_run(store)
    await store.create_run("done", "gate", "h", {})
    await store.set_status("done", "succeeded")
    client = await client_for(store)
    try:
        async def post(run_id: str, body: Any) -> tuple[int, str]:
            r = await client.post(f"/api/runs/{run_id}/decision", json=body, headers=WRITE)
            return r.status, (await r.json()).get("error", "")

        assert await post("done", {"action": "approve"}) == (
            409, "run done already finished (succeeded)")
        assert (await post("ghost", {"action": "approve"}))[0] == 404
        assert (await post("p1", {"action": "maybe"}))[0] == 400
        status, error = await post("p1", {"action": "answer", "answer": "x"})
        assert status == 400 and "waits for approval" in error
        # Another process holds the run (an `agentloom resume` in a terminal): refused.
        assert await store.claim_run("p1", "other-host:1:abc", 60)
        status, error = await post("p1", {"action": "approve"})
        assert status == 409 and "held by another process (other-host:1:abc)" in error
        # A claim of a process of this host that is gone holds nothing: the decision goes
        # to a resume child, whose own refusal is the answer (this run has no file).
        await store.release_claim("p1", "other-host:1:abc")
        gone = subprocess.Popen([sys.executable, "-c", "pass"])
        gone.wait()
        assert await store.claim_run("p1", f"{socket.gethostname()}:{gone.pid}:dead", 60)
        status, error = await post("p1", {"action": "approve"})
        assert status == 409 and "the workflow file of run p1 is gone" in error, error
        # Retry is for a failed run only; a failed one goes to `resume --retry-failed`.
        status, error = await post("done", {"action": "retry"})
        assert (status, error) == (409, "run done has not failed (succeeded); only a "
                                        "failed run's steps, or those of a run stopped "
                                        "at its budget, can be retried")
        await store.create_run("broke", "gate", "h", {})
        await store.set_status("broke", "failed")
        status, error = await post("broke", {"action": "retry"})
        assert status == 409 and "the workflow file of run broke is gone" in error, error
        # A run stopped at its cap goes on under a higher one, which the body must give.
        await store.create_run("capped", "gate", "h", {})
        await store.set_status("capped", "budget_exceeded")
        status, error = await post("capped", {"action": "retry"})
        assert status == 400 and "give the higher cap it goes on under" in error, error
        for bad in ({"budget": "-1"}, {"budget": True}, {"budget": "lots"},
                    {"max_tokens_per_run": "1.5"}, {"max_tokens_per_run": 0}):
            status, error = await post("capped", {"action": "retry", **bad})
            assert status == 400 and "must be" in error, (bad, error)
        status, error = await post("capped", {"action": "retry", "budget": "0.5"})
        assert status == 409 and "the workflow file of run capped is gone" in error, error
        assert (await post("p1", {"action": "maybe"}))[1] == (
            "'action' must be approve, reject, answer or retry")
    finally:
        await client.close()


async def test_a_decision_body_too_deep_to_parse_is_not_json(store: SqliteStore) -> None:
    await paused_run(store)
    client = await client_for(store)
    try:
        r = await client.post("/api/runs/p1/decision", data="[" * 60_000,
                              headers={**WRITE, "Content-Type": "application/json"})
        assert (r.status, await r.json()) == (400, {"error": "the body is not JSON"})
    finally:
        await client.close()


async def test_cross_site_writes_are_refused(store: SqliteStore) -> None:
    await paused_run(store)
    client = await client_for(store)
    try:
        url = "/api/runs/p1/decision"
        no_header = await client.post(url, json={"action": "approve"})
        assert no_header.status == 403
        form = await client.post(url, data="action=approve", headers={
            **WRITE, "Content-Type": "application/x-www-form-urlencoded"})
        assert form.status == 415
        foreign = await client.post(url, json={"action": "approve"}, headers={
            **WRITE, "Origin": "http://evil.example"})
        assert foreign.status == 403
        site = await client.post(url, json={"action": "approve"}, headers={
            **WRITE, "Sec-Fetch-Site": "cross-site"})
        assert site.status == 403
        assert (await client.options(url)).status == 405
    finally:
        await client.close()


async def test_loopback_answers_only_to_loopback_names(store: SqliteStore) -> None:
    client = await client_for(store)
    try:
        rebound = await client.get("/api/runs", headers={"Host": "evil.example:8765"})
        assert rebound.status == 403
        ok = await client.get("/api/runs", headers={"Host": "localhost:8765"})
        assert ok.status == 200
        assert (await client.get("/api/runs", headers={"Host": "127.0.0.2:8765"})).status == 403
        page = await client.get("/")
        assert "script-src 'self'" in page.headers["Content-Security-Policy"]
        assert page.headers["X-Content-Type-Options"] == "nosniff"
        assert (await client.get("/static/run.js")).status == 200
        assert (await client.get("/static/..%2Fapp.py")).status == 404
    finally:
        await client.close()


async def test_a_loopback_bind_answers_to_its_own_address_too(store: SqliteStore) -> None:
    client = await client_for(store, host_names=("127.0.0.2",))
    try:
        assert (await client.get("/api/runs", headers={"Host": "127.0.0.2:8765"})).status == 200
        assert (await client.get("/api/runs", headers={"Host": "evil.example"})).status == 403
    finally:
        await client.close()


async def test_a_token_guards_every_request(store: SqliteStore) -> None:
    token = "t0ken-that-is-long-enough"
    client = await client_for(store, token=token, loopback_only=False)
    try:
        assert (await client.get("/api/runs")).status == 401
        assert (await client.get("/")).status == 401
        assert (await client.get("/static/app.css")).status == 401
        bearer = await client.get("/api/runs", headers={"Authorization": f"Bearer {token}"})
        assert bearer.status == 200
        assert (await client.get("/api/runs", headers={"Authorization": "Bearer no"})).status \
            == 401
        first = await client.get(f"/?token={token}", allow_redirects=False)
        assert first.status == 302 and first.headers["Location"] == "/"
        assert "HttpOnly" in first.headers["Set-Cookie"]
        assert "SameSite=Strict" in first.headers["Set-Cookie"]
        assert (await client.get("/api/runs")).status == 200  # the cookie now
    finally:
        await client.close()


async def test_secrets_the_ui_knows_never_leave_it(store: SqliteStore) -> None:
    key = "sk-live-abcdefghijklmnop1234"
    await store.create_run("leaky", "flow", "h", {"note": f"the key is {key}"})
    redact = Redactor(secrets=[key]).redact_text
    client = await client_for(store, redact=redact)
    try:
        text = await (await client.get("/api/runs/leaky")).text()
        assert key not in text and "the key is" in text
    finally:
        await client.close()


async def test_the_callback_server_routes_of_the_public_agentloom(store: SqliteStore) -> None:
    import os

    from tests.ui.harness import ROOT

    await paused_run(store)
    token = "t0ken-that-is-long-enough"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    client = await client_for(store, token=token, loopback_only=False, env=env)
    auth = {"Authorization": f"Bearer {token}"}
    try:
        pending = await (await client.get("/pending", headers=auth)).json()
        assert pending["pending"] == [{
            "run_id": "p1", "workflow": "gate", "status": "paused",
            "paused_at": pending["pending"][0]["paused_at"], "step_id": "approve",
            "waiting_for": "approval", "prompt": "ship?"}]
        assert (await client.post("/approve/p1")).status == 401
        # With the bearer token a bare POST is enough; the resume it starts (the real
        # `agentloom resume` in a child process) refuses: this run's file is gone.
        refused = await client.post("/approve/p1", headers=auth)
        assert refused.status == 409
        assert "the workflow file of run p1 is gone" in (await refused.json())["error"]
    finally:
        await client.close()


async def test_the_graph_comes_from_the_runs_file_and_says_when_it_changed(
        store: SqliteStore, tmp_path: Path) -> None:
    from agentloom.workflow.durable.run import workflow_hash

    flow = tmp_path / "flow.yaml"
    flow.write_text("name: f\nsteps:\n  - {id: a, type: llm_call, prompt: p}\n"
                    "  - {id: b, type: llm_call, prompt: q, depends_on: [a]}\n")
    same = workflow_hash(flow.read_bytes())
    await store.create_run("same", "f", same, {}, meta={"workflow_path": str(flow)})
    await store.create_run("older", "f", "sha256:other", {}, meta={"workflow_path": str(flow)})
    await store.create_run("gone", "f", same, {}, meta={"workflow_path": str(tmp_path / "x")})
    client = await client_for(store)
    try:
        graphs = {run_id: (await (await client.get(f"/api/runs/{run_id}")).json())["graph"]
                  for run_id in ("same", "older", "gone")}
        assert [n["id"] for n in graphs["same"]["nodes"]] == ["a", "b"]
        assert graphs["same"]["nodes"][1]["depends_on"] == ["a"]
        assert graphs["same"]["file_changed"] is False and graphs["older"]["file_changed"]
        assert graphs["gone"]["known"] is False and graphs["gone"]["nodes"] == []
    finally:
        await client.close()


async def test_a_step_in_progress_is_a_running_bar(store: SqliteStore, tmp_path: Path) -> None:
    flow = tmp_path / "flow.yaml"
    flow.write_text("name: f\nsteps:\n  - {id: a, type: llm_call, prompt: p}\n"
                    "  - {id: b, type: llm_call, prompt: q, depends_on: [a]}\n"
                    "  - {id: c, type: llm_call, prompt: r, depends_on: [b]}\n")
    await store.create_run("live", "f", "h", {}, meta={"workflow_path": str(flow)})
    await store.save_checkpoint("live", Checkpoint(state={}, status="running", step_results={
        "a": {"id": "a", "status": "success", "started_at": 1.0, "duration_seconds": 0.2}}))
    client = await client_for(store)
    try:
        detail = await (await client.get("/api/runs/live")).json()
        status = {s["id"]: s["status"] for s in detail["steps"]}
        assert status == {"a": "success", "b": "running", "c": "pending"}
        bars = {b["id"]: b for b in detail["timeline"]["bars"]}
        assert set(bars) == {"a", "b"} and bars["b"]["status"] == "running"
        assert bars["b"]["start"] == pytest.approx(0.2) and bars["b"]["end"] >= 0.2
    finally:
        await client.close()
