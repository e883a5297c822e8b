"""Model-name resolution: the `(provider, model)` pairs a call goes to, decided here and
nowhere else, from the tables a `Runtime` keeps (its configured endpoints by name, the
implicit ones used only when pinned) and its defaults.

Resolution, in order:
- A pinned provider (the call's, else `default_provider`) is used as is: an unknown name
  is a ConfigError listing the configured ones; a known vendor without its key names the
  environment variable to set.
- Otherwise the model goes to every configured endpoint that serves it, in the order
  given: an endpoint with `models:` serves exactly those; a vendor endpoint serves its
  family (`gpt-*`/`o*`, `claude-*`, `gemini-*`, Ollama's `name:tag`); `generic_openai` and
  custom-named endpoints serve only models they list, or any model when pinned.
- With no configured endpoint at all (no key set), the call goes to `local`, the embedded
  model. It answers to one name, `smollm2` (whatever GGUF file it runs); any other model
  name is replaced by `smollm2`, so workflows written for a hosted model run offline.
  The same holds when `local` is pinned.
- The model defaults to `default_model` (AGENTLOOM_MODEL), else the provider's default.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping

from agentloom.errors import ConfigError, MissingKeyError
from agentloom.providers import Endpoint, get_protocol, vendor_endpoint

LOCAL = "local"
LOCAL_MODEL = "smollm2"
LOCAL_PROTOCOL = "llamacpp"
DEFAULT_MODELS: dict[str, str] = {
    "openai": "gpt-4o-mini",
    "anthropic": "claude-haiku-4-5",
    "gemini": "gemini-2.5-flash",
    "ollama": "llama3.2",
    LOCAL: LOCAL_MODEL,
}
KEY_HINTS: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY (or GOOGLE_API_KEY)",
}
ALIASES = {"google": "gemini"}
VENDOR_FAMILIES = frozenset({"openai", "anthropic", "gemini", "ollama"})


def resolve_model(
    endpoints: Mapping[str, Endpoint],
    implicit: MutableMapping[str, Endpoint],
    model: str | None,
    provider: str | None,
    *,
    default_provider: str | None,
    default_model: str | None,
    use_default_provider: bool = True,
) -> list[tuple[str, str]]:
    """`(provider, model)` pairs a call would try, in order (no fallback entries), over
    `endpoints` (configured, in priority order) and `implicit` (used only when pinned,
    added to on first use); `Runtime.resolve` says what the arguments mean."""
    if provider:
        provider = ALIASES.get(provider, provider)
    elif use_default_provider:
        provider = default_provider
    if provider == LOCAL:
        return [(LOCAL, LOCAL_MODEL)]  # the embedded server answers to one name
    if provider:
        pinned_endpoint(endpoints, implicit, provider)
        return [
            (provider, model or default_model or provider_default_model(endpoints, provider))
        ]
    model = model or default_model or provider_default_model(
        endpoints, default_provider or next(iter(endpoints), LOCAL))
    serving = [name for name, ep in endpoints.items() if serves(ep, model)]
    if serving:
        return [(name, model) for name in serving]
    if model == LOCAL_MODEL or not endpoints:
        return [(LOCAL, LOCAL_MODEL)]
    raise ConfigError(
        f"no configured provider serves model {model!r} (configured: "
        f"{', '.join(endpoints)}); pin one with `provider:`, list the model "
        f"under that provider's `models:`, or set the key of the provider that serves it"
    )


def pinned_endpoint(
    endpoints: Mapping[str, Endpoint], implicit: MutableMapping[str, Endpoint], name: str
) -> Endpoint | None:
    """The endpoint for a pinned provider (None for `local`, started on use)."""
    found = endpoints.get(name)
    if found is not None:
        return found
    if name == LOCAL:
        return None
    if name in KEY_HINTS:
        raise MissingKeyError(f"provider {name!r} is not configured: set {KEY_HINTS[name]}",
                              provider=name, phase="local", request_sent=False)
    if name == "ollama":
        return implicit.setdefault("ollama", vendor_endpoint("ollama"))
    configured = ", ".join(endpoints) or "none"
    hint = (
        " (generic_openai needs a base_url: add it under `providers:`)"
        if name == "generic_openai"
        else ""
    )
    raise ConfigError(
        f"unknown provider {name!r}{hint}; configured providers: "
        f"{configured}; built in: {', '.join(sorted(DEFAULT_MODELS))}"
    )


def serves(endpoint: Endpoint, model: str) -> bool:
    """Whether an unpinned call of `model` goes to `endpoint`."""
    if endpoint.models is not None:
        return model in endpoint.models
    if endpoint.name not in VENDOR_FAMILIES or endpoint.protocol != endpoint.name:
        return False  # generic/custom endpoints serve only models they list

    return get_protocol(endpoint.protocol).serves(model)


def provider_default_model(endpoints: Mapping[str, Endpoint], provider: str) -> str:
    """The model a call pinned to `provider` without a model goes to: the first it lists
    under `models:`, else its vendor's default."""
    endpoint = endpoints.get(provider)
    if endpoint is not None and endpoint.models:
        return endpoint.models[0]
    key = (
        provider
        if endpoint is None
        else (provider if provider in DEFAULT_MODELS else endpoint.protocol)
    )
    model = DEFAULT_MODELS.get(key)
    if model is None:
        raise ConfigError(
            f"provider {provider!r} has no default model: name a model "
            f"(or list `models:` under the provider)"
        )
    return model
