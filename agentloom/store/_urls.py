"""Store URLs as messages show them: without their password."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

_SECRET_PARAMS = frozenset({"password", "sslpassword"})
"""Query parameters libpq reads a password from (`?password=...` works as well as
`user:pw@`)."""


def shown_url(url: str, *, drop: bool = False) -> str:
    """A store URL fit for messages, logs and hints: its password, in the user part or
    in the query, replaced with `***`; with `drop`, left out (a command to copy then
    takes the password from PGPASSWORD or ~/.pgpass). A path is shown as it is."""
    if "://" not in url:
        return url
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "<a store URL that does not parse>"
    changed = password is not None
    if password is not None:
        user, _, host = parts.netloc.rpartition("@")
        name = user.partition(":")[0]
        parts = parts._replace(netloc=(f"{name}@{host}" if name else host) if drop
                               else f"{name}:***@{host}")
    if parts.query:
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        if any(k.lower() in _SECRET_PARAMS for k, _ in pairs):
            kept = [(k, v) for k, v in pairs if k.lower() not in _SECRET_PARAMS] if drop \
                else [(k, "***" if k.lower() in _SECRET_PARAMS else v) for k, v in pairs]
            parts = parts._replace(query=urlencode(kept, safe="*"))
            changed = True
    # Rebuilt only when changed: a round trip turns `sqlite:////abs` into `sqlite://abs`.
    return urlunsplit(parts) if changed else url
