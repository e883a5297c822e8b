"""`agentloom callback-server`: approval callbacks over HTTP resume paused runs.

The public AgentLoom's routes, on our run store:

    POST /approve/<run_id>   resume the paused run with its gate approved (202)
    POST /reject/<run_id>    ... rejected
    GET  /pending            {"paused_runs": [{run_id, workflow_name, paused_step_id, ...}]}
    POST /webhook            a gate's `notify` payload, acknowledged and printed

A decision runs `agentloom resume RUN_ID --approve|--reject` against the same store, in
a child process, so it goes through every check `resume` makes. `?wait=1` answers once
that resume has ended, with its exit status.

Unlike theirs, it listens on 127.0.0.1 by default and takes a shared secret
(`--token`, or AGENTLOOM_CALLBACK_TOKEN): with one set, every request must carry
`Authorization: Bearer <token>`; binding any other address without one is refused.
Without one, a web page open in the person's browser can reach the loopback address
too, so a request must name a loopback host (a DNS-rebinding page names its own) and a
POST that says it comes from another site (`Origin`, `Sec-Fetch-Site`) is refused:
programs that send webhooks send neither. Requests are bounded (16 KiB of head, 64 KiB
of body, 10 s to send them). A body comes with a `Content-Length` (one, or several that
agree): a chunked one is refused (411) rather than read as empty, and a run being
resumed by this server is not resumed again by a second decision (409).
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import json
import os
import sys
from typing import Any
from urllib.parse import parse_qs, urlsplit

from agentloom import _jsontext
from agentloom.cli import EXIT_OK, UsageError

MAX_HEAD = 16 * 1024
MAX_BODY = 64 * 1024
READ_SECONDS = 10.0
"""How long a client has to send its request: a connection that trickles it is closed."""
_LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
_PHRASES = {200: "OK", 202: "Accepted", 400: "Bad Request", 401: "Unauthorized",
            404: "Not Found", 409: "Conflict", 411: "Length Required",
            413: "Payload Too Large", 500: "Internal Server Error"}


def add_parser(sub: Any) -> None:
    from agentloom.cli._durable import add_store_flag

    p = sub.add_parser("callback-server",
                       help="resume paused runs from approval callbacks over HTTP")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    p.add_argument("--port", type=int, default=8642, help="port (8642; 0 picks a free one)")
    p.add_argument("--token", metavar="SECRET",
                   help="require `Authorization: Bearer SECRET` (AGENTLOOM_CALLBACK_TOKEN)")
    add_store_flag(p)


class _Server:
    def __init__(self, store: str | None, token: str | None) -> None:
        self.store = store
        self.token = token
        self.resumes: dict[str, asyncio.Task[int]] = {}
        """The resumes this server started, by run id, until they end."""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request: _Request | None = None
        try:
            async with asyncio.timeout(READ_SECONDS):
                request = await _read(reader)
        except _BadRequest as exc:
            status, body = exc.status, {"error": exc.message}
        except TimeoutError:
            status, body = 408, {"error": f"the request took over {READ_SECONDS:g} s"}
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            status, body = 400, {"error": "malformed HTTP request"}
        if request is not None:
            try:
                status, body = await self._answer(*request)
            except Exception as exc:  # one request's fault: answered, and the server goes on
                status, body = 500, {"error": f"{type(exc).__name__} while answering"}
        payload = json.dumps(body).encode()
        writer.write(f"HTTP/1.1 {status} {_PHRASES.get(status, 'Error')}\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
                     "Connection: close\r\n\r\n".encode() + payload)
        try:
            await writer.drain()
        finally:
            writer.close()

    async def _answer(self, method: str, target: str, headers: dict[str, str],
                      raw: bytes) -> _Answer:
        if self.token is not None:
            given = headers.get("authorization", "").removeprefix("Bearer ").strip()
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                return 401, {"error": "missing or wrong Authorization: Bearer token"}
        else:
            refused = _from_a_web_page(method, headers)
            if refused is not None:
                return 403, {"error": refused}
        url = urlsplit(target)
        path, query = url.path, parse_qs(url.query)
        if method == "GET" and path == "/pending":
            return 200, {"paused_runs": await self._pending()}
        if method == "POST" and path == "/webhook":
            try:
                payload = _jsontext.loads(raw) if raw.strip() else {}
            except ValueError:
                payload = {"raw": raw.decode("utf-8", "replace")}
            sys.stdout.write(f"[WEBHOOK] Notification received: {json.dumps(payload)}\n")
            sys.stdout.flush()
            return 200, {"status": "received"}
        for route, flag, word in (("/approve/", "--approve", "approved"),
                                  ("/reject/", "--reject", "rejected")):
            if method == "POST" and path.startswith(route):
                wait = query.get("wait", ["0"])[0] not in ("0", "false", "")
                return await self._decide(path[len(route):], flag, word, wait)
        return 404, {"error": f"no route {method} {path}"}

    async def _pending(self) -> list[dict[str, Any]]:
        from agentloom.store import open_store

        store = open_store(self.store) if self.store else open_store(None)
        try:
            out = []
            for r in await store.list_runs(status="paused"):
                cp = await store.load_latest(r.run_id)
                paused = cp.paused if cp is not None else None
                out.append({"run_id": r.run_id, "workflow_name": r.workflow_name,
                            "paused_step_id": getattr(paused, "step_id", None),
                            "updated_at": r.updated_at.isoformat()})
            return out
        finally:
            await store.close()

    async def _decide(self, run_id: str, flag: str, word: str,
                      wait: bool) -> tuple[int, dict[str, Any]]:
        if run_id in self.resumes:
            # Its resume claims the run only once the child has started: a second
            # decision now would answer 202 for a resume bound to fail.
            return 409, {"error": f"run {run_id!r} is being resumed already"}
        pending = {r["run_id"]: r for r in await self._pending()}
        if run_id not in pending:
            return 409, {"error": f"run {run_id!r} is not paused in this store"}
        if run_id in self.resumes:  # decided while the store was read
            return 409, {"error": f"run {run_id!r} is being resumed already"}
        # The run id last, after `--`: it is data (a run may be called `-h`), not a flag.
        argv = [sys.executable, "-m", "agentloom.cli", "resume", flag]
        if self.store:
            argv += ["--store", self.store]
        argv += ["--", run_id]
        task = asyncio.create_task(_resume(argv))
        self.resumes[run_id] = task
        task.add_done_callback(lambda _task: self.resumes.pop(run_id, None))
        body: dict[str, Any] = {"run_id": run_id, "decision": word,
                                "step_id": pending[run_id]["paused_step_id"],
                                "message": f"Workflow resuming with decision '{word}'"}
        if not wait:
            return 202, body
        code = await task
        body.update(exit_code=code, message=f"resume ended with exit code {code}")
        return 200, body


_Answer = tuple[int, dict[str, Any]]
_Request = tuple[str, str, dict[str, str], bytes]
"""Method, target, headers (lower-case names) and body."""


class _BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


async def _read(reader: asyncio.StreamReader) -> _Request:
    head = await reader.readuntil(b"\r\n\r\n")
    if len(head) > MAX_HEAD:
        raise _BadRequest(413, "request head too large")
    lines = head.decode("latin-1").split("\r\n")
    method, target, _version = lines[0].split(" ", 2)
    fields = [(k.strip().lower(), v.strip())
              for k, _, v in (line.partition(":") for line in lines[1:] if line)]
    headers = dict(fields)
    if "transfer-encoding" in headers:
        raise _BadRequest(411, "send the body with a Content-Length; a chunked body "
                               "isn't read")
    lengths = {v for k, v in fields if k == "content-length"}
    if len(lengths) > 1:  # which one frames the body is how requests get smuggled
        raise _BadRequest(400, "Content-Length given twice, differently")
    length = int(headers.get("content-length") or 0)
    if length < 0 or length > MAX_BODY:
        raise _BadRequest(413, f"body larger than {MAX_BODY} bytes")
    raw = await reader.readexactly(length) if length else b""
    return method, target, headers, raw


def _from_a_web_page(method: str, headers: dict[str, str]) -> str | None:
    """Why a tokenless request is refused as coming from a web page (None: it isn't)."""
    host = headers.get("host", "")
    if _host_name(host) not in _LOOPBACK:
        return ("without --token this server answers only to a loopback host name "
                f"(127.0.0.1, localhost, [::1]), not {host[:100]!r}")
    if method != "GET":
        origin = headers.get("origin")
        site = headers.get("sec-fetch-site")
        if ((origin is not None and _authority(origin) != host.lower())
                or (site is not None and site not in ("same-origin", "none"))):
            return "a request from another site's web page is refused"
    return None


def _host_name(host: str) -> str:
    """The name in a Host header, lower-cased; "" for one no URL could hold (`[::1`)."""
    try:
        return (urlsplit(f"//{host}").hostname or "").lower()
    except ValueError:
        return ""


def _authority(origin: str) -> str | None:
    """The host[:port] of an Origin header; None for one that doesn't parse."""
    try:
        return urlsplit(origin).netloc.lower()
    except ValueError:
        return None


async def _resume(argv: list[str]) -> int:
    proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL)
    return await proc.wait()


async def _serve(args: argparse.Namespace, token: str | None) -> None:
    server_state = _Server(args.store, token)
    server = await asyncio.start_server(server_state.handle, args.host, args.port,
                                        limit=MAX_HEAD)
    port = server.sockets[0].getsockname()[1]
    sys.stdout.write(f"callback server listening on http://{args.host}:{port}\n"
                     "  POST /approve/<run_id>, POST /reject/<run_id>, GET /pending, "
                     "POST /webhook\n")
    sys.stdout.flush()
    async with server:
        await server.serve_forever()


def run(args: argparse.Namespace) -> int:
    token = args.token or os.environ.get("AGENTLOOM_CALLBACK_TOKEN") or None
    if args.host not in _LOOPBACK and token is None:
        raise UsageError(f"--host {args.host}: listening beyond this machine needs --token "
                         "(or AGENTLOOM_CALLBACK_TOKEN), so not anyone can approve a run")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: expected 0-65535")
    try:
        asyncio.run(_serve(args, token))
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        sys.stderr.write(f"agentloom callback-server: cannot listen on "
                         f"{args.host}:{args.port}: {exc.strerror or exc}\n")
        return 1
    return EXIT_OK
