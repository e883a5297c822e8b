"""`agentloom info`: what this installation can do, for bug reports and first runs.

Versions (AgentLoom, Python, platform), the providers the environment configures (names,
where they point and which variable holds the key, never a key), and the optional
extras that are installed. Extras are found with `importlib.util.find_spec` and their
versions read from package metadata, so nothing heavy is imported to answer.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from typing import Any

from agentloom.cli._exit import EXIT_OK

EXTRAS: dict[str, tuple[str, str]] = {
    # extra: (module to look for, distribution to read the version of)
    "local": ("xllamacpp", "xllamacpp"),
    "mcp": ("mcp", "mcp"),
    "postgres": ("psycopg", "psycopg"),
    "otel": ("opentelemetry.sdk", "opentelemetry-sdk"),
    "ray": ("ray", "ray"),
}
_ENV_VARS = ("AGENTLOOM_PROVIDER", "AGENTLOOM_MODEL", "AGENTLOOM_LOCAL_MODEL_PATH")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "info", help="versions, configured providers and installed extras")
    p.add_argument("--json", action="store_true", help="print the facts as JSON")
    return p


def run(args: argparse.Namespace) -> int:
    facts = collect(os.environ)
    if args.json:
        sys.stdout.write(json.dumps(facts, indent=2) + "\n")
    else:
        sys.stdout.write(render(facts))
    return EXIT_OK


def collect(env: Mapping[str, str]) -> dict[str, Any]:
    """Everything `info` shows. Reads `env` for provider names and the settings above;
    key values are never copied out of it."""
    import platform

    from agentloom._version import __version__

    return {
        "agentloom": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "providers": _providers(env),
        "settings": {name: env[name] for name in _ENV_VARS if env.get(name)},
        "extras": {name: _version_of(module, dist) for name, (module, dist) in EXTRAS.items()},
        "local_model": _local_model(env),
        "isolation": _isolation(),
    }


def _isolation() -> dict[str, Any]:
    """How shell_command's children would be isolated here (bubblewrap, probed)."""
    from agentloom.tools import detect_bwrap

    found = detect_bwrap()
    return {"bwrap": found.path, "version": found.version, "available": found.available,
            "problem": found.problem}


def _providers(env: Mapping[str, str]) -> list[dict[str, Any]]:
    from agentloom.providers import endpoints_from_env

    out = []
    for endpoint in endpoints_from_env(env):
        out.append({
            "name": endpoint.name,
            "protocol": str(getattr(endpoint, "protocol", "") or ""),
            "base_url": _without_userinfo(str(getattr(endpoint, "base_url", "") or "")),
            "key": ("set" if getattr(endpoint, "api_key", None) else "none"),
        })
    return out


def _without_userinfo(url: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return "(unparsable URL)"
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _version_of(module: str, dist: str) -> str | None:
    import importlib.metadata
    import importlib.util

    try:
        if importlib.util.find_spec(module) is None:
            return None
    except (ImportError, ValueError):
        return None
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "installed"


def _local_model(env: Mapping[str, str]) -> str | None:
    """The embedded model's file if it is there, else None."""
    from pathlib import Path

    custom = env.get("AGENTLOOM_LOCAL_MODEL_PATH")
    if custom:
        return custom if Path(custom).is_file() else None
    from agentloom.errors import ConfigError
    from agentloom.routing.local import find_model_path

    try:
        return str(find_model_path())
    except ConfigError:
        return None


def render(facts: dict[str, Any]) -> str:
    lines = [f"agentloom {facts['agentloom']} · Python {facts['python']} · "
             f"{facts['platform']}", "providers configured by the environment:"]
    if facts["providers"]:
        for p in facts["providers"]:
            lines.append(f"  {p['name']:<12} {p['protocol']:<10} {p['base_url']}  "
                         f"(key {p['key']})")
    else:
        lines.append("  none (set OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY or "
                     "OLLAMA_HOST); runs use the local model")
    for name, value in facts["settings"].items():
        lines.append(f"  {name}={value}")
    lines.append("extras:")
    for name, version in facts["extras"].items():
        lines.append(f"  {name:<9} {version or 'not installed'}")
    local = facts["local_model"]
    lines.append(f"local model: {local or 'not installed'}")
    iso = facts.get("isolation") or {}
    if iso.get("available"):
        lines.append(f"isolation: bubblewrap {iso.get('version') or ''} at {iso['bwrap']} "
                     "(shell_command runs isolated; sandbox.isolation: auto uses it)")
    else:
        lines.append(f"isolation: none ({iso.get('problem')}); shell_command is refused "
                     "unless sandbox.isolation: none")
    return "\n".join(lines) + "\n"
