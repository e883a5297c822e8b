"""LLM profiles and fallback entries: plain objects, parsed from workflow dicts.

A profile names a provider and model and carries their call settings (headers, extra
request parameters, pricing, a max_tokens ceiling, retries, the most tools per call, a
tool error prompt, a fallback chain). The workflow loader hands us the YAML mappings;
everything wrong is a `ConfigError` naming the profile and field, raised at load time
so a bad profile never reaches a model call. Templates inside params and headers are
the workflow's business: they are carried here as given.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import field
from decimal import Decimal
from typing import Any

from agentloom._record import FACTORY, FrozenRecord, frozen_record, set_field
from agentloom.errors import ConfigError, kind_of
from agentloom.pricing import Price
from agentloom.routing._breaker import BreakerSettings
from agentloom.routing._budget import _money
from agentloom.routing._limiter import RateLimit
from agentloom.routing._retry import RetryPolicy

DEFAULT_PROFILE_TIMEOUT = 60.0
"""Seconds a call through a profile may take when the profile sets no `timeout` (spec
004); a call without a profile has the transport's own bound (`HttpTimeout().total`)."""
MAX_PROFILE_TIMEOUT = 1800.0
"""The longest `timeout` a profile may set: the transport's own bound on a call without
one (`HttpTimeout().total`), so a profile can tighten a call's limit, never lift it."""
MAX_RETRIES = 100
"""The most retries a `retries`/`retry.max_retries` may ask for, as a workflow step's
`retry.max_retries` (the workflow schema's `MAX_RETRIES`): a 429 storm answered with
`Retry-After: 0` otherwise sent as many calls as the number said."""
MAX_RETRY_SECONDS = 600.0
"""The longest wait a retry block may ask for (`backoff_base`, `backoff_max`,
`max_retry_after`): ten minutes, as a workflow step's `retry.backoff_max` and the longest
`Retry-After` a step waits out."""

_PROFILE_FIELDS = frozenset(
    {
        "provider",
        "model",
        "base_url",
        "api_key_env",
        "headers",
        "params",
        "pricing",
        "max_tokens",
        "retries",
        "retry",
        "max_tools",
        "tool_error_prompt",
        "fallback",
        "timeout",
        "cache",
    }
)
_FALLBACK_FIELDS = frozenset(
    {"provider", "model", "headers", "params", "pricing", "max_tokens", "retries", "retry"}
)
_RETRY_FIELDS = frozenset(
    {
        "max_retries",
        "backoff_base",
        "backoff_multiplier",
        "backoff_max",
        "jitter",
        "retryable_status_codes",
        "max_retry_after",
    }
)


@frozen_record
class FallbackEntry(FrozenRecord):
    """One link of a fallback chain: its own provider, model and settings."""

    provider: str | None = None
    """None: whichever configured provider serves `model`."""
    model: str
    headers: Mapping[str, str] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)
    pricing: Price | None = None
    max_tokens: int | None = None
    retry: RetryPolicy | None = None

    def __init__(
        self, *, provider: str | None = None, model: str, headers: Mapping[str, str] = FACTORY,
        params: Mapping[str, Any] = FACTORY, pricing: Price | None = None,
        max_tokens: int | None = None, retry: RetryPolicy | None = None,
    ) -> None:
        set_field(self, "provider", provider)
        set_field(self, "model", model)
        set_field(self, "headers", {} if headers is FACTORY else headers)
        set_field(self, "params", {} if params is FACTORY else params)
        set_field(self, "pricing", pricing)
        set_field(self, "max_tokens", max_tokens)
        set_field(self, "retry", retry)

    @classmethod
    def from_dict(
        cls, data: Any, *, where: str = "fallback", known_providers: Collection[str] | None = None
    ) -> FallbackEntry:
        if isinstance(data, str):
            data = {"model": data}
        mapping = _mapping(data, where)
        _no_unknown(mapping, _FALLBACK_FIELDS, where)
        model = mapping.get("model")
        if not isinstance(model, str) or not model:
            raise ConfigError(
                f"{where}: each fallback entry needs a model, e.g. "
                f"{{provider: anthropic, model: claude-haiku-4-5}}"
            )
        provider = _provider(mapping.get("provider"), f"{where}.provider", known_providers)
        return cls(
            provider=provider,
            model=model,
            headers=_str_map(mapping.get("headers"), f"{where}.headers"),
            params=dict(_mapping(mapping.get("params") or {}, f"{where}.params")),
            pricing=_pricing(mapping.get("pricing"), f"{where}.pricing"),
            max_tokens=_positive_int(mapping.get("max_tokens"), f"{where}.max_tokens"),
            retry=parse_retry(
                mapping.get("retry"), f"{where}.retry", retries=mapping.get("retries"),
                retries_where=f"{where}.retries",
            ),
        )


@frozen_record
class Profile(FrozenRecord):
    """A named model setup (spec 004). A step's own fields win over its profile's."""

    name: str
    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)
    """Extra request parameters, merged over what the provider's encoder produces."""
    pricing: Price | None = None
    max_tokens: int | None = None
    """Token ceiling: the max_tokens of a call that sets none, and a cap on larger ones."""
    retry: RetryPolicy | None = None
    max_tools: int | None = None
    tool_error_prompt: str | None = None
    fallback: tuple[FallbackEntry, ...] = ()
    timeout: float = DEFAULT_PROFILE_TIMEOUT
    """Seconds per call (each turn of a tool loop is one), 60 unless the profile sets
    it: the `total` of the call's `HttpTimeout`, the one limit every call has."""
    cache: str | None = None
    """`auto`: prompt caching for the steps and agents that use this profile."""

    def __init__(
        self, *, name: str, provider: str | None = None, model: str | None = None,
        base_url: str | None = None, api_key_env: str | None = None,
        headers: Mapping[str, str] = FACTORY, params: Mapping[str, Any] = FACTORY,
        pricing: Price | None = None, max_tokens: int | None = None,
        retry: RetryPolicy | None = None, max_tools: int | None = None,
        tool_error_prompt: str | None = None, fallback: tuple[FallbackEntry, ...] = (),
        timeout: float = DEFAULT_PROFILE_TIMEOUT, cache: str | None = None,
    ) -> None:
        set_field(self, "name", name)
        set_field(self, "provider", provider)
        set_field(self, "model", model)
        set_field(self, "base_url", base_url)
        set_field(self, "api_key_env", api_key_env)
        set_field(self, "headers", {} if headers is FACTORY else headers)
        set_field(self, "params", {} if params is FACTORY else params)
        set_field(self, "pricing", pricing)
        set_field(self, "max_tokens", max_tokens)
        set_field(self, "retry", retry)
        set_field(self, "max_tools", max_tools)
        set_field(self, "tool_error_prompt", tool_error_prompt)
        set_field(self, "fallback", fallback)
        set_field(self, "timeout", timeout)
        set_field(self, "cache", cache)

    @classmethod
    def from_dict(
        cls, name: str, data: Any, *, known_providers: Collection[str] | None = None
    ) -> Profile:
        where = f"profiles.{name}"
        mapping = _mapping(data, where)
        _no_unknown(mapping, _PROFILE_FIELDS, where)
        model = mapping.get("model")
        if model is not None and (not isinstance(model, str) or not model):
            raise ConfigError(f"{where}.model: expected a model name, got {model!r}")
        fallback_raw = mapping.get("fallback") or []
        if not isinstance(fallback_raw, list):
            raise ConfigError(f"{where}.fallback: expected a list of {{provider, model}} entries")
        prompt = mapping.get("tool_error_prompt")
        if prompt is not None and not isinstance(prompt, str):
            raise ConfigError(f"{where}.tool_error_prompt: expected text")
        base_url = mapping.get("base_url")
        if base_url is not None and not isinstance(base_url, str):
            raise ConfigError(f"{where}.base_url: expected a URL")
        key_env = mapping.get("api_key_env")
        if key_env is not None and not isinstance(key_env, str):
            raise ConfigError(f"{where}.api_key_env: expected an environment variable name")
        cache = mapping.get("cache")
        if cache not in (None, "auto"):
            raise ConfigError(f"{where}.cache: expected auto, got {cache!r}")
        return cls(
            cache=cache,
            name=name,
            provider=_provider(
                mapping.get("provider"), f"{where}.provider", None if base_url else known_providers
            ),
            model=model,
            base_url=base_url,
            api_key_env=key_env,
            headers=_str_map(mapping.get("headers"), f"{where}.headers"),
            params=dict(_mapping(mapping.get("params") or {}, f"{where}.params")),
            pricing=_pricing(mapping.get("pricing"), f"{where}.pricing"),
            max_tokens=_positive_int(mapping.get("max_tokens"), f"{where}.max_tokens"),
            retry=parse_retry(
                mapping.get("retry"), f"{where}.retry", retries=mapping.get("retries"),
                retries_where=f"{where}.retries",
            ),
            max_tools=_positive_int(mapping.get("max_tools"), f"{where}.max_tools"),
            tool_error_prompt=prompt,
            fallback=tuple(
                FallbackEntry.from_dict(
                    entry, where=f"{where}.fallback[{i}]", known_providers=known_providers
                )
                for i, entry in enumerate(fallback_raw)
            ),
            timeout=_positive_float(
                mapping.get("timeout"), f"{where}.timeout", most=MAX_PROFILE_TIMEOUT
            )
            or DEFAULT_PROFILE_TIMEOUT,
        )


def parse_profiles(
    data: Any, *, known_providers: Collection[str] | None = None
) -> dict[str, Profile]:
    """The top-level `profiles:` map."""
    if data is None:
        return {}
    mapping = _mapping(data, "profiles")
    return {
        str(name): Profile.from_dict(str(name), body, known_providers=known_providers)
        for name, body in mapping.items()
    }


def get_profile(profiles: Mapping[str, Profile], name: str, *, where: str = "profile") -> Profile:
    """A profile by name, or a ConfigError listing the defined ones."""
    try:
        return profiles[name]
    except KeyError:
        known = ", ".join(sorted(profiles)) or "none defined"
        raise ConfigError(f"{where}: unknown profile {name!r} (profiles: {known})") from None


def parse_fallback(
    data: Any, *, where: str = "fallback", known_providers: Collection[str] | None = None
) -> tuple[FallbackEntry, ...]:
    """A step's or config's `fallback:` list."""
    if data is None:
        return ()
    if not isinstance(data, list):
        raise ConfigError(f"{where}: expected a list of {{provider, model}} entries")
    return tuple(
        FallbackEntry.from_dict(e, where=f"{where}[{i}]", known_providers=known_providers)
        for i, e in enumerate(data)
    )


def parse_retry(
    data: Any, where: str = "retry", *, retries: Any = None, base: RetryPolicy | None = None,
    retries_where: str | None = None,
) -> RetryPolicy | None:
    """A `retry:` mapping (max_retries, backoff_*, jitter, retryable_status_codes,
    max_retry_after) and/or a bare `retries: N` (named `retries_where` in errors). None
    when neither is given. Bounded as a workflow step's retry is: at most `MAX_RETRIES`
    retries, waits of at most `MAX_RETRY_SECONDS`, a jitter between 0 and 1."""
    if data is None and retries is None:
        return None
    values: dict[str, Any] = {}
    if data is not None:
        mapping = _mapping(data, where)
        _no_unknown(mapping, _RETRY_FIELDS, where)
        values.update(mapping)
    if "max_retries" in values:
        values["max_retries"] = _nonneg_int(
            values["max_retries"], f"{where}.max_retries", most=MAX_RETRIES
        )
    elif retries is not None:
        values["max_retries"] = _nonneg_int(
            retries, retries_where or f"{where}.max_retries", most=MAX_RETRIES
        )
    for name in ("backoff_base", "backoff_max", "max_retry_after"):
        if name in values:
            values[name] = _nonneg_float(values[name], f"{where}.{name}", most=MAX_RETRY_SECONDS)
    if "backoff_multiplier" in values:
        # Unbounded above: the wait it grows is capped by backoff_max.
        values["backoff_multiplier"] = _nonneg_float(
            values["backoff_multiplier"], f"{where}.backoff_multiplier"
        )
    if "jitter" in values:
        values["jitter"] = _nonneg_float(values["jitter"], f"{where}.jitter", most=1.0)
    if "retryable_status_codes" in values:
        codes = values["retryable_status_codes"]
        if not isinstance(codes, list | tuple | set | frozenset) or not all(
            isinstance(c, int) and not isinstance(c, bool) and 100 <= c <= 599 for c in codes
        ):
            raise ConfigError(
                f"{where}.retryable_status_codes: expected a list of HTTP "
                f"status codes, got {codes!r}"
            )
        values["retryable_status_codes"] = frozenset(codes)
    try:
        if base is not None:
            import dataclasses

            return dataclasses.replace(base, **values)
        return RetryPolicy(**values)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{where}: {exc}") from None


def parse_breaker(data: Any, where: str = "circuit_breaker") -> BreakerSettings | None:
    if data is None:
        return None
    mapping = _mapping(data, where)
    _no_unknown(
        mapping, frozenset({"failure_threshold", "recovery_seconds", "half_open_max"}), where
    )
    try:
        return BreakerSettings(
            failure_threshold=(
                None
                if mapping.get("failure_threshold", 5) is None
                else _positive_int(
                    mapping.get("failure_threshold", 5), f"{where}.failure_threshold"
                )
            ),
            recovery_seconds=_nonneg_float(
                mapping.get("recovery_seconds", 30.0), f"{where}.recovery_seconds"
            ),
            half_open_max=_positive_int(mapping.get("half_open_max", 1), f"{where}.half_open_max")
            or 1,
        )
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def parse_rate_limits(data: Any, where: str = "rate_limits") -> dict[str, RateLimit]:
    """`{provider: {rpm: N, tpm: N}}`."""
    if data is None:
        return {}
    out: dict[str, RateLimit] = {}
    for provider, body in _mapping(data, where).items():
        here = f"{where}.{provider}"
        mapping = _mapping(body, here)
        _no_unknown(mapping, frozenset({"rpm", "tpm"}), here)
        out[str(provider)] = RateLimit(
            # At least one request a minute: below it the bucket never holds a whole
            # request and the first call waited forever (`rpm: 0.5` hung the run).
            rpm=_positive_float(mapping.get("rpm"), f"{here}.rpm", least=1.0),
            tpm=_positive_float(mapping.get("tpm"), f"{here}.tpm"),
        )
    return out


def parse_budget(value: Any, where: str = "budget_usd") -> Decimal | None:
    """A USD amount >= 0 (number or numeric text), or None."""
    try:
        return _money(value)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


# --- small validators ------------------------------------------------------------------


def _mapping(data: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {kind_of(data)}")
    return data


def _no_unknown(mapping: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(set(map(str, mapping)) - allowed)
    if unknown:
        import difflib

        hints = []
        for name in unknown:
            close = difflib.get_close_matches(name, allowed, n=1)
            hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise ConfigError(
            f"{where}: unknown field {', '.join(hints)}; allowed: {', '.join(sorted(allowed))}"
        )


def _provider(value: Any, where: str, known: Collection[str] | None) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: expected a provider name, got {value!r}")
    if known is not None and value not in known:
        raise ConfigError(
            f"{where}: unknown provider {value!r}; known providers: {', '.join(sorted(known))}"
        )
    return value


def _str_map(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    mapping = _mapping(value, where)
    if not all(isinstance(v, str) for v in mapping.values()):
        raise ConfigError(f"{where}: header values must be text")
    return {str(k): v for k, v in mapping.items()}


def _pricing(value: Any, where: str) -> Price | None:
    if value is None:
        return None
    return Price.from_mapping(_mapping(value, where), where=where)


def _positive_int(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: expected a whole number >= 1, got {value!r}")
    return value


def _nonneg_int(value: Any, where: str, *, most: int | None = None) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < 0
        or (most is not None and value > most)
    ):
        wanted = ">= 0" if most is None else f"from 0 to {most}"
        raise ConfigError(f"{where}: expected a whole number {wanted}, got {value!r}")
    return value


def _nonneg_float(value: Any, where: str, *, most: float | None = None) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not (0 <= value < float("inf"))
        or (most is not None and value > most)
    ):
        wanted = ">= 0" if most is None else f"from 0 to {most:g}"
        raise ConfigError(f"{where}: expected a number {wanted}, got {value!r}")
    return float(value)


def _positive_float(
    value: Any, where: str, *, least: float = 0.0, most: float | None = None
) -> float | None:
    """A number > 0 (>= `least` when that is set), <= `most`; None stays None."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not (0 < value < float("inf"))
        or value < least
        or (most is not None and value > most)
    ):
        low = f">= {least:g}" if least else "> 0"
        wanted = low if most is None else f"{low} and <= {most:g}"
        raise ConfigError(f"{where}: expected a number {wanted}, got {value!r}")
    return float(value)


__all__ = [
    "FallbackEntry",
    "Profile",
    "get_profile",
    "parse_breaker",
    "parse_budget",
    "parse_fallback",
    "parse_profiles",
    "parse_rate_limits",
    "parse_retry",
]
