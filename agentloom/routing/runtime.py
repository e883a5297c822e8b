"""The Runtime: turns a model name (or a profile) into a working `ModelClient`.

It owns what must be shared by every call of a process: one HTTP transport (created on
first use), one embedded local model server (started on first use of `local`), and the
circuit breakers and rate limiters, so a batch of many runs sees one breaker per endpoint.

Which providers a model name goes to (pinned, by family, the embedded model as the offline
stand-in) is decided in `_resolve`, over the tables the runtime keeps; its rules are
written down there.

The library never reads `os.environ`: `Runtime.from_env(os.environ)` is the CLI's door.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from agentloom._clock import SYSTEM_CLOCK, Clock
from agentloom.errors import ConfigError
from agentloom.pricing import PriceTable
from agentloom.providers import (
    Endpoint,
    ModelClient,
    endpoints_from_env,
    get_protocol,
)
from agentloom.routing import (
    Breakers,
    BreakerSettings,
    Candidate,
    FallbackEntry,
    Limiters,
    Profile,
    RateLimit,
    RetryPolicy,
    Router,
    RunBudget,
)
from agentloom.routing._client_table import ProviderClients
from agentloom.routing._lazy_client import LazyClient, UnusableClient
from agentloom.routing._providers import endpoint_from_config, profile_endpoint
from agentloom.routing._resolve import (
    ALIASES,
    pinned_endpoint,
    provider_default_model,
    resolve_model,
)
from agentloom.routing._resolve import DEFAULT_MODELS as DEFAULT_MODELS
from agentloom.routing._resolve import LOCAL as LOCAL
from agentloom.routing._resolve import LOCAL_MODEL as LOCAL_MODEL
from agentloom.routing._resolve import LOCAL_PROTOCOL as LOCAL_PROTOCOL
from agentloom.routing.local import LocalModelServer
from agentloom.transport import HttpTimeout, Transport


class Runtime:
    """Where model calls come from.

        async with Runtime.from_env(os.environ) as runtime:
            client = runtime.client(model="gpt-4o-mini")
            response = await client.complete(request)

    Args:
        endpoints: configured providers, in priority order.
        transport: an HTTP transport to use; the runtime closes only one it created,
            unless `owns_transport=True` hands it over.
        prices: the price table (default: the packaged one).
        breaker: circuit breaker settings for every endpoint.
        rate_limits: `{provider: RateLimit}`; providers not named are not limited.
        retry: the default retry policy of clients (2 retries); pass
            `RetryPolicy(max_retries=0)` per client where a caller retries by itself.
        env: the environment mapping `api_key_env` names are looked up in.
        local_stand_in: the endpoint `local` calls go to instead of starting the
            embedded model (a replay serves them from its recording).
    """

    revision: int = 0
    """Bumped by every change that can alter what `client(...)` builds (a provider added,
    a rate limit, prices, breaker thresholds, `aclose`): a caller may keep a client it
    got while this, `prices`, `retry` and `clock` are unchanged (a workflow step keeps
    its router across runs so). Declared on the class, so a wrapper that reads through
    to a runtime (and hands out clients of its own) is not taken for one."""

    def __init__(
        self,
        *,
        endpoints: Sequence[Endpoint] = (),
        default_model: str | None = None,
        default_provider: str | None = None,
        transport: Transport | None = None,
        owns_transport: bool | None = None,
        clock: Clock = SYSTEM_CLOCK,
        local_model_path: str | None = None,
        prices: PriceTable | None = None,
        breaker: BreakerSettings | None = None,
        rate_limits: Mapping[str, RateLimit] | None = None,
        retry: RetryPolicy | None = None,
        env: Mapping[str, str] | None = None,
        local_stand_in: Endpoint | None = None,
    ) -> None:
        self._endpoints: dict[str, Endpoint] = {}
        self._given: dict[str, dict[str, Any]] = {}
        """Workflow `providers:` entries added by `use_providers`, by name."""
        self._implicit: dict[str, Endpoint] = {}
        """Endpoints used only when pinned (Ollama at its default address)."""
        for endpoint in endpoints:
            self._endpoints[endpoint.name] = endpoint
        self._default_model = default_model or None
        self._default_provider = (
            ALIASES.get(default_provider, default_provider) if default_provider else None
        )
        self._transport = transport
        self._owns_transport = transport is None if owns_transport is None else owns_transport
        self.clock = clock
        self.local_model_path = local_model_path
        self._local_stand_in = local_stand_in
        self.prices = prices
        self.retry = retry or RetryPolicy()
        self.breakers = Breakers(breaker, clock=clock)
        self.limiters = Limiters(dict(rate_limits or {}), clock=clock)
        self._env: dict[str, str] = dict(env or {})
        self._local: LocalModelServer | None = None
        self._local_lock: asyncio.Lock | None = None
        self._provider_clients = ProviderClients()
        self._closed = False
        self.revision = 0

    @classmethod
    def from_env(cls, env: Mapping[str, str], **kw: Any) -> Runtime:
        """Providers from the usual variables (OPENAI_API_KEY, OPENAI_BASE_URL,
        ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, GEMINI_API_KEY/GOOGLE_API_KEY, OLLAMA_HOST)
        and AGENTLOOM_PROVIDER, AGENTLOOM_MODEL, AGENTLOOM_LOCAL_MODEL_PATH. Keyword
        arguments win over what the mapping says."""

        if not isinstance(env, Mapping):
            # `from_env("gpt-4o-mini")` reads as natural and would fail deep inside with
            # "'str' object has no attribute 'get'".
            raise TypeError(
                f"from_env takes the environment as a mapping (e.g. os.environ), not "
                f"{type(env).__name__}; give the model as model=..., e.g. "
                f"from_env(os.environ, model='gpt-4o-mini')")
        kw.setdefault("endpoints", endpoints_from_env(env))
        kw.setdefault("default_model", env.get("AGENTLOOM_MODEL") or None)
        kw.setdefault("default_provider", env.get("AGENTLOOM_PROVIDER") or None)
        kw.setdefault("local_model_path", env.get("AGENTLOOM_LOCAL_MODEL_PATH") or None)
        kw.setdefault("env", env)
        return cls(**kw)

    # --- configuration -----------------------------------------------------------------

    @property
    def endpoints(self) -> tuple[Endpoint, ...]:
        return tuple(self._endpoints.values())

    @property
    def env(self) -> Mapping[str, str]:
        """The variables this runtime was given (`from_env`'s mapping): where a workflow's
        `*_env` fields (a webhook's secret, say) are looked up."""
        return self._env

    @property
    def default_provider(self) -> str:
        """The provider a call without one goes to: the configured default, else the first
        configured endpoint, else `local`."""
        if self._default_provider:
            return self._default_provider
        return next(iter(self._endpoints), LOCAL)

    @property
    def answers_locally_unasked(self) -> bool:
        """True when no provider is configured or chosen: every call then goes to the
        embedded model, whatever model it names (the CLI says so, once)."""
        return not self._endpoints and not self._default_provider

    @property
    def default_model(self) -> str:
        """AGENTLOOM_MODEL, else the default provider's default model."""
        if self._default_model:
            return self._default_model
        return provider_default_model(self._endpoints, self.default_provider)

    @property
    def known_providers(self) -> frozenset[str]:
        """Names a workflow may use: configured endpoints, the vendors, `local`."""
        return (
            frozenset(self._endpoints)
            | frozenset(DEFAULT_MODELS)
            | frozenset(ALIASES)
            | {"generic_openai"}
        )

    def add_provider(self, name: str, config: Mapping[str, Any]) -> Endpoint:
        """Add (or replace) a provider from a workflow's `providers:` entry: base_url,
        api_key_env (looked up in this runtime's env), api_key, headers, type/protocol,
        models. A vendor name (`openai`, ...) starts from the vendor's preset."""
        endpoint = endpoint_from_config(
            name, config, env=self._env, existing=self._endpoints.get(name)
        )
        self._endpoints[name] = endpoint
        self.revision += 1
        return endpoint

    def add_providers(self, providers: Mapping[str, Mapping[str, Any]] | None) -> None:
        for name, config in (providers or {}).items():
            self.add_provider(str(name), config)

    def use_providers(self, providers: Mapping[str, Mapping[str, Any]], *,
                      replace: bool = True) -> None:
        """Add a workflow's `providers:` entries, each unless this runtime holds it from
        the same entry already: every run of a file (and of the files it names) hands
        them over, and a provider that didn't change keeps its clients.

        `replace=False` (a nested file's) only adds: a provider the runtime already
        serves otherwise (from the environment, or the top-level file) is a ConfigError,
        since changing it would re-point the run's own calls, and their key, elsewhere."""
        for name, config in providers.items():
            if self._given.get(name) == config:
                continue
            if not replace and name in self._endpoints:
                raise ConfigError(
                    f"provider {name!r} is declared here otherwise than the run already "
                    "has it; a nested workflow file may add providers, not change the "
                    "run's (give it another name)")
            self.add_provider(str(name), config)
            self._given[name] = dict(config)

    def set_rate_limit(self, provider: str, limit: RateLimit) -> None:
        """Limit a provider (RateLimit() turns its limit off); workflow or CLI setting.
        The same limit again changes nothing: the provider's window goes on counting."""
        if self.limiters.set(provider, limit):
            self.revision += 1

    def set_prices(self, prices: PriceTable) -> None:
        """The price table of clients made from now on (workflow `config.prices`, --prices)."""
        self.prices = prices
        self.revision += 1

    def set_breaker(self, settings: BreakerSettings) -> None:
        """Circuit breaker thresholds for every endpoint (workflow setting)."""
        self.breakers.configure(settings)
        self.revision += 1

    def breaker_snapshot(self) -> dict[str, dict[str, Any]]:
        """Each endpoint's breaker state, for run summaries."""
        return self.breakers.snapshot()

    # --- resolution --------------------------------------------------------------------

    def resolve(
        self,
        model: str | None = None,
        provider: str | None = None,
        *,
        use_default_provider: bool = True,
    ) -> list[tuple[str, str]]:
        """`(provider, model)` pairs a call would try, in order (no fallback entries).
        A fallback entry without a provider passes `use_default_provider=False`: it goes
        to whoever serves its model, not to the primary's default provider."""
        return resolve_model(
            self._endpoints, self._implicit, model, provider,
            default_provider=self._default_provider, default_model=self._default_model,
            use_default_provider=use_default_provider,
        )

    # --- clients -----------------------------------------------------------------------

    def client(
        self,
        *,
        model: str | None = None,
        provider: str | None = None,
        fallback: Sequence[FallbackEntry] = (),
        retry: RetryPolicy | None = None,
        budget: RunBudget | None = None,
        timeout: HttpTimeout | None = None,
        profile: Profile | None = None,
    ) -> Router:
        """A ModelClient for this model: its serving providers, then each fallback
        entry, each with retries, breaker, limiter, budget and cost. Arguments given
        here win over the profile's."""
        params: Mapping[str, Any] = {}
        headers: Mapping[str, str] = {}
        max_tokens = None
        price = None
        if profile is not None:
            model = model or profile.model
            provider = provider or profile.provider
            fallback = fallback or profile.fallback
            retry = retry or profile.retry
            if timeout is None and profile.timeout is not None:
                timeout = HttpTimeout(total=profile.timeout)
            params, headers = profile.params, profile.headers
            max_tokens, price = profile.max_tokens, profile.pricing
            if profile.base_url:
                provider = self._profile_endpoint(profile).name
        policy = retry or self.retry
        candidates = [
            self._candidate(
                p,
                m,
                policy=None,
                timeout=timeout,
                params=params,
                headers=headers,
                max_tokens=max_tokens,
                price=price,
            )
            for p, m in self.resolve(model, provider)
        ]
        for entry in fallback:
            try:
                resolved = self.resolve(entry.model, entry.provider, use_default_provider=False)
                built = [
                    self._candidate(
                        p,
                        m,
                        policy=entry.retry,
                        timeout=timeout,
                        params=entry.params,
                        headers=entry.headers,
                        max_tokens=entry.max_tokens,
                        price=entry.pricing,
                    )
                    for p, m in resolved
                ]
            except ConfigError as exc:
                # A fallback that can't be used (its key isn't set, say) must not stop a
                # primary that works: the router skips it, with this reason, if reached.
                built = [Candidate(provider=entry.provider or "fallback",
                                   model=entry.model or "", client=UnusableClient(),
                                   unavailable=str(exc))]
            candidates.extend(built)
        return Router(candidates, retry=policy, clock=self.clock, budget=budget, prices=self.prices)

    def _profile_endpoint(self, profile: Profile) -> Endpoint:
        name, config = profile_endpoint(profile)
        if name not in self._endpoints:
            self.add_provider(name, config)
        return self._endpoints[name]

    def _candidate(
        self,
        provider: str,
        model: str,
        *,
        policy: RetryPolicy | None,
        timeout: HttpTimeout | None,
        params: Mapping[str, Any],
        headers: Mapping[str, str],
        max_tokens: int | None,
        price: Any,
    ) -> Candidate:
        endpoint = pinned_endpoint(self._endpoints, self._implicit, provider)
        protocol = endpoint.protocol if endpoint is not None else LOCAL_PROTOCOL
        return Candidate(
            provider=provider,
            model=model,
            client=LazyClient(self, endpoint, timeout),
            protocol=protocol,
            retry=policy,
            capabilities=get_protocol(protocol).capabilities(model),
            params=params,
            headers=headers,
            max_tokens=max_tokens,
            price=price,
            breaker=self.breakers.get(provider),
            limiter=self.limiters.get(provider),
        )

    # --- shared resources --------------------------------------------------------------

    @property
    def transport(self) -> Transport:
        """The runtime's one HTTP transport, created on first use."""
        if self._transport is None:
            from agentloom.http import AiohttpTransport  # aiohttp loads on first use

            self._transport = AiohttpTransport()
        return self._transport

    async def local_endpoint(self) -> Endpoint:
        """The embedded model's endpoint, starting its server on first use (once), or the
        stand-in given for it (a replay, whose transport answers without the server)."""
        if self._local_stand_in is not None:
            return self._local_stand_in
        if self._local_lock is None:
            self._local_lock = asyncio.Lock()
        async with self._local_lock:
            if self._local is None:
                self._local = LocalModelServer(self.local_model_path)
            return await self._local.start()

    async def provider_client(
        self, endpoint: Endpoint | None, timeout: HttpTimeout | None
    ) -> ModelClient:
        """The one `ProviderClient` of an endpoint (None: the embedded model) and timeout,
        over the runtime's transport. Clients are stateless, so one serves every run;
        one is rebuilt only when what it was built from changed (`ProviderClients`)."""
        configured = endpoint or await self.local_endpoint()
        return self._provider_clients.get(
            endpoint.name if endpoint is not None else None, configured, timeout, self.transport
        )

    async def aclose(self) -> None:
        self._closed = True
        self.revision += 1
        local, self._local = self._local, None
        if local is not None:
            await local.aclose()
        if self._transport is not None and self._owns_transport:
            transport, self._transport = self._transport, None
            await transport.aclose()

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
