"""Attachments: turn a step's `attachments` entry into an image, document or audio part.

A source is an http(s) URL (downloaded here, or handed to the provider with
`fetch: provider`), a `data:` URL, a long base64 string, or a file path relative to the
workflow file's directory. Every byte source is capped at 20 MB. A local file is read
under the same rule as the file tools, sandbox block or not: beneath the sandbox's
readable and writable paths when the block names any, else beneath the workflow's own
directory (closed by default: no `..` escape, no absolute path elsewhere), and only
`enabled: false` reads any file. It is opened with the file tools' race-free opener
(`agentloom.tools._safefs`): no symlink followed below the root, regular files only.
Sources come from templates, so from user data or model output: every URL host is
resolved and refused at a private, loopback or link-local address, on every redirect
hop, which we follow ourselves (the transport never does), and each hop is sent inside a
netguard pin, so the connection goes only to an address the same rules allow, judged on
the lookup it connects with (a DNS name that rebinds to 127.0.0.1 between the check and the
connection is refused). The sandbox's network and path rules apply too. Everything fails
with a `ConfigError` a person can act on, before any model request is sent.

Whether a provider's capabilities can take the parts is `check_attachments`, a
capability fact kept in `agentloom.providers.profiles` (re-exported here).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import ipaddress
import re
import socket
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import SplitResult, unquote_to_bytes, urljoin, urlsplit

from agentloom.errors import ConfigError
from agentloom.http.netguard import (
    AddressPolicy,
    AddressRefused,
    check_url,
    host_matches,
    parse_host,
    pinned,
    split_port,
)
from agentloom.messages import AudioPart, DocumentPart, ImagePart, MediaPart
from agentloom.providers import check_attachments as check_attachments
from agentloom.tools._safefs import (
    BadPath,
    NotRegularFile,
    UnsafePath,
    read_file,
    resolve_under,
    run_detached,
)
from agentloom.transport import HttpRequest, HttpTimeout, TransportError

if TYPE_CHECKING:
    from agentloom.transport import Transport

AttachmentType = Literal["image", "pdf", "audio"]

MAX_BYTES = 20 * 1024 * 1024
DOWNLOAD_TIMEOUT = 30.0
MAX_REDIRECTS = 5
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_FALLBACK = {"image": "image/png", "pdf": "application/pdf", "audio": "audio/wav"}
_EXTENSIONS = {
    ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
    ".webp": "image/webp", ".heic": "image/heic", ".heif": "image/heif",
    ".bmp": "image/bmp", ".tif": "image/tiff", ".tiff": "image/tiff",
    ".pdf": "application/pdf",
    ".wav": "audio/wav", ".mp3": "audio/mpeg", ".ogg": "audio/ogg", ".flac": "audio/flac",
    ".m4a": "audio/mp4", ".aac": "audio/aac", ".aiff": "audio/aiff", ".aif": "audio/aiff",
    ".webm": "audio/webm", ".opus": "audio/opus",
}
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")
_MIN_BASE64 = 64


@dataclass(slots=True, frozen=True, kw_only=True)
class AttachmentSpec:
    """One `attachments` entry, its template already rendered."""

    source: str
    type: AttachmentType = "image"
    media_type: str | None = None
    fetch: Literal["local", "provider"] = "local"

    def __post_init__(self) -> None:
        if self.type not in _FALLBACK:
            raise ConfigError(f"attachment type must be image, pdf or audio, not {self.type!r}")
        if self.fetch not in ("local", "provider"):
            raise ConfigError(f"attachment fetch must be local or provider, not {self.fetch!r}")


@dataclass(slots=True, frozen=True, kw_only=True)
class AttachmentPolicy:
    """What an attachment may reach: the sandbox's rules plus the address policy.

        AttachmentPolicy()                                   # public URLs, any file
        AttachmentPolicy(allowed_domains=("example.com",))   # downloads from there only
        AttachmentPolicy(sandbox_enabled=True, readable_paths=(Path("data"),))
    """

    allow_network: bool = True
    """False refuses downloads, even with the sandbox disabled (spec: the sandbox applies)."""
    allowed_domains: tuple[str, ...] | None = None
    """Hosts downloads may come from (subdomains included); None: any public host."""
    sandbox_enabled: bool = False
    readable_paths: tuple[Path, ...] = ()
    """With the sandbox enabled, a local file must sit under one of these (readable_paths
    and allowed_paths together), symlinks and `..` resolved first. With it not enabled,
    under the `base_dir` given to `load_attachment` (the workflow's directory)."""
    any_file: bool = False
    """True (the sandbox's `enabled: false`): a local file may be anywhere."""
    addresses: AddressPolicy = field(default_factory=AddressPolicy)
    address_ports: tuple[tuple[str, int], ...] = ()
    """(host or network, port) pairs reachable on that port only (`127.0.0.1:8080` in
    sandbox.allowed_addresses), though not public."""
    max_bytes: int = MAX_BYTES
    download_timeout: float = DOWNLOAD_TIMEOUT
    """Seconds for a whole download, redirects included (and for reading a file)."""

    @classmethod
    def from_sandbox(cls, sandbox: Mapping[str, Any] | None) -> AttachmentPolicy:
        """The policy a workflow's `sandbox:` block (as written, unset keys left out)
        gives attachments. No block: public URLs, files under the workflow's directory.
        A block that names readable or writable paths: files under those only."""
        sb = dict(sandbox or {})
        paths = [*(sb.get("readable_paths") or []), *(sb.get("allowed_paths") or []),
                 *(sb.get("writable_paths") or [])]
        network = sb.get("allow_network")
        domains = sb.get("allowed_domains")
        plain: list[str] = []
        ports: list[tuple[str, int]] = []
        for entry in sb.get("allowed_addresses") or []:
            split = split_port(str(entry))
            if split is None:
                plain.append(str(entry))
            else:
                ports.append(split)
        return cls(
            addresses=AddressPolicy(allow_private=bool(sb.get("allow_private_addresses")),
                                    allowed=tuple(plain)),
            address_ports=tuple(ports),
            allow_network=True if network is None else bool(network),
            allowed_domains=tuple(domains) if domains else None,
            sandbox_enabled=bool(paths) and sb.get("enabled") is not False,
            readable_paths=tuple(Path(p) for p in paths),
            any_file=sb.get("enabled") is False,
        )


async def load_attachment(
    spec: AttachmentSpec, *, base_dir: Path, transport: Transport,
    policy: AttachmentPolicy | None = None,
) -> MediaPart:
    """Read one attachment into a part. Raises ConfigError naming the source and the fault."""
    policy = policy or AttachmentPolicy()
    source = spec.source.strip()
    if not source:
        raise ConfigError("attachment source is empty")
    scheme = source.split(":", 1)[0].lower() if ":" in source else ""
    if scheme in ("http", "https"):
        _split(source)  # `http://[::1/` is refused here, in words
        if spec.fetch == "provider":
            return await _by_url(spec, source, policy)
        data, content_type = await _download(source, transport, policy)
        media = _media_type(spec, _extension_type(urlsplit(source).path), content_type)
    elif scheme == "data":
        data, own_type = _data_url(source, policy.max_bytes)
        media = _media_type(spec, own_type, None, own_wins=True)
    elif _looks_base64(source):
        data = _base64(source, policy.max_bytes)
        media = _media_type(spec, None, None)
    else:
        path = await _read_file(source, base_dir, policy)
        data, media = path[0], _media_type(spec, _extension_type(path[1]), None)
    return _part(spec.type, media, data=data)


# --- media types ----------------------------------------------------------------------------


def _extension_type(path: str) -> str | None:
    return _EXTENSIONS.get(PurePosixPath(path).suffix.lower())


def _agrees(kind: AttachmentType, media_type: str) -> bool:
    if kind == "image":
        return media_type.startswith("image/")
    if kind == "pdf":
        return media_type == "application/pdf"
    return media_type.startswith("audio/")


def _media_type(
    spec: AttachmentSpec, guessed: str | None, content_type: str | None, *,
    own_wins: bool = False,
) -> str:
    """The field, else the extension, else the Content-Type, else the fallback; a data:
    URL's own type wins over all. One that contradicts `type` is refused."""
    if own_wins and guessed:
        media = guessed
    else:
        media = spec.media_type or guessed or content_type or _FALLBACK[spec.type]
    media = media.split(";", 1)[0].strip().lower()
    if not _agrees(spec.type, media):
        raise ConfigError(
            f"attachment {_short(spec.source)}: media type {media!r} contradicts "
            f"type {spec.type!r}"
        )
    return media


def _part(kind: AttachmentType, media: str, *, data: bytes | None = None,
          url: str | None = None) -> MediaPart:
    if kind == "image":
        return ImagePart(media_type=media, data=data, url=url)
    if kind == "pdf":
        return DocumentPart(media_type=media, data=data, url=url)
    return AudioPart(media_type=media, data=data)


def _short(source: str) -> str:
    return repr(source if len(source) <= 80 else source[:60] + "...")


def _too_large(source: str, limit: int) -> ConfigError:
    return ConfigError(f"attachment {_short(source)} is larger than {limit // (1024 * 1024)} MB")


# --- inline sources -----------------------------------------------------------------------


def _data_url(source: str, limit: int) -> tuple[bytes, str | None]:
    head, sep, payload = source.partition(",")
    if not sep:
        raise ConfigError(f"attachment {_short(source)}: a data: URL needs a comma")
    meta = head[5:].split(";")
    own_type = meta[0].strip() or None
    if len(payload) > limit * 4 // 3 + 4:
        raise _too_large(source, limit)
    if "base64" in (m.strip().lower() for m in meta[1:]):
        data = _base64(payload, limit, source=source)
    else:
        data = unquote_to_bytes(payload)
    if len(data) > limit:
        raise _too_large(source, limit)
    return data, own_type


def _looks_base64(source: str) -> bool:
    return len(source) >= _MIN_BASE64 and "." not in source and bool(
        _BASE64.fullmatch(source.replace("\n", "").replace("\r", ""))
    )


def _base64(text: str, limit: int, *, source: str | None = None) -> bytes:
    if len(text) > limit * 4 // 3 + 4:
        raise _too_large(source or text, limit)
    compact = "".join(text.split())
    try:
        if "-" in compact or "_" in compact:
            data = base64.urlsafe_b64decode(compact + "=" * (-len(compact) % 4))
        else:
            data = base64.b64decode(compact + "=" * (-len(compact) % 4), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ConfigError(f"attachment {_short(source or text)}: invalid base64 ({exc})") from exc
    if len(data) > limit:
        raise _too_large(source or text, limit)
    return data


# --- local files ----------------------------------------------------------------------------


async def _read_file(source: str, base_dir: Path, policy: AttachmentPolicy) -> tuple[bytes, str]:
    def read() -> tuple[bytes, str]:
        try:
            resolved = resolve_under(source, base_dir)
        except BadPath as exc:  # a NUL byte, a symlink loop
            raise ConfigError(f"attachment {_short(source)}: refused: {exc.strerror}") from None
        except OSError as exc:  # a link changing under realpath (EINVAL), a loop (ELOOP)
            raise ConfigError(f"attachment {_short(source)}: refused: the path changed "
                              f"while it was being resolved ({exc.strerror or exc})") from None
        path = Path(source).expanduser()  # as written, for a message
        path = path if path.is_absolute() else base_dir / path
        roots: list[Path] | None
        where = ""
        if policy.any_file:
            roots = None
        elif policy.sandbox_enabled:
            roots = [Path(p).expanduser().resolve() for p in policy.readable_paths]
            where = "the sandbox's readable_paths/allowed_paths"
        else:
            roots = [base_dir.resolve()]
            where = (f"the workflow's directory {roots[0]} (name other places in "
                     "sandbox.readable_paths)")
        if roots is not None and not any(
                resolved == root or resolved.is_relative_to(root) for root in roots):
            raise ConfigError(f"attachment {_short(source)}: {resolved} is outside {where}")
        try:
            data = read_file(resolved, roots, policy.max_bytes + 1)
        except FileNotFoundError:
            raise ConfigError(f"attachment file not found: {path}") from None
        except UnsafePath:
            raise ConfigError(f"attachment {_short(source)}: refused: a symlink appeared "
                              "on the way to it") from None
        except NotRegularFile:
            raise ConfigError(f"attachment {_short(source)}: {resolved} is not a regular "
                              "file") from None
        except OSError as exc:
            raise ConfigError(f"attachment {_short(source)}: cannot read {resolved}: "
                              f"{exc.strerror or exc}") from None
        if len(data) > policy.max_bytes:
            raise _too_large(source, policy.max_bytes)
        return data, resolved.name

    try:
        async with asyncio.timeout(policy.download_timeout):
            return await run_detached(read)
    except TimeoutError:
        raise ConfigError(f"attachment {_short(source)}: reading it took over "
                          f"{policy.download_timeout:g} s") from None


# --- URLs -----------------------------------------------------------------------------------


def _literal_ip(host: str) -> str | None:
    """An IP literal, legacy IPv4 spellings included (`2130706433`, `0x7f.1`), as the
    address it is, so it is judged with no name lookup."""
    try:
        return str(ipaddress.ip_address(host.split("%")[0]))
    except ValueError:
        pass
    if not re.fullmatch(r"[0-9a-fA-Fx.]+", host) or not any(c.isdigit() for c in host):
        return None
    try:
        return socket.inet_ntoa(socket.inet_aton(host))
    except OSError:
        return None


def _split(url: str) -> SplitResult:
    """The URL's parts; ConfigError, not urllib's bare ValueError, for one that can't be
    read (`http://[::1/`, an unclosed bracket; a port past 65535)."""
    try:
        parse_host(url)
        return urlsplit(url)
    except AddressRefused as exc:
        raise ConfigError(f"attachment URL refused: {exc}") from None


def _addresses_for(port: int, policy: AttachmentPolicy) -> AddressPolicy:
    """The address policy for a URL on `port`: the general one, plus the port rules that
    name this port."""
    if not policy.address_ports:
        return policy.addresses
    extra = tuple(entry for entry, p in policy.address_ports if p == port)
    return AddressPolicy(allow_private=policy.addresses.allow_private,
                         allowed=(*policy.addresses.allowed, *extra))


def _pin(policy: AttachmentPolicy) -> AbstractContextManager[None]:
    """The netguard pin a download's hop is sent in: the same rules as `_check_address`,
    applied to the addresses the connection itself resolves."""
    return pinned(lambda host, port, address:
                  _addresses_for(port, policy).permits(host, address))


async def _check_address(url: str, policy: AttachmentPolicy) -> None:
    try:
        host, port = parse_host(url)
        literal = _literal_ip(host)
        addresses = _addresses_for(port, policy)
        if literal is not None:
            if not addresses.permits(host, literal):
                shown = host if host == literal else f"{host} is {literal},"
                raise AddressRefused(
                    f"refused {url!r}: {shown} a private, loopback or link-local address"
                )
            return
        await check_url(url, addresses)
    except AddressRefused as exc:
        raise ConfigError(f"attachment URL refused: {exc}") from exc


def _check_network(url: str, policy: AttachmentPolicy) -> None:
    host = _split(url).hostname or ""
    if not policy.allow_network:
        raise ConfigError(f"attachment {_short(url)}: downloads are off "
                          "(sandbox.allow_network: false)")
    if policy.allowed_domains is not None and not host_matches(host, policy.allowed_domains):
        raise ConfigError(f"attachment {_short(url)}: {host} is not in sandbox.allowed_domains")


async def _by_url(spec: AttachmentSpec, url: str, policy: AttachmentPolicy) -> MediaPart:
    if spec.type != "image":
        raise ConfigError(
            f"attachment {_short(url)}: fetch: provider takes images only; "
            f"use fetch: local for a {spec.type}"
        )
    await _check_address(url, policy)
    media = _media_type(spec, _extension_type(_split(url).path), None)
    return _part("image", media, url=url)


async def _download(url: str, transport: Transport, policy: AttachmentPolicy) -> tuple[
    bytes, str | None
]:
    limit = policy.max_bytes
    current = url
    try:
        async with asyncio.timeout(policy.download_timeout):
            for _hop in range(MAX_REDIRECTS + 1):
                if _split(current).scheme.lower() not in ("http", "https"):
                    raise ConfigError(f"attachment {_short(url)}: redirect to a non-HTTP URL "
                                      f"{_short(current)}")
                _check_network(current, policy)
                await _check_address(current, policy)
                try:
                    with _pin(policy):
                        response = await transport.handle(HttpRequest(
                            method="GET", url=current, stream=True,
                            # A little past our own deadline, so that one fires, with its
                            # message.
                            timeout=HttpTimeout(connect=min(10.0, policy.download_timeout),
                                                read=policy.download_timeout + 1,
                                                total=policy.download_timeout + 1),
                        ))
                except AddressRefused as exc:
                    raise ConfigError(f"attachment URL refused: refused {current!r}: "
                                      f"{exc}") from exc
                try:
                    if response.status in _REDIRECTS:
                        location = response.headers.get("location")
                        if not location:
                            raise ConfigError(f"attachment {_short(url)}: redirect without "
                                              "a Location header")
                        try:
                            current = urljoin(current, location)
                        except ValueError as exc:  # `Location: http://[::1/`
                            raise ConfigError(f"attachment {_short(url)}: redirect to a URL "
                                              f"that is not valid ({exc}): "
                                              f"{_short(location)}") from None
                        continue
                    if not 200 <= response.status < 300:
                        raise ConfigError(f"attachment {_short(url)}: download failed with "
                                          f"HTTP {response.status}")
                    declared = response.headers.get("content-length", "")
                    if declared.isdigit() and int(declared) > limit:
                        raise _too_large(url, limit)
                    chunks: list[bytes] = []
                    size = 0
                    async for chunk in response.aiter_bytes():
                        size += len(chunk)
                        if size > limit:
                            raise _too_large(url, limit)
                        chunks.append(chunk)
                    return b"".join(chunks), response.headers.get("content-type")
                finally:
                    await response.aclose()
    except TimeoutError:
        raise ConfigError(f"attachment {_short(url)}: download took over "
                          f"{policy.download_timeout:g} s") from None
    except TransportError as exc:
        raise ConfigError(f"attachment {_short(url)}: download failed ({exc})") from exc
    raise ConfigError(f"attachment {_short(url)}: more than {MAX_REDIRECTS} redirects")
