"""The one place aiohttp failures become TransportError: every family maps to its phase."""

from __future__ import annotations

import ssl
from typing import Any

import pytest
from aiohttp import client_exceptions as cx
from aiohttp.client_reqrep import ConnectionKey, RequestInfo
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from agentloom.http._aiohttp import _translate

KEY = ConnectionKey("h", 443, True, True, None, None, None)
INFO = RequestInfo(URL("http://h/"), "POST", CIMultiDictProxy(CIMultiDict()), URL("http://h/"))


@pytest.mark.parametrize(("exc", "got_headers", "phase", "sent"), [
    (cx.ClientConnectorError(KEY, OSError(111, "refused")), False, "connect", False),
    (cx.ClientConnectorDNSError(KEY, OSError(-2, "no name")), False, "connect", False),
    (cx.ConnectionTimeoutError("connect timeout"), False, "connect", False),
    (cx.ClientConnectorCertificateError(KEY, ssl.SSLCertVerificationError("bad")), False,
     "tls", False),
    (cx.ClientConnectorSSLError(KEY, ssl.SSLError("handshake")), False, "tls", False),
    (cx.ClientProxyConnectionError(KEY, OSError(111, "proxy down")), False, "proxy", False),
    (cx.ClientHttpProxyError(INFO, ()), False, "proxy", False),
    (cx.SocketTimeoutError("read timeout"), False, "read", True),
    (cx.ServerDisconnectedError(), False, "read", True),
    (cx.ClientPayloadError("truncated"), True, "read", True),
    (cx.InvalidURL("nope"), False, "local", False),
    (TimeoutError(), False, "send", None),
    (TimeoutError(), True, "read", True),
    (cx.ClientOSError(104, "reset"), False, "send", None),
    (cx.ClientOSError(104, "reset"), True, "read", True),
])
def test_mapping(exc: Any, got_headers: bool, phase: str, sent: bool | None) -> None:
    err = _translate(exc, got_headers=got_headers)
    assert (err.phase, err.request_sent) == (phase, sent)
    assert type(exc).__name__ in str(err)
