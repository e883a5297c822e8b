"""The aiohttp application: two pages, their static files, and the JSON API behind them.

    GET  /                          the run list (HTML)
    GET  /runs/{id}                 a run (HTML)
    GET  /api/runs                  ?status= &workflow= &q= (a piece of the id) &batch=
                                    &limit= (≤ 200) &offset=
    GET  /api/runs/{id}             the run page's facts (`_view.run_detail`)
    GET  /api/runs/{id}/steps/{step}
                                    a step's details, loaded when it is opened: output,
                                    exchanges, tool calls, the state after it
    GET  /api/runs/{id}/events      server-sent events: `run` (the facts, on each change)
                                    and `end` once the run has finished; at most
                                    `max_event_streams` open at once (503 past it), each
                                    for at most `stream_seconds` (the browser reconnects)
    POST /api/runs/{id}/decision    {"action": "approve"|"reject"} or
                                    {"action": "answer", "answer": ...}
    GET  /pending, POST /approve/{id}, POST /reject/{id}
                                    the public AgentLoom's `callback-server` routes

Pages are static files that fetch the API and build the DOM with `textContent`, never
`innerHTML`: model output is untrusted text and is never parsed as markup.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from aiohttp import web

from agentloom import _jsontext
from agentloom.store import FINISHED_STATUSES, RUN_STATUSES, CheckpointStore, RunQuery
from agentloom.ui._decide import DecisionRefused, Resumer
from agentloom.ui._history import HistoryCache
from agentloom.ui._load import FactsCache, GraphCache, load_detail, load_page, load_step
from agentloom.ui._security import harden, security_middlewares
from agentloom.ui._view import scrub_text

_STATIC_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html",
                 ".svg": "image/svg+xml"}


@dataclass(slots=True)
class UiSettings:
    store: CheckpointStore
    store_url: str
    """How a resume child names the same store (`--store`)."""
    token: str | None = None
    loopback_only: bool = True
    env: Mapping[str, str] = field(default_factory=dict)
    """The environment resumes run with (provider keys and URLs)."""
    redact: Callable[[str], str] | None = None
    """A last redaction pass over everything sent (the secrets this process knows)."""
    poll_seconds: float = 0.5
    """How often the event stream looks at the store for a change."""
    max_event_streams: int = 32
    """How many event streams may be open at once; one more is a 503. Every stream reads
    the store each poll for as long as its run goes on (a paused run's for ever), and any
    page on any site can open them (EventSource to 127.0.0.1 needs no permission). 32 is
    far more than a person's run pages need (a browser opens at most 6 connections to one
    host over HTTP/1.1, across all its tabs) and holds the store's reads to 64 a second at
    the default poll."""
    stream_seconds: float = 300.0
    """How long one event stream lasts (counted in polls) before it ends without `end`:
    the browser's EventSource reconnects by itself and gets the run as it is then, so a
    client that keeps a stream open holds its place for 5 minutes, not for ever."""
    request_seconds: float = 15.0
    """How long a connection may take to send a whole request head, from its opening or
    its last answer (aiohttp's `keepalive_timeout`, whose timer runs from the connection's
    start and closes it while no whole request has come), and a decision its body (408).
    Without it a client trickling its headers held its connection for an hour."""
    host_names: tuple[str, ...] = ()
    """Host names a loopback-only UI answers to besides localhost, 127.0.0.1 and ::1."""
    public_url: str | None = None
    """Where people reach this UI (set once it listens). A run it resumes links its next
    gate's notification here when the run itself was started without AGENTLOOM_UI_URL."""


MAX_BODY_BYTES = 64 * 1024
"""A request body's bound: a decision is a few words."""


@dataclass(slots=True)
class EventStreams:
    """How many event streams this app has open."""

    open: int = 0


STORE_KEY = web.AppKey("settings", UiSettings)
RESUMER_KEY = web.AppKey("resumer", Resumer)
GRAPHS_KEY = web.AppKey("graphs", GraphCache)
FACTS_KEY = web.AppKey("facts", FactsCache)
HISTORY_KEY = web.AppKey("history", HistoryCache)
STREAMS_KEY = web.AppKey("streams", EventStreams)


def create_app(settings: UiSettings) -> web.Application:
    app = web.Application(middlewares=security_middlewares(  # type: ignore[arg-type]
        token=settings.token, loopback_only=settings.loopback_only,
        host_names=settings.host_names),
        client_max_size=MAX_BODY_BYTES,
        # Whoever serves the app (`agentloom ui`, a test server) makes its connections
        # with these: a connection is closed once it has gone `request_seconds` with no
        # whole request head (a slow-loris trickling headers), from its start or its last
        # answer; a request being answered (an event stream) is not cut. After an answer
        # to a request whose body did not all come (a 408), the rest is waited for (and
        # dropped) for no longer than that either: aiohttp's own 10 s, or less.
        handler_args={"keepalive_timeout": settings.request_seconds,
                      "lingering_time": min(settings.request_seconds, 10.0)})
    app.on_response_prepare.append(harden)
    app[STORE_KEY] = settings
    app[RESUMER_KEY] = Resumer(settings.store, settings.store_url, settings.env)
    app[GRAPHS_KEY] = GraphCache()
    app[FACTS_KEY] = FactsCache()
    app[HISTORY_KEY] = HistoryCache()
    app[STREAMS_KEY] = EventStreams()
    app.router.add_get("/", _page("index.html"))
    app.router.add_get("/runs/{run_id}", _page("run.html"))
    app.router.add_get("/static/{name}", _static)
    app.router.add_get("/api/runs", _api_runs)
    app.router.add_get("/api/runs/{run_id}", _api_run)
    app.router.add_get("/api/runs/{run_id}/events", _api_events)
    app.router.add_get("/api/runs/{run_id}/steps/{step_id:.+}", _api_step)
    app.router.add_post("/api/runs/{run_id}/decision", _api_decision)
    app.router.add_get("/pending", _pending)
    app.router.add_post("/approve/{run_id}", _callback("approve"))
    app.router.add_post("/reject/{run_id}", _callback("reject"))
    return app


async def serve(app: web.Application, host: str, port: int) -> web.AppRunner:
    """Serve `app` on host:port as `agentloom ui` does, until the runner's `cleanup`. The
    handlers of requests whose client went away are not cancelled (aiohttp's default,
    unlike its test server's): an event stream sees its client gone itself. Raises
    OSError when it can't listen."""
    # Open event streams (a run page left open) end at once on Ctrl-C.
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner


def _asset(name: str) -> bytes | None:
    if "/" in name or "\\" in name or name.startswith("."):
        return None
    node = resources.files("agentloom.ui").joinpath("static", name)
    return node.read_bytes() if node.is_file() else None


def _page(name: str) -> Any:
    async def handler(request: web.Request) -> web.Response:
        body = await asyncio.to_thread(_asset, name)
        assert body is not None, f"agentloom.ui is missing its page {name}"
        return web.Response(body=body, content_type="text/html", charset="utf-8")
    return handler


async def _static(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    suffix = name[name.rfind("."):] if "." in name else ""
    body = await asyncio.to_thread(_asset, name) if suffix in _STATIC_TYPES else None
    if body is None:
        raise web.HTTPNotFound()
    return web.Response(body=body, content_type=_STATIC_TYPES[suffix], charset="utf-8")


def _json(request: web.Request, data: Any, status: int = 200) -> web.Response:
    text = scrub_text(_dumps(data), request.app[STORE_KEY].redact)
    return web.Response(text=text, status=status, content_type="application/json")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


MAX_QUERY_NUMBER = 10**9
"""The largest `limit` or `offset` taken: a bigger one is no page of any store (and
overflows a store's integers: SQLite's are 64-bit)."""


def _int(request: web.Request, name: str, default: int) -> int:
    """A whole number from 0 to MAX_QUERY_NUMBER, in plain digits (not `-5`, `+5`, `1_0`,
    `1e3` or digits of other scripts, which `int` would take); else a 400 saying so."""
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 10
            and int(raw) <= MAX_QUERY_NUMBER):
        raise web.HTTPBadRequest(text=json.dumps(
            {"error": f"{name} must be a whole number from 0 to {MAX_QUERY_NUMBER}"}),
            content_type="application/json")
    return int(raw)


async def _api_runs(request: web.Request) -> web.Response:
    q = request.query
    status = q.get("status") or None
    if status is not None and status not in RUN_STATUSES:
        return _json(request, {"error": f"status must be one of {sorted(RUN_STATUSES)}"}, 400)
    query = RunQuery(status=status, workflow=q.get("workflow") or None,
                     run_id_contains=q.get("q") or None, batch_id=q.get("batch") or None)
    page = await load_page(request.app[STORE_KEY].store, query,
                           limit=_int(request, "limit", 50), offset=_int(request, "offset", 0),
                           cache=request.app[FACTS_KEY])
    return _json(request, page)


async def _detail(request: web.Request) -> dict[str, Any]:
    run_id = request.match_info["run_id"]
    detail = await load_detail(request.app[STORE_KEY].store, run_id, request.app[GRAPHS_KEY],
                               request.app[HISTORY_KEY])
    if detail is None:
        raise web.HTTPNotFound(text=json.dumps({"error": f"no run {run_id!r} in the store"}),
                               content_type="application/json")
    return detail


async def _api_run(request: web.Request) -> web.Response:
    return _json(request, await _detail(request))


async def _api_step(request: web.Request) -> web.Response:
    run_id, step_id = request.match_info["run_id"], request.match_info["step_id"]
    step = await load_step(request.app[STORE_KEY].store, run_id, step_id,
                           request.app[HISTORY_KEY])
    if step is None:
        return _json(request, {"error": f"no step {step_id!r} of run {run_id!r} in the "
                                        "store"}, 404)
    return _json(request, step)


async def _api_events(request: web.Request) -> web.StreamResponse:
    """The run's facts now and on every change the store shows (a checkpoint, a status,
    a claim), whoever writes it: this process, another one, a Ray worker. At most
    `max_event_streams` at once, each for at most `stream_seconds`."""
    settings = request.app[STORE_KEY]
    streams = request.app[STREAMS_KEY]
    if streams.open >= settings.max_event_streams:  # checked and taken with no await between
        busy = _json(request, {"error": f"too many open event streams "
                                        f"({settings.max_event_streams}): close a run "
                                        "page, or try again later"}, 503)
        busy.headers["Retry-After"] = "5"
        return busy
    streams.open += 1
    try:
        first = await _detail(request)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                               "Cache-Control": "no-store"})
        await response.prepare(request)
        try:
            async for event, data in _changes(request, first, settings):
                payload = scrub_text(_dumps(data), settings.redact)
                await response.write(f"event: {event}\ndata: {payload}\n\n".encode())
        except ConnectionResetError:
            pass  # the page went away
        return response
    finally:
        streams.open -= 1


def _gone(request: web.Request) -> bool:
    """Whether the client closed the connection: aiohttp goes on running the handler of a
    request whose client left, which for a stream would go on reading the store (and
    holding its place) until its next write failed."""
    transport = request.transport
    return transport is None or transport.is_closing()


async def _changes(request: web.Request, first: dict[str, Any], settings: UiSettings
                   ) -> AsyncIterator[tuple[str, Any]]:
    run_id = request.match_info["run_id"]
    yield "run", first
    seen = _mark(first)
    status = first["run"]["status"]
    idle = lived = 0.0
    while status not in FINISHED_STATUSES:
        if lived >= settings.stream_seconds:
            return  # no `end`: the browser reconnects, and its first event is the run now
        await asyncio.sleep(settings.poll_seconds)
        idle += settings.poll_seconds
        lived += settings.poll_seconds
        if _gone(request):
            return
        record = await settings.store.get_run(run_id)
        if record is None:
            yield "end", {"reason": "the run is gone from the store"}
            return
        if (record.latest_seq, record.status, record.claimed_by) != seen:
            detail = await load_detail(settings.store, run_id, request.app[GRAPHS_KEY],
                                       request.app[HISTORY_KEY])
            if detail is None:
                return
            seen, status, idle = _mark(detail), detail["run"]["status"], 0.0
            yield "run", detail
        elif idle >= 15:  # a comment-free keepalive that proxies pass on
            idle = 0.0
            yield "ping", {}
    yield "end", {"status": status}


def _mark(detail: dict[str, Any]) -> tuple[Any, ...]:
    run = detail["run"]
    return (detail["seq"], run["status"], run["claimed_by"])


async def _api_decision(request: web.Request) -> web.Response:
    seconds = request.app[STORE_KEY].request_seconds
    try:
        async with asyncio.timeout(seconds):
            body = await request.json(loads=_jsontext.loads)
    except TimeoutError:  # a body trickled in: aiohttp bounds its size, not its time
        slow = _json(request, {"error": f"the body did not come within {seconds:g} "
                                        "seconds"}, 408)
        slow.force_close()
        return slow
    except web.HTTPRequestEntityTooLarge:
        return _json(request, {"error": f"the body is over {MAX_BODY_BYTES} bytes"}, 413)
    except (ValueError, UnicodeDecodeError):
        return _json(request, {"error": "the body is not JSON"}, 400)
    return await _decide(request, body)


def _callback(action: str) -> Any:
    async def handler(request: web.Request) -> web.Response:
        return await _decide(request, {"action": action})
    return handler


async def _pending(request: web.Request) -> web.Response:
    """The runs waiting for a person, as the `callback-server` lists them."""
    store = request.app[STORE_KEY].store
    out = []
    for status in ("paused", "needs_decision"):
        page = await load_page(store, RunQuery(status=status), limit=200, offset=0,
                               cache=request.app[FACTS_KEY])
        for row in page["runs"]:
            cp = await store.load_latest(row["run_id"])
            paused = cp.paused if cp is not None else None
            out.append({"run_id": row["run_id"], "workflow": row["workflow"],
                        "status": row["status"], "paused_at": row["updated_at"],
                        "step_id": paused.step_id if paused else None,
                        "waiting_for": paused.waiting_for if paused else None,
                        "prompt": paused.prompt if paused else None})
    return _json(request, {"pending": out})


async def _decide(request: web.Request, body: Any) -> web.Response:
    run_id = request.match_info["run_id"]
    try:
        accepted = await request.app[RESUMER_KEY].decide(
            run_id, body, ui_url=request.app[STORE_KEY].public_url)
    except DecisionRefused as exc:
        return _json(request, {"error": str(exc)}, exc.status)
    return _json(request, {"accepted": True, "run_id": run_id, "status": accepted.status,
                           "pid": accepted.pid}, 202)
