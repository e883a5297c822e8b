"""Vendor presets as data: base URL, wire protocol and key variable per provider name.

A vendor is an entry, not a module: `generic_openai` is the OpenAI protocol at a base URL
you give, `local` is the OpenAI protocol at the embedded model's server. The library never
reads the environment; the CLI passes `os.environ` to `endpoints_from_env`, which returns
only the providers whose key (or host) is set (`OPENAI_API` picks OpenAI's API:
`responses` or `chat_completions`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from agentloom._record import FrozenRecord, frozen_record, set_field
from agentloom.errors import ConfigError
from agentloom.providers._base import Endpoint
from agentloom.providers.profiles import APIS


@frozen_record(kw_only=False)
class _Preset(FrozenRecord):
    """A vendor's protocol, default base URL and the environment variable of its key."""

    protocol: str
    base_url: str | None
    key_env: str | None

    def __init__(self, protocol: str, base_url: str | None, key_env: str | None) -> None:
        set_field(self, "protocol", protocol)
        set_field(self, "base_url", base_url)
        set_field(self, "key_env", key_env)


_PRESETS: dict[str, _Preset] = {
    "openai": _Preset("openai", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    "generic_openai": _Preset("openai", None, None),
    "anthropic": _Preset("anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY"),
    "gemini": _Preset("gemini", "https://generativelanguage.googleapis.com", "GEMINI_API_KEY"),
    "ollama": _Preset("ollama", "http://127.0.0.1:11434", None),
    "local": _Preset("llamacpp", None, None),
    "llamacpp": _Preset("llamacpp", None, None),
}

VENDORS: tuple[str, ...] = tuple(_PRESETS)


def vendor_endpoint(
    name: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    headers: Mapping[str, str] | None = None,
    models: tuple[str, ...] | list[str] | None = None,
) -> Endpoint:
    """The endpoint of a known vendor, with your overrides.

    A vendor that needs a key (`openai`, `anthropic`, `gemini`) keeps its key's variable
    name in `api_key_env`, so a call without a key fails naming it. `generic_openai` and
    `local` need a `base_url`; their key is optional.
    """
    preset = _PRESETS.get(name)
    if preset is None:
        raise ConfigError(
            f"unknown provider {name!r}; known providers: {', '.join(sorted(_PRESETS))}"
        )
    url = base_url or preset.base_url
    if not url:
        raise ConfigError(f"provider {name!r} needs a base_url (e.g. http://host:8000/v1)")
    return Endpoint(
        name=name,
        protocol=preset.protocol,
        base_url=url.rstrip("/"),
        api_key=api_key or None,
        api_key_env=preset.key_env,
        headers=dict(headers or {}),
        models=tuple(models) if models is not None else None,
    )


def endpoints_from_env(env: Mapping[str, str]) -> list[Endpoint]:
    """Endpoints for the vendors configured in `env` (the CLI passes `os.environ`), in the
    order openai, anthropic, gemini, ollama. A vendor without its key or host is left out."""
    out: list[Endpoint] = []
    if key := env.get("OPENAI_API_KEY"):
        openai = vendor_endpoint("openai", api_key=key, base_url=env.get("OPENAI_BASE_URL"))
        api = env.get("OPENAI_API")  # responses | chat_completions; unset: per model
        out.append(dataclasses.replace(openai, api=_openai_api(api)) if api else openai)
    if key := env.get("ANTHROPIC_API_KEY"):
        out.append(
            vendor_endpoint("anthropic", api_key=key, base_url=env.get("ANTHROPIC_BASE_URL"))
        )
    if key := env.get("GEMINI_API_KEY") or env.get("GOOGLE_API_KEY"):
        out.append(vendor_endpoint("gemini", api_key=key, base_url=env.get("GEMINI_BASE_URL")))
    if host := env.get("OLLAMA_HOST"):
        out.append(vendor_endpoint("ollama", base_url=_ollama_url(host)))
    return out


def _openai_api(api: str) -> str:
    if api not in APIS:
        raise ConfigError(f"OPENAI_API must be one of {', '.join(APIS)}, not {api!r}")
    return api


def _ollama_url(host: str) -> str:
    """OLLAMA_HOST may be `host`, `host:port` or a URL; Ollama's default port is 11434."""
    from urllib.parse import urlsplit

    if "://" not in host:
        host = f"http://{host}"
    parts = urlsplit(host)
    netloc = parts.netloc.replace("0.0.0.0", "127.0.0.1")  # a bind address, not a target
    if parts.port is None:
        netloc += ":11434"
    return f"{parts.scheme}://{netloc}{parts.path}".rstrip("/")
