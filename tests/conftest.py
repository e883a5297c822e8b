"""Test-wide guards: no test reaches the internet or real DNS.

Every socket connection and name lookup is checked: only loopback addresses (127.0.0.0/8,
::1, localhost) and unix sockets are allowed. A test that tries anything else fails loudly
instead of silently depending on the network.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from agentloom.testing.fake_openai import FakeOpenAIServer

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo


def _is_loopback_host(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode()
    if not isinstance(host, str):
        return False
    if host in ("localhost", "localhost.localdomain", ""):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _check_address(sock: socket.socket, address: Any) -> None:
    if sock.family == getattr(socket, "AF_UNIX", None):
        return
    if isinstance(address, tuple) and address and _is_loopback_host(address[0]):
        return
    raise RuntimeError(f"test tried to reach a non-loopback address: {address!r}")


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    _check_address(self, address)
    return _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> Any:
    _check_address(self, address)
    return _real_connect_ex(self, address)


def _guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if host is not None and not _is_loopback_host(host):
        raise socket.gaierror(socket.EAI_NONAME, f"DNS blocked in tests: {host!r}")
    return _real_getaddrinfo(host, *args, **kwargs)


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]
socket.getaddrinfo = _guarded_getaddrinfo


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    """A FakeOpenAIServer serving from a thread of its own: sync tests (the Agent's sync
    face, subprocesses) and async ones reach it alike. `openai_thread.agent_env(server)`
    points an Agent at it."""
    with FakeOpenAIServer() as server:
        yield server


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Under CI, a skip fails the test: CI installs every extra and starts every service,
    so a skip there means an install step is missing, and a green run would hide it.
    Locally, with a partial install, skips stay skips."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.longrepr = f"skipped under CI, where nothing may be missing: {reason}"
