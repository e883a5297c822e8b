"""Credentials written into a workflow file, which goes wherever the file goes (a git
repository, a batch's workers, a bug report): `validate` and `run` warn and name the
field that would read it from a variable instead. Warnings, not errors: the file runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentloom.redact import SENSITIVE_NAMES

if TYPE_CHECKING:
    from agentloom.workflow.load.yaml_source import Marks

WRITTEN_KEY = ("a key written in the file goes wherever the file goes (git, a batch's "
               "workers); name the variable that holds it with {instead}")


def provider_key_warnings(data: dict[str, Any], marks: Marks, filename: str) -> list[str]:
    """One warning per `providers.<name>.api_key` given as text."""
    providers = data.get("providers")
    if not isinstance(providers, dict):
        return []
    out = []
    for name, entry in providers.items():
        if isinstance(entry, dict) and isinstance(entry.get("api_key"), str) \
                and entry["api_key"]:
            line = marks.line_of(entry, "api_key") or marks.line_of(providers, name)
            out.append(f"{filename}:{line}: warning: providers.{name}.api_key: "
                       + WRITTEN_KEY.format(instead="api_key_env"))
    return out


def credential_headers(headers: dict[str, str]) -> list[str]:
    """The header names whose value is a credential (Authorization, X-API-Key, ...)."""
    return [h for h, v in headers.items() if h.lower() in SENSITIVE_NAMES and v]
