"""A workflow's `providers:` entries, parsed into `Endpoint`s.

Each entry names a provider and says where it lives: `base_url`, `api_key_env` (looked
up in the environment mapping the runtime was given, never in `os.environ`), `api_key`,
`headers`, `type`/`protocol` (the wire protocol, `openai` by default) and `models` (the
models it serves). A vendor's own name (`openai`, `anthropic`, ...) starts from that
vendor's preset, so `openai: {base_url: ...}` only moves OpenAI elsewhere.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from agentloom.errors import ConfigError
from agentloom.providers import VENDORS, Endpoint, vendor_endpoint
from agentloom.providers.profiles import APIS

if TYPE_CHECKING:
    from agentloom.routing._profiles import Profile

PROVIDER_FIELDS = frozenset(
    {"base_url", "api_key_env", "api_key", "headers", "type", "protocol", "models",
     "max_reply_bytes", "api"}
)
_GENERIC = (None, "openai", "generic_openai")


def endpoint_from_config(
    name: str,
    config: Any,
    *,
    env: Mapping[str, str],
    existing: Endpoint | None = None,
) -> Endpoint:
    """The endpoint of `providers.<name>`. A key named by `api_key_env` but missing from
    `env` leaves the key empty with `api_key_env` set, so the first call fails naming
    the variable (a workflow may list providers it does not use)."""

    where = f"providers.{name}"
    if not isinstance(config, Mapping):
        raise ConfigError(f"{where}: expected a mapping (base_url, api_key_env, ...)")
    unknown = sorted(set(config) - PROVIDER_FIELDS)
    if unknown:
        raise ConfigError(
            f"{where}: unknown field(s) {unknown}; allowed: {', '.join(sorted(PROVIDER_FIELDS))}"
        )
    kind = config.get("type") or config.get("protocol")
    key_env = config.get("api_key_env")
    api_key = config.get("api_key")
    if key_env is not None:
        if not isinstance(key_env, str) or not key_env:
            raise ConfigError(f"{where}.api_key_env: expected an environment variable name")
        api_key = api_key or env.get(key_env) or None
    if api_key is not None and not isinstance(api_key, str):
        raise ConfigError(f"{where}.api_key: expected text")
    models = config.get("models")
    if models is not None and (
        not isinstance(models, list | tuple) or not all(isinstance(m, str) for m in models)
    ):
        raise ConfigError(f"{where}.models: expected a list of model names")
    headers = config.get("headers") or {}
    if not isinstance(headers, Mapping) or not all(isinstance(v, str) for v in headers.values()):
        raise ConfigError(f"{where}.headers: expected a mapping of header name -> text")
    api = config.get("api")
    if api is not None and not _valid_api(api):
        raise ConfigError(f"{where}.api: expected responses or chat_completions, for every "
                          "model or as a mapping of model -> api")
    preset = name if name in VENDORS else ("generic_openai" if kind in _GENERIC else kind)
    if preset not in VENDORS:
        named = "type" if config.get("type") else "protocol"  # the field the entry wrote
        raise ConfigError(
            f"{where}.{named}: unknown protocol {kind!r}; expected one of "
            f"openai, anthropic, gemini, ollama, llamacpp"
        )
    given_url = config.get("base_url")
    if given_url is not None and not _http_url(given_url):
        # `localhost:8000/v1` (no scheme) passed every check and failed each call, after
        # its retries, as a NonHttpUrlClientError.
        raise ConfigError(f"{where}.base_url: expected an http:// or https:// URL with a "
                          f"host (e.g. http://localhost:8000/v1), got {str(given_url)[:200]!r}")
    base_url = given_url or (existing.base_url if existing else None)
    try:
        endpoint = vendor_endpoint(
            preset, base_url=base_url, api_key=api_key, headers=headers, models=models
        )
    except ConfigError as exc:
        if not base_url:  # the one thing a preset refuses: it has no URL of its own
            raise ConfigError(
                f"{where}.base_url: missing; only openai, anthropic, gemini and ollama have "
                "one of their own (e.g. http://host:8000/v1)") from None
        raise ConfigError(f"{where}: {exc}") from None
    if api_key is None and existing is not None:
        endpoint = dataclasses.replace(endpoint, api_key=existing.api_key)
    max_reply = config.get("max_reply_bytes")
    if max_reply is not None and (type(max_reply) is not int or max_reply <= 0):
        raise ConfigError(f"{where}.max_reply_bytes: expected a positive number of bytes")
    if max_reply is None and existing is not None:
        max_reply = existing.max_reply_bytes
    return dataclasses.replace(endpoint, name=name, api_key_env=key_env or endpoint.api_key_env,
                               max_reply_bytes=max_reply,
                               api=dict(api) if isinstance(api, Mapping) else api)


def profile_endpoint(profile: Profile) -> tuple[str, dict[str, Any]]:
    """The endpoint a profile with a `base_url` stands for, as the name the runtime adds
    it under and its `providers:` entry: the profile's provider names the wire protocol
    (openai by default). The runtime adds it at the profile's first call; a workflow's
    load checks it through `endpoint_from_config` first."""
    config: dict[str, Any] = {"base_url": profile.base_url, "type": profile.provider or "openai"}
    if profile.api_key_env:
        config["api_key_env"] = profile.api_key_env
    return f"profile:{profile.name}", config


def _http_url(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        parts = urlsplit(value)
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # an unclosed `[`, a port past 65535: no URL either
        return False


def _valid_api(api: Any) -> bool:
    values = list(api.values()) if isinstance(api, Mapping) else [api]
    return all(v in APIS for v in values)
