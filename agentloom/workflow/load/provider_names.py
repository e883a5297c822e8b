"""The provider names a workflow file's top level writes (`config.provider`, an agent's
`provider`), checked against the built-in providers and the file's own `providers:`.

A step's `provider:` and its fallback entries are checked by the step type; these two
name a provider for every step (or every turn of an agent), and a typo in them was
found only by the command line's key check or at the first call, without a line. An
unknown name is a warning at its line, not an error: from Python, a client factory of
one's own may serve any name (the command line's runtime refuses it at the call).
"""

from __future__ import annotations

from typing import Any

from agentloom.workflow.load.yaml_source import Marks
from agentloom.workflow.schema.workflow import (
    WorkflowDefinition,
    known_providers,
    unknown_provider,
)


def provider_name_warnings(definition: WorkflowDefinition, data: dict[str, Any],
                           marks: Marks, filename: str) -> list[str]:
    """One warning per top-level provider name that names no provider, at its line."""
    known = known_providers(definition.providers)
    found: list[tuple[str, Any, str]] = []  # (name, the mapping it is in, field)
    config = data.get("config")
    if definition.config.provider is not None and isinstance(config, dict):
        found.append((definition.config.provider, config, "config.provider"))
    agents = data.get("agents")
    for name, agent in definition.agents.items():
        raw = agents.get(name) if isinstance(agents, dict) else None
        if agent.provider is not None and isinstance(raw, dict):
            found.append((agent.provider, raw, f"agents.{name}.provider"))
    out: list[str] = []
    for provider, where, field in found:
        if provider in known:
            continue
        out.append(f"{filename}:{marks.line_of(where, 'provider')}: warning: {field}: "
                   f"{unknown_provider(provider, known)}")
    return out
