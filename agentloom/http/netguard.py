"""Which network addresses we may reach on a user's behalf.

Attachment downloads and the `http_request` tool fetch URLs that come from templates, and
so, indirectly, from model output or user data. A URL at a private, loopback, link-local
or otherwise non-public address could reach services behind the user's firewall (SSRF).
The check runs on the *resolved* address of every hop, so a public name that resolves to
127.0.0.1, a decimal IP (`http://2130706433/`) or a redirect to loopback are all refused.
An IPv6 address that embeds an IPv4 address (mapped, compatible, SIIT-translated, NAT64,
6to4) is judged as the IPv4 address it embeds: a translator or relay would deliver it there.

A check before the request is not enough on its own: the transport looks the name up again
when it connects, and a name with a zero TTL can answer a public address to the check and
127.0.0.1 to the connection (DNS rebinding). So a caller also runs its request under
`pinned(permit)`: inside that block the aiohttp transport connects through a resolver that
looks the name up once, keeps only the addresses `permit` allows and connects to those
(`allowed_only`), and refuses with AddressRefused when none is left. The URL keeps its host
name (Host header, TLS SNI and certificate check); only the lookup is pinned. Provider calls
run outside any pin: a model server on loopback stays reachable.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from urllib.parse import urlsplit

# Prefixes whose low 32 bits are an IPv4 address that a host, translator or relay on the
# path turns the packet into (RFC 4291 compatible/mapped, RFC 6145 SIIT, RFC 6052/8215 NAT64).
_EMBEDS_LOW_32 = tuple(
    ipaddress.IPv6Network(net)
    for net in ("::/96", "::ffff:0:0/96", "::ffff:0:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48")
)


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for, or None when it embeds none."""
    if ip.sixtofour is not None:
        return ip.sixtofour
    if any(ip in net for net in _EMBEDS_LOW_32):
        if int(ip) <= 1:  # `::` and `::1` are IPv6's own, not 0.0.0.0 and 0.0.0.1
            return None
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def effective_address(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The address a connection to `address` really reaches, for the policy's checks."""
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address):
        return embedded_ipv4(ip) or ip
    return ip


class AddressRefused(Exception):
    """The URL's host resolves to an address the policy does not allow."""


@dataclass(slots=True, frozen=True, kw_only=True)
class AddressPolicy:
    """`allow_private` lets every non-public address through (intranet use); `allowed`
    names specific hosts, IPs or networks (`127.0.0.1`, `10.0.0.0/8`) that may be reached
    even though they are not public."""

    allow_private: bool = False
    allowed: tuple[str, ...] = field(default_factory=tuple)

    def _allowed_networks(self) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
        nets = []
        for entry in self.allowed:
            try:
                nets.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                continue
        return nets

    def permits(self, host: str, address: str) -> bool:
        ip = effective_address(address)
        if ip.is_global and not ip.is_multicast:
            return True
        if self.allow_private:
            return True
        if host.lower() in {a.lower() for a in self.allowed}:
            return True
        return any(ip in net for net in self._allowed_networks())


def parse_host(url: str) -> tuple[str, int]:
    """The URL's host and port; AddressRefused (never urllib's bare ValueError) when it
    has no host or cannot be read (`http://[::1/`, a port past 65535 or not a number)."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError as exc:
        raise AddressRefused(f"URL is not valid ({exc}): {url!r}") from None
    if not host:
        raise AddressRefused(f"URL has no host: {url!r}")
    return host, port or (443 if parts.scheme == "https" else 80)


async def resolve(host: str, port: int) -> list[str]:
    """All addresses a host resolves to (IP literals in any form, decimal included)."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


async def check_url(url: str, policy: AddressPolicy) -> list[str]:
    """Resolve the URL's host and refuse it unless every address is permitted.

    Returns the resolved addresses. Raises AddressRefused with a readable reason."""
    host, port = parse_host(url)
    try:
        addresses = await resolve(host, port)
    except OSError as exc:
        raise AddressRefused(f"cannot resolve {host!r}: {exc}") from exc
    denied = [a for a in addresses if not policy.permits(host, a)]
    if denied:
        raise AddressRefused(
            f"refused {url!r}: {host} resolves to a private, loopback or link-local "
            f"address ({', '.join(denied)})"
        )
    return addresses


Permit = Callable[[str, int, str], bool]
"""`permit(host, port, address)`: may a connection for `host` on `port` go to `address`."""

_PIN: ContextVar[Permit | None] = ContextVar("agentloom_netguard_pin", default=None)


@contextmanager
def pinned(permit: Permit) -> Iterator[None]:
    """Run requests in this block only to addresses `permit` allows, judged on the lookup
    the connection itself uses (a transport that honours pins: the aiohttp one). A pin
    inside another one narrows it: an address must pass both."""
    outer = _PIN.get()
    rule = permit if outer is None else (
        lambda host, port, address: outer(host, port, address) and permit(host, port, address)
    )
    token = _PIN.set(rule)
    try:
        yield
    finally:
        _PIN.reset(token)


current_pin: Callable[[], Permit | None] = _PIN.get
"""The pin the current request runs under, or None (no pin: any address). The context
variable's own getter: a transport asks on every call."""


def allowed_only(host: str, port: int, addresses: Iterable[str], permit: Permit) -> list[str]:
    """The addresses a connection for `host` may go to, in their order; AddressRefused
    (in the words of `check_url`) when `permit` allows none of them."""
    addresses = list(addresses)
    kept = [a for a in addresses if _permitted(permit, host, port, a)]
    if not kept:
        raise AddressRefused(
            f"{host} resolves to a private, loopback or link-local address "
            f"({', '.join(addresses) or 'no address'}) when connecting"
        )
    return kept


def _permitted(permit: Permit, host: str, port: int, address: str) -> bool:
    try:
        return permit(host, port, address)
    except ValueError:  # not an address the policy can read: not one it allows
        return False


def host_matches(host: str, domains: Iterable[str]) -> bool:
    """`api.example.com` matches `example.com` and `api.example.com`, not `badexample.com`."""
    host = host.lower().rstrip(".")
    for domain in domains:
        d = domain.lower().lstrip(".").rstrip(".")
        if host == d or host.endswith("." + d):
            return True
    return False


def split_port(entry: str) -> tuple[str, int] | None:
    """`127.0.0.1:8080` / `[::1]:8080` / `host:8080` -> (address, port); else None."""
    if entry.startswith("["):
        host, sep, port = entry[1:].partition("]:")
        return (host, int(port)) if sep and port.isdigit() else None
    if entry.count(":") == 1:
        host, port = entry.split(":")
        if port.isdigit():
            return host, int(port)
    return None
