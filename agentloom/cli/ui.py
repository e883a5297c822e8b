"""`agentloom ui`: the web app over the run store, on http://127.0.0.1:8765/ by default.

Bound to loopback it needs no token (and answers only to loopback host names). Bound to
any other address it needs one: `--token`, `AGENTLOOM_UI_TOKEN`, or a random one printed
at start inside the URL to open. Approvals in the browser run `agentloom resume` in a
child process with this environment (provider keys and URLs), against the same store.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from agentloom.cli import EXIT_FAILED, EXIT_OK, UsageError


def add_parser(sub: Any) -> None:
    from agentloom.cli._durable import add_store_flag

    p = sub.add_parser("ui", help="browse and steer runs in a web browser")
    add_store_flag(p)
    p.add_argument("--host", default="127.0.0.1",
                   help="the address to bind (default 127.0.0.1; any other needs a token)")
    p.add_argument("--port", type=int, default=8765, help="the port (default 8765; 0: any)")
    p.add_argument("--token", metavar="TOKEN",
                   help="the token every request must carry (default: AGENTLOOM_UI_TOKEN, "
                        "or a random one when bound beyond loopback)")


def run(args: argparse.Namespace) -> int:
    import asyncio
    import os

    from agentloom.ui import is_loopback

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: expected 0 to 65535")
    token = args.token or os.environ.get("AGENTLOOM_UI_TOKEN") or None
    loopback = is_loopback(args.host)
    if token is not None and len(token) < 16:
        raise UsageError("--token: use at least 16 characters")
    if not loopback and token is None:
        import secrets

        token = secrets.token_urlsafe(24)
    from agentloom.errors import AgentLoomError

    try:
        asyncio.run(_serve(args, token, loopback))
    except KeyboardInterrupt:
        pass
    except AgentLoomError as exc:  # the store can't be opened, say
        sys.stderr.write(f"agentloom ui: {exc}\n")
        return EXIT_FAILED
    return EXIT_OK


def _redactor(token: str | None) -> Any:
    import os

    from agentloom.redact import Redactor

    keys = [v for k, v in os.environ.items() if k.endswith(("_API_KEY", "_TOKEN")) and v]
    return Redactor(secrets=[*keys, *([token] if token else [])]).redact_text


async def _serve(args: argparse.Namespace, token: str | None, loopback: bool) -> None:
    import asyncio
    import os
    import signal

    from agentloom.store import open_store, shown_url
    from agentloom.ui import UiSettings, create_app, serve

    store_url = args.store or str(Path(".agentloom/runs.db").resolve())
    if "://" not in store_url:
        store_url = str(Path(store_url).resolve())
    store = open_store(store_url)
    await store.__aenter__()  # type: ignore[attr-defined]
    settings = UiSettings(store=store, store_url=store_url, token=token,
                          loopback_only=loopback, env=dict(os.environ),
                          host_names=(args.host,), redact=_redactor(token))
    try:
        runner = await serve(create_app(settings), args.host, args.port)
    except OSError as exc:
        await store.close()
        raise UsageError(f"can't listen on {args.host}:{args.port}: "
                         f"{exc.strerror or exc}") from None
    try:
        port = runner.addresses[0][1]  # the port the OS gave for --port 0
        shown = "127.0.0.1" if args.host in ("0.0.0.0", "::", "") else args.host
        shown = f"[{shown}]" if ":" in shown else shown
        settings.public_url = f"http://{shown}:{port}/"  # no token: links land in webhooks
        url = settings.public_url + (f"?token={token}" if token else "")
        sys.stdout.write(f"agentloom ui: {url}\n(store {shown_url(store_url)}; "
                         "Ctrl-C stops)\n")
        sys.stdout.flush()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()
        await store.close()


