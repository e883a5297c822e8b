"""Vendor tools (spec 004): tools the provider runs itself, such as web search.

AgentLoom runs nothing for them; they go to the provider unchanged in
`ModelRequest.vendor_tools`. This only checks, at load time, that each one is a JSON
object (a bare string is taken as `{"type": name}`), so a typo fails early and the
request stays serialisable.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from agentloom.errors import ConfigError


def normalize_vendor_tools(items: Iterable[Any] | None) -> tuple[dict[str, Any], ...]:
    if items is None:
        return ()
    if isinstance(items, dict | str):
        items = [items]
    out: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            item = {"type": item}
        if not isinstance(item, dict) or not item:
            raise ConfigError(
                f"vendor_tools[{i}]: expected an object such as "
                f'{{"type": "web_search"}}, got {item!r}'
            )
        try:
            json.dumps(item)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"vendor_tools[{i}]: not JSON: {exc}") from None
        out.append(item)
    return tuple(out)
