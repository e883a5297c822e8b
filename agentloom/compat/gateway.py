"""`ProviderGateway` and the provider classes of the public AgentLoom, onto our Runtime.

Their script registers provider objects on a gateway (`register(provider, priority=...,
models=..., is_fallback=...)`) and hands the gateway to the engine. Here a provider
object is only a description (which vendor, which base URL, which key); the gateway turns
the registered ones into our endpoints, in priority order, and the engine runs on one
`agentloom.routing.runtime.Runtime` built from them: our retries, breaker, limiter,
pricing and HTTP transport.

Their provider classes read their key and base URL from the environment when built
(`OPENAI_API_KEY`, `OLLAMA_BASE_URL`, ...), and so do these: that is the behaviour their
scripts rely on, and it happens when the script builds one, never on import.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from agentloom.errors import kind_of
from agentloom.providers import vendor_endpoint
from agentloom.routing.runtime import Runtime


class _CompatProvider:
    """A provider as their scripts build one: a vendor, a base URL and a key."""

    vendor = ""
    key_env: str | None = None
    default_base_url = ""
    strip_suffixes: tuple[str, ...] = ()
    """Path suffixes their base URLs carry and our presets add themselves."""

    def __init__(self, api_key: str | None = "", base_url: str | None = "",
                 **_: Any) -> None:
        for arg, value in (("api_key", api_key), ("base_url", base_url)):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{type(self).__name__}: {arg} must be text (or None for "
                                f"the default), got {kind_of(value)}")
        self.name = self.vendor
        self.api_key = api_key or (os.environ.get(self.key_env, "") if self.key_env else "")
        url = (base_url or os.environ.get(f"{self.vendor.upper()}_BASE_URL", "")
               or self.default_base_url).rstrip("/")
        for suffix in self.strip_suffixes:
            if url.endswith(suffix):
                url = url[: -len(suffix)]
        self.base_url = url

    def endpoint(self, models: list[str] | None = None) -> Any:
        vendor = "gemini" if self.vendor == "google" else self.vendor
        return vendor_endpoint(vendor, base_url=self.base_url or None,
                               api_key=self.api_key or None, models=models or None)

    async def close(self) -> None:
        """Their providers own an HTTP client; ours share the runtime's transport."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.base_url}>"


class OpenAIProvider(_CompatProvider):
    vendor = "openai"
    key_env = "OPENAI_API_KEY"
    default_base_url = "https://api.openai.com/v1"

    def __init__(self, api_key: str | None = "", base_url: str | None = "",
                 **kw: Any) -> None:
        super().__init__(api_key, base_url, **kw)
        if not self.base_url.endswith("/v1"):
            self.base_url += "/v1"  # as theirs: an SDK-style URL gets the suffix


class AnthropicProvider(_CompatProvider):
    vendor = "anthropic"
    key_env = "ANTHROPIC_API_KEY"
    default_base_url = "https://api.anthropic.com"
    strip_suffixes = ("/v1",)


class GoogleProvider(_CompatProvider):
    vendor = "google"
    key_env = "GOOGLE_API_KEY"
    default_base_url = "https://generativelanguage.googleapis.com"
    strip_suffixes = ("/v1beta",)


class OllamaProvider(_CompatProvider):
    vendor = "ollama"
    default_base_url = "http://localhost:11434"


@dataclass(slots=True)
class _Entry:
    provider: Any
    priority: float
    is_fallback: bool
    models: list[str]


class ProviderGateway:
    """The registered providers, in priority order; `runtime()` is what the engine uses."""

    def __init__(self, candidate_cache_max: int | None = None) -> None:
        self._entries: list[_Entry] = []
        self._runtime: Any = None

    def register(self, provider: Any, priority: float = 0, is_fallback: bool = False,
                 models: list[str] | None = None, **_limits: Any) -> None:
        """Add a provider. Their per-provider RPM/TPM and breaker arguments are accepted;
        our runtime's own limits and breaker apply (docs/compat-examples.md)."""
        if isinstance(provider, type):
            raise TypeError(f"register: {provider.__name__} is a class; register a provider "
                            f"built from it, e.g. gateway.register({provider.__name__}())")
        if not hasattr(provider, "endpoint"):
            raise TypeError(f"not a provider: {provider!r} (use agentloom.providers.*Provider)")
        if type(priority) not in (int, float) or priority != priority:
            raise TypeError(f"register: priority must be a number (lower is tried first), "
                            f"got {kind_of(priority)} {priority!r}")
        if type(is_fallback) is not bool:
            raise TypeError(f"register: is_fallback must be True or False, got "
                            f"{kind_of(is_fallback)}")
        if models is not None and (not isinstance(models, list | tuple)
                                   or not all(isinstance(m, str) and m for m in models)):
            raise TypeError(f"register: models must be a list of model names (e.g. "
                            f"['gpt-4o']), got {kind_of(models)} {models!r}")
        self._entries.append(_Entry(provider, priority, is_fallback, list(models or [])))
        self._entries.sort(key=lambda e: e.priority)
        self._runtime = None

    @property
    def providers(self) -> list[Any]:
        return [e.provider for e in self._entries]

    def runtime(self, *, default_provider: str | None = None) -> Any:
        """Our Runtime over the registered providers (one per gateway, reused)."""
        if self._runtime is None:
            endpoints: dict[str, Any] = {}
            for entry in self._entries:
                endpoint = entry.provider.endpoint()
                endpoints.setdefault(endpoint.name, endpoint)
            self._runtime = Runtime(endpoints=list(endpoints.values()),
                                    default_provider=default_provider)
        return self._runtime

    async def close(self) -> None:
        runtime, self._runtime = self._runtime, None
        if runtime is not None:
            await runtime.aclose()
