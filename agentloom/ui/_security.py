"""The UI's guards, as aiohttp middlewares: who may ask, from where, and what a page may do.

- Host: bound to loopback, a request must name a loopback host (a DNS-rebinding page
  that points evil.example at 127.0.0.1 names evil.example and is refused).
- Token: bound elsewhere, every request carries the token: `Authorization: Bearer T`,
  the cookie a first `?token=T` visit sets (HttpOnly, SameSite=Strict), or `?token=T`.
- Cross-site writes: a POST needs the `X-AgentLoom-Request` header (which a cross-site
  page can't send without a CORS preflight we never grant), a JSON body if any, and,
  when the browser says where it comes from, this very origin; or the bearer token.
- Cross-site reads of the API (`/api/`; the pages stay open to links from anywhere): a
  browser that says the request comes from another site's page is refused, so such a
  page can't hold event streams open or make the UI load lists it can't read anyway.
- Pages: a Content-Security-Policy with no inline script and nothing from elsewhere, so
  even text that slipped past escaping could not run; it and the other guard headers go
  on every answer, the event stream's included (`harden`, on `on_response_prepare`).
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

COOKIE = "agentloom_ui_token"
CSRF_HEADER = "X-AgentLoom-Request"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def is_loopback(host: str) -> bool:
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _hostname(header: str) -> str:
    """The name in a Host header, lower-cased; "" for one no URL could hold (`[::1`)."""
    try:
        return (urlsplit(f"//{header}").hostname or "").lower()
    except ValueError:
        return ""


def _origin(header: str) -> str | None:
    """The host[:port] of an Origin header; None for one that doesn't parse."""
    try:
        return urlsplit(header).netloc.lower()
    except ValueError:
        return None


def security_middlewares(*, token: str | None, loopback_only: bool,
                         host_names: tuple[str, ...] = ()) -> list[object]:
    names = _LOOPBACK_NAMES | {_hostname(f"[{h}]" if ":" in h and "[" not in h else h)
                               for h in host_names}

    @web.middleware
    async def host_check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if loopback_only and _hostname(request.host) not in names:
            return _refuse(403, "this UI answers only to a loopback host name")
        return await handler(request)

    @web.middleware
    async def auth(request: web.Request, handler: Handler) -> web.StreamResponse:
        if token is None:
            return await handler(request)
        given = request.query.get("token")
        if given is not None and _same(given, token):
            if request.method == "GET" and not request.path.startswith("/api/"):
                raise _set_cookie_and_strip(request, token)
            return await handler(request)
        bearer = request.headers.get("Authorization", "")
        if bearer.startswith("Bearer ") and _same(bearer[7:].strip(), token):
            return await handler(request)
        if _same(request.cookies.get(COOKIE, ""), token):
            return await handler(request)
        return _refuse(401, "a token is needed: open the URL `agentloom ui` printed, or "
                            "send Authorization: Bearer TOKEN")

    @web.middleware
    async def cross_site(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method in ("GET", "HEAD", "OPTIONS"):
            if request.method == "OPTIONS":
                return _refuse(405, "no cross-origin requests")
            if request.path.startswith("/api/") and _from_another_site(request):
                return _refuse(403, "a read of the API from another site's page is refused")
            return await handler(request)
        bearer = request.headers.get("Authorization", "")
        if token is not None and bearer.startswith("Bearer ") and _same(bearer[7:].strip(),
                                                                        token):
            return await handler(request)  # a browser never sends this header by itself
        if request.headers.get(CSRF_HEADER) is None:
            return _refuse(403, f"a write needs the {CSRF_HEADER} header")
        if request.content_type != "application/json" and request.content_length:
            return _refuse(415, "a write takes a JSON body (Content-Type: application/json)")
        origin = request.headers.get("Origin")
        if origin is not None and _origin(origin) != request.host.lower():
            return _refuse(403, "a write from another origin is refused")
        site = request.headers.get("Sec-Fetch-Site")
        if site is not None and site not in ("same-origin", "none"):
            return _refuse(403, "a write from another site is refused")
        return await handler(request)

    return [host_check, auth, cross_site]


def _from_another_site(request: web.Request) -> bool:
    """Whether a browser says the request comes from another site's page: its `Origin`
    (sent with a cross-origin EventSource or fetch) is not this host, or its
    `Sec-Fetch-Site` is `cross-site` or `same-site`. Such a page can't read the API's
    answers (no CORS is granted), but could make the UI do their work: an event stream
    held open and polling the store, the biggest list page, again and again."""
    origin = request.headers.get("Origin")
    if origin is not None and _origin(origin) != request.host.lower():
        return True
    return request.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none")


async def harden(request: web.Request, response: web.StreamResponse) -> None:
    """The guard headers, on every answer as it is about to go out (`on_response_prepare`):
    a page, an error, a refusal, and a stream such as the run's events, whose headers are
    sent before its handler returns (a middleware would add them too late)."""
    _harden(response)


def _harden(response: web.StreamResponse) -> None:
    response.headers.setdefault("Content-Security-Policy", CSP)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "no-referrer")
    response.headers.setdefault("X-Frame-Options", "DENY")
    response.headers.setdefault("Cache-Control", "no-store")


def _same(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())


def _set_cookie_and_strip(request: web.Request, token: str) -> web.HTTPFound:
    query = {k: v for k, v in request.query.items() if k != "token"}
    target = request.rel_url.with_query(query)
    found = web.HTTPFound(str(target))
    found.set_cookie(COOKIE, token, httponly=True, samesite="Strict", path="/")
    return found


def _refuse(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)
