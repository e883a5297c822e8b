"""Which model client an `llm_call` or `agent` step gets: its provider, model, profile,
fallback chain, retries and the run's budget, assembled in one place.

A step's own fields win over its profile's, and the profile's over `config`. Retries come
in two layers, as the two specs put them: a profile's `retries` (spec 004) retry one call
inside the client (the `Router`) before it moves on to the next fallback entry; a step's
`retry` (spec 000) re-runs the whole step, tool loop included, in the engine. Without a
profile the client doesn't retry, so a failing call falls back at once and the step's own
retry decides what comes next. The load-time half (`check_choice`) reports an unknown
profile or a fallback provider nobody declared at the field's line.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agentloom.routing import NO_RETRY, parse_fallback
from agentloom.workflow.schema.workflow import known_providers, unknown_provider
from agentloom.workflow.steps.profiles import profile_of

if TYPE_CHECKING:
    from agentloom.providers import ModelClient
    from agentloom.routing import Profile, RetryPolicy
    from agentloom.workflow.engine.context import RunContext
    from agentloom.workflow.load.loader import PrepareContext
    from agentloom.workflow.load.workflow import StepNode
    from agentloom.workflow.schema.steps import LLMCallStep
    from agentloom.workflow.schema.workflow import WorkflowConfig


# --- load time ---------------------------------------------------------------------------


def check_choice(step: LLMCallStep, pc: PrepareContext) -> None:
    """Report a `profile:` that names no profile and fallback entries naming an unknown
    provider, each at its own line; warn of a `provider:` naming an unknown one."""
    # The whole file's mapping: a step's model sees only its own fields.
    raw: dict[str, Any] = pc.document
    profiles: dict[str, Any] = _dict(raw.get("profiles"))
    declared: dict[str, Any] = _dict(raw.get("providers"))
    known = known_providers(declared)
    if step.profile is not None and step.profile not in profiles:
        names = sorted(map(str, profiles))
        import difflib  # on an error only (its import is ~2 M instructions)
        close = difflib.get_close_matches(step.profile, names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        pc.report(f"unknown profile {step.profile!r} (profiles: "
                  f"{', '.join(names) or 'none defined'}){hint}", "profile")
    if step.provider is not None and step.provider not in known:
        # A warning, not an error: from Python, a client factory of one's own may serve
        # any name; the command line's runtime refuses a typo (`opena`) at the call.
        pc.warn(unknown_provider(step.provider, known), "provider")
    for i, entry in enumerate(step.fallback or ()):
        provider = entry.get("provider") if isinstance(entry, dict) else None
        if isinstance(provider, str) and provider not in known:
            pc.report(unknown_provider(provider, known), "fallback", i, "provider")


# --- run time ----------------------------------------------------------------------------


def client_for(node: StepNode, ctx: RunContext) -> ModelClient:
    """The client of one `llm_call` step, shared by the steps of a run that ask for the
    same thing. Only the arguments in use reach the factory, so a plain `ClientFactory`
    (model, provider, retry) keeps working."""
    step: LLMCallStep = node.step  # type: ignore[assignment]
    config = ctx.workflow.config
    memos: dict[str, Any] | None = getattr(node, "memo", None)
    if step.profile is None and memos is not None:
        # Without a profile nothing is rendered per run: the factory's arguments and the
        # cache key are derived once per (step, config), not encoded again at every step.
        memo = memos.get("client")
        if memo is None or memo[0] is not config:
            memo = memos["client"] = (config, *_choice(
                node, step, config, ctx.workflow.models.get(node.id), None))
        kwargs, key = memo[1], memo[2]
        if ctx.budget is not None:
            kwargs = {**kwargs, "budget": ctx.budget}
    else:
        kwargs, key = _choice(node, step, config, ctx.workflow.models.get(node.id),
                              profile_of(step, ctx))
        if ctx.budget is not None:
            kwargs["budget"] = ctx.budget
    cache = ctx.client_cache
    client = cache.get(key)
    if client is None:
        if memos is not None and step.profile is None and ctx.budget is None:
            client = _kept(memos, ctx.clients, config, kwargs)
        else:
            client = ctx.clients.client(**kwargs)
        cache[key] = client
    first = getattr(client, "candidates", None)
    if first:
        primary = first[0]
        ctx.primaries[node.id] = (primary.provider, primary.model)
    return client


class _Kept:
    """A step's client kept across runs, with what it was built from."""

    __slots__ = ("client", "clients", "clock", "config", "prices", "retry", "revision")

    def __init__(self, clients: Any, config: WorkflowConfig, client: ModelClient) -> None:
        self.clients = clients
        self.config = config
        self.revision = clients.revision
        self.prices = clients.prices
        self.retry = clients.retry
        self.clock = clients.clock
        self.client = client

    def holds(self, clients: Any, config: WorkflowConfig) -> bool:
        return (self.clients is clients and self.config is config
                and self.revision == clients.revision and self.prices is clients.prices
                and self.retry is clients.retry and self.clock is clients.clock)


def _kept(memos: dict[str, Any], clients: Any, config: WorkflowConfig,
          kwargs: dict[str, Any]) -> ModelClient:
    """The step's client from an earlier run while the factory says nothing it is built
    from changed (`Runtime.revision`, its prices, retry and clock); a factory without a
    `revision` of its own class (a test's, or a wrapper handing out clients per run)
    builds one per run, as before. Without a per-run budget only: a budget is the run's."""
    if getattr(type(clients), "revision", None) is None:
        return clients.client(**kwargs)  # type: ignore[no-any-return]
    kept: _Kept | None = memos.get("kept")
    if kept is None or not kept.holds(clients, config):
        kept = memos["kept"] = _Kept(clients, config, clients.client(**kwargs))
    return kept.client


def _choice(node: StepNode, step: LLMCallStep, config: WorkflowConfig, model: str | None,
            profile: Profile | None) -> tuple[dict[str, Any], str]:
    """The factory's arguments (budget aside) and the run cache's key for them; `model`
    is the step's, as the workflow chose it (`Workflow.models`)."""
    kwargs: dict[str, Any] = {
        "model": model,
        "provider": step.provider or (
            None if profile is not None and (profile.provider or profile.base_url)
            else config.provider),
        "retry": _retry(step, config, profile),
    }
    if step.fallback:
        kwargs["fallback"] = parse_fallback(step.fallback, where=f"step {node.id!r}.fallback")
    if profile is not None:
        kwargs["profile"] = profile
    key = json.dumps([kwargs.get("model"), kwargs.get("provider"), step.profile,
                      step.fallback, step.retry.model_dump() if step.retry else None,
                      dict(profile.params) if profile is not None else None],
                     sort_keys=True, default=str)
    return kwargs, key


def _retry(step: LLMCallStep, config: WorkflowConfig, profile: Profile | None
           ) -> RetryPolicy:
    """The client's own retry policy: the profile's `retries` (spec 004), else none.

    The step's `retry` is not applied here: the engine re-runs the whole step with it, so
    a call is never retried twice over."""
    del step, config
    if profile is not None and profile.retry is not None:
        return profile.retry
    return NO_RETRY


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
