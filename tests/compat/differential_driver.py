"""Runs many workflows through one engine's CLI in one process (the differential tests'
driver; a process per workflow would take minutes). Prints one JSON line per workflow:
{"file", "code", "out"}.

    <their venv>/bin/python differential_driver.py public FILE...   # their Typer app
    python differential_driver.py ours FILE...                      # our agentloom.cli

Imports nothing of either engine at the top: each branch imports only its own.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import time


def _fast_sleeps() -> None:
    """Their retry backoff and limiter waits sleep for real (seconds per failed step);
    the outcome doesn't depend on how long, so the driver caps every sleep at 10 ms."""
    import asyncio

    import anyio

    real_asyncio, real_anyio = asyncio.sleep, anyio.sleep

    async def asyncio_sleep(delay: float, result: object = None) -> object:
        return await real_asyncio(min(delay, 0.01), result)

    async def anyio_sleep(delay: float) -> None:
        await real_anyio(min(delay, 0.01))

    asyncio.sleep = asyncio_sleep  # type: ignore[assignment]
    anyio.sleep = anyio_sleep  # type: ignore[assignment]


def _shared_tls_context() -> None:
    """Each of their provider clients builds a TLS context (0.35 s of CA loading) on every
    run; they all ask for the same one, so the driver builds it once."""
    import functools

    import httpx._transports.default as transport

    made = functools.lru_cache(maxsize=8)(transport.create_ssl_context)
    transport.create_ssl_context = made  # type: ignore[assignment]


def _public(files: list[str]) -> None:
    _fast_sleeps()
    _shared_tls_context()
    from agentloom.cli.main import app  # the public AgentLoom's CLI, in its venv
    from typer.testing import CliRunner

    runner = CliRunner()
    for f in files:
        started = time.monotonic()
        result = runner.invoke(app, ["run", f, "--json"])
        print(json.dumps({"file": f, "code": result.exit_code, "out": result.output,
                          "seconds": time.monotonic() - started}), flush=True)


def _ours(files: list[str]) -> None:
    from agentloom.cli import main

    for f in files:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(["run", f, "--json", "--no-checkpoint"])
            except SystemExit as exc:
                code = int(exc.code or 0)
        print(json.dumps({"file": f, "code": code, "out": out.getvalue(),
                          "err": err.getvalue()}), flush=True)


if __name__ == "__main__":
    (_public if sys.argv[1] == "public" else _ours)(sys.argv[2:])
