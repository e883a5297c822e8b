"""`ProviderGateway` and the provider classes of the public AgentLoom, onto our Runtime.

Their script registers provider objects on a gateway (`register(provider, priority=...,
models=..., is_fallback=...)`) and hands the gateway to the engine. Here a provider
object is only a description (which vendor, which base URL, which key); each registration
becomes one endpoint of an `agentloom.routing.runtime.Runtime` (the first of a vendor
named after it, `openai`, a later one `openai-2`, ...), which gives the calls our retries,
breaker, limiter, pricing and HTTP transport.

Which registrations a call goes to is their rule, by model (`ProviderGateway.candidates`):
a model some registration lists under `models=` goes to the registrations that list it;
any other model to those whose `supports_model` takes it, then to the `is_fallback` ones;
each in priority order. The engine gets its clients from `ProviderGateway.clients`, which
pins the first candidate and makes the others its fallback chain on the runtime. Their
gateway never reads a step's provider, so a call naming a vendor (`config.provider:
openai`, the default of their files) is routed by its model too; a name of ours (`local`,
a workflow's `providers:` entry, `openai-2`) and a step with a `profile:` keep our
runtime's own resolution.

Their provider classes read their key and base URL from the environment when built
(`OPENAI_API_KEY`, `OLLAMA_BASE_URL`, ...), and so do these: that is the behaviour their
scripts rely on, and it happens when the script builds one, never on import.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentloom.errors import ConfigError, kind_of
from agentloom.pricing import Price, PriceTable
from agentloom.providers import vendor_endpoint
from agentloom.routing import FallbackEntry, Profile
from agentloom.routing.runtime import Runtime
from agentloom.transport import HttpTimeout

_THEIR_VENDORS = frozenset({"openai", "anthropic", "google", "gemini", "ollama"})
"""Provider names their files write (`config.provider`), which their gateway never reads:
a call naming one of them is routed by its model."""


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

    def supports_model(self, model: str) -> bool:
        """Whether their gateway would offer this provider a model nobody listed (their
        base class: any model)."""
        return True

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

    def supports_model(self, model: str) -> bool:
        return model.startswith(("gpt-", "o1", "o3", "o4"))  # their prefixes, merged


class AnthropicProvider(_CompatProvider):
    vendor = "anthropic"
    key_env = "ANTHROPIC_API_KEY"
    default_base_url = "https://api.anthropic.com"
    strip_suffixes = ("/v1",)

    def supports_model(self, model: str) -> bool:
        return "claude" in model


class GoogleProvider(_CompatProvider):
    vendor = "google"
    key_env = "GOOGLE_API_KEY"
    default_base_url = "https://generativelanguage.googleapis.com"
    strip_suffixes = ("/v1beta",)

    def supports_model(self, model: str) -> bool:
        return "gemini" in model


class OllamaProvider(_CompatProvider):
    vendor = "ollama"
    default_base_url = "http://localhost:11434"
    # supports_model: any model, as theirs (Ollama pulls what it lacks), so an Ollama
    # registered before a cloud provider takes that provider's unlisted models too.


@dataclass(slots=True)
class _Entry:
    provider: Any
    priority: float
    is_fallback: bool
    models: list[str]
    order: int
    """Its place among the registrations, which names its endpoint."""
    name: str = ""
    """Its endpoint's name in the runtime (given by `_endpoints`)."""
    section: str = ""
    """Its vendor's section of the price table (`openai` for `openai-2`)."""


class ProviderGateway:
    """The registered providers, in priority order; `runtime()` builds our Runtime over
    them and `clients(runtime)` routes each call as their gateway does."""

    def __init__(self, candidate_cache_max: int | None = None) -> None:
        self._entries: list[_Entry] = []
        self._registered = 0
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
        self._registered += 1
        self._entries.append(_Entry(provider, priority, is_fallback,
                                    list(dict.fromkeys(models or [])), self._registered))
        self._entries.sort(key=lambda e: e.priority)  # stable: ties keep their order
        self._runtime = None

    @property
    def providers(self) -> list[Any]:
        return [e.provider for e in self._entries]

    def runtime(self, *, default_provider: str | None = None) -> Any:
        """Our Runtime over the registered providers, one endpoint per registration (one
        per gateway, reused until a provider is registered)."""
        if self._runtime is None:
            self._runtime = Runtime(endpoints=self._endpoints(),
                                    default_provider=default_provider)
        return self._runtime

    def _endpoints(self) -> list[Any]:
        """One endpoint per registration, in the order they were made: the first of a
        vendor named after it, a later one `openai-2`, `openai-3`, ... (names each entry)."""
        taken: set[str] = set()
        endpoints: list[Any] = []
        for entry in sorted(self._entries, key=lambda e: e.order):
            endpoint = entry.provider.endpoint()
            name, n = endpoint.name, 1
            while name in taken:
                n += 1
                name = f"{endpoint.name}-{n}"
            taken.add(name)
            entry.name, entry.section = name, endpoint.name
            endpoints.append(endpoint if name == endpoint.name
                             else dataclasses.replace(endpoint, name=name))
        return endpoints

    def candidates(self, model: str) -> list[str]:
        """The endpoint names a call for `model` goes to, in order (their rule): the
        registrations listing it under `models=`, if any does; else those whose provider's
        `supports_model` takes it, then the `is_fallback` ones; each by priority."""
        if any(not e.name for e in self._entries):
            self._endpoints()
        listing = [e for e in self._entries if model in e.models]
        if listing:
            return [e.name for e in listing]
        serving = [e for e in self._entries if e.provider.supports_model(model)]
        return [e.name for e in serving] + [
            e.name for e in self._entries if e.is_fallback and e not in serving]

    def clients(self, runtime: Any) -> Any:
        """The client factory the engine runs on: `runtime` (this gateway's), each call
        routed to `candidates(model)`."""
        return _GatewayClients(self, runtime)

    def sections(self) -> dict[str, str]:
        """Endpoint name to its vendor's price-table section, for the registrations named
        otherwise (`openai-2` -> `openai`)."""
        if any(not e.name for e in self._entries):
            self._endpoints()
        return {e.name: e.section for e in self._entries if e.name != e.section}

    async def close(self) -> None:
        runtime, self._runtime = self._runtime, None
        if runtime is not None:
            await runtime.aclose()


class _GatewayClients:
    """A client factory over a gateway's runtime: a call's model picks its providers as
    their gateway picks them, the first pinned and the rest its fallback chain (each
    tried once unless a retry policy says more; any failure moves on, as in theirs).
    Every other attribute is the runtime's, so the engine configures and reads it as it
    does a runtime of its own."""

    def __init__(self, gateway: ProviderGateway, runtime: Any) -> None:
        self._gateway = gateway
        self._runtime = runtime

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # never the runtime's own (nor copy's probes)
            raise AttributeError(name)
        return getattr(self._runtime, name)

    def client(self, *, model: str | None = None, provider: str | None = None,
               fallback: Sequence[FallbackEntry] = (), retry: Any = None,
               budget: Any = None, **rest: Any) -> Any:
        runtime = self._runtime
        if (rest.get("profile") is not None or not self._gateway.providers
                or (provider is not None and provider not in _THEIR_VENDORS)):
            return runtime.client(model=model, provider=provider, fallback=fallback,
                                  retry=retry, budget=budget, **rest)
        model = model or runtime.default_model
        names = self._gateway.candidates(model)
        if not names:
            raise ConfigError(
                f"no provider registered on the gateway serves model {model!r} "
                f"(registered: {', '.join(type(p).__name__ for p in self._gateway.providers)}"
                f"); list it in register(..., models=[...]) or register a fallback provider")
        sections = self._gateway.sections()
        table = runtime.prices or PriceTable.default()
        prices = [_price(table, name, sections.get(name), model) for name in names]
        chain = [FallbackEntry(provider=name, model=model, pricing=price)
                 for name, price in zip(names[1:], prices[1:], strict=True)]
        options = {k: v for k, v in rest.items() if v is not None}
        if prices[0] is not None:
            # Our runtime prices a call by its endpoint's name; `openai-2` is priced as
            # `openai` (theirs prices by model) by a profile that carries the price and
            # nothing else (the endpoint's own timeout, not a profile's 60 s).
            options["profile"] = Profile(name=f"gateway:{names[0]}", pricing=prices[0])
            own = next((e.timeout for e in runtime.endpoints if e.name == names[0]), None)
            options.setdefault("timeout", own or HttpTimeout())
        return runtime.client(model=model, provider=names[0], fallback=[*chain, *fallback],
                              retry=retry, budget=budget, **options)


def _price(table: PriceTable, name: str, section: str | None, model: str) -> Price | None:
    """The price of a registration named apart from its vendor: its own section's, else
    its vendor's (None for a vendor-named one, which the runtime looks up itself)."""
    if section is None:
        return None
    return table.lookup(name, model) or table.lookup(section, model)
