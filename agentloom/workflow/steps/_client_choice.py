"""Which model client an `llm_call` step gets: its provider, model, profile, fallback chain,
retries and the run's budget, assembled in one place.

A step's own fields win over its profile's, and the profile's over `config`. Retries come
in two layers, as the two specs put them: a profile's `retries` (spec 004) retry one call
inside the client (the `Router`) before it moves on to the next fallback entry; a step's
`retry` (spec 000) re-runs the whole step, tool loop included, in the engine. Without a
profile the client doesn't retry, so a failing call falls back at once and the step's own
retry decides what comes next. The load-time half (`check_choice`) reports an unknown
profile or a fallback provider nobody declared at the field's line.
"""

from __future__ import annotations

import difflib
import json
from typing import TYPE_CHECKING, Any, Literal

from agentloom.loop.collector import SummaryRecord
from agentloom.loop.observer import NullObserver
from agentloom.workflow._schema import known_providers

if TYPE_CHECKING:
    from agentloom.providers._base import ModelClient
    from agentloom.routing import Profile, RetryPolicy, RunBudget
    from agentloom.workflow._context import RunContext
    from agentloom.workflow._loader import PrepareContext
    from agentloom.workflow._schema import WorkflowConfig
    from agentloom.workflow._schema_steps import LLMCallStep
    from agentloom.workflow._workflow import StepNode, Workflow


# --- load time ---------------------------------------------------------------------------


def check_choice(step: LLMCallStep, pc: PrepareContext) -> None:
    """Report a `profile:` that names no profile and fallback entries naming an unknown
    provider, each at its own line."""
    # The whole file's mapping: a step's model sees only its own fields.
    data = getattr(getattr(pc, "_checker", None), "data", None)
    raw: dict[str, Any] = data if isinstance(data, dict) else {}
    profiles: dict[str, Any] = _dict(raw.get("profiles"))
    declared: dict[str, Any] = _dict(raw.get("providers"))
    known = known_providers(declared)
    if step.profile is not None and step.profile not in profiles:
        names = sorted(map(str, profiles))
        close = difflib.get_close_matches(step.profile, names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        pc.report(f"unknown profile {step.profile!r} (profiles: "
                  f"{', '.join(names) or 'none defined'}){hint}", "profile")
    for i, entry in enumerate(step.fallback or ()):
        provider = entry.get("provider") if isinstance(entry, dict) else None
        if isinstance(provider, str) and provider not in known:
            close = difflib.get_close_matches(provider, sorted(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            pc.report(f"unknown provider {provider!r}{hint} (declare it under `providers:`)",
                      "fallback", i, "provider")


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
            memo = memos["client"] = (config, *_choice(node, step, config, None))
        kwargs, key = memo[1], memo[2]
        if ctx.budget is not None:
            kwargs = {**kwargs, "budget": ctx.budget}
    else:
        kwargs, key = _choice(node, step, config, profile_of(step, ctx))
        if ctx.budget is not None:
            kwargs["budget"] = ctx.budget
    cache: dict[Any, Any] = ctx._clients  # the run's own client cache
    client = cache.get(key)
    if client is None:
        client = cache[key] = ctx.clients.client(**kwargs)
        first = getattr(client, "candidates", None)
        if first:
            ctx.primaries[node.id] = (first[0].provider, first[0].model)
    elif getattr(client, "candidates", None):
        ctx.primaries[node.id] = (client.candidates[0].provider, client.candidates[0].model)
    return client


def _choice(node: StepNode, step: LLMCallStep, config: WorkflowConfig,
            profile: Profile | None) -> tuple[dict[str, Any], str]:
    """The factory's arguments (budget aside) and the run cache's key for them."""
    kwargs: dict[str, Any] = {
        "model": step.model or (None if profile is not None and profile.model else config.model),
        "provider": step.provider or (
            None if profile is not None and (profile.provider or profile.base_url)
            else config.provider),
        "retry": _retry(step, config, profile),
    }
    if step.fallback:
        from agentloom.routing import parse_fallback

        kwargs["fallback"] = parse_fallback(step.fallback, where=f"step {node.id!r}.fallback")
    if profile is not None:
        kwargs["profile"] = profile
    key = json.dumps([kwargs.get("model"), kwargs.get("provider"), step.profile,
                      step.fallback, step.retry.model_dump() if step.retry else None,
                      dict(profile.params) if profile is not None else None],
                     sort_keys=True, default=str)
    return kwargs, key


def profile_of(step: LLMCallStep, ctx: RunContext) -> Profile | None:
    """The step's profile with its templated params rendered for this call, or None."""
    if step.profile is None:
        return None
    profiles = _profiles(ctx.workflow)
    from agentloom.routing import get_profile

    profile = get_profile(profiles, step.profile, where=f"step {step.id!r}")
    if profile.params and _has_template(profile.params):
        import dataclasses

        profile = dataclasses.replace(profile, params=_render(profile.params, ctx))
    return profile


def profile_cache(name: str | None, ctx: RunContext) -> Literal["auto"] | None:
    """A profile's `cache` setting, for a step or agent that names it and sets none."""
    if name is None:
        return None
    from agentloom.routing import get_profile

    profile = get_profile(_profiles(ctx.workflow), name, where=f"profile {name!r}")
    return "auto" if profile.cache == "auto" else None


def toolbox_options(step_id: str, ctx: RunContext) -> dict[str, Any]:
    """`max_tools` and `error_prompt` for the tool registry: the profile's, else config's."""
    node = ctx.workflow.nodes.get(step_id)
    name = getattr(node.step, "profile", None) if node is not None else None
    profile = profile_of(node.step, ctx) if node is not None and name else None  # type: ignore[arg-type]
    config = ctx.workflow.config
    max_tools = (profile.max_tools if profile is not None and profile.max_tools
                 else getattr(config, "max_tools", None))
    prompt = (profile.tool_error_prompt if profile is not None and profile.tool_error_prompt
              else getattr(config, "tool_error_prompt", None))
    out: dict[str, Any] = {}
    if max_tools is not None:
        out["max_tools"] = max_tools
    if prompt is not None:
        out["error_prompt"] = prompt
    return out


class SummaryCatcher(NullObserver):
    """An observer keeping each loop's ConversationSummary for the step's result (on
    success and failure alike: the loop reports the end of every conversation). It takes
    the loop's `SummaryRecord` (`on_summary_record`), so the pydantic summary is built
    only when the step's result is read. The other callbacks are inherited no-ops: a
    callback looked up and not found costs the loop an AttributeError at every event."""

    __slots__ = ("_ctx", "_step_id")

    def __init__(self, ctx: RunContext, step_id: str) -> None:
        self._ctx, self._step_id = ctx, step_id

    def on_summary_record(self, record: Any) -> None:
        self._ctx.summaries.setdefault(self._step_id, []).append(record)

    def on_conversation_end(self, summary: Any) -> None:
        self._ctx.summaries.setdefault(self._step_id, []).append(summary)


def summary_observer(step_id: str, ctx: RunContext) -> SummaryCatcher:
    return SummaryCatcher(ctx, step_id)


def step_summary(ctx: RunContext, step_id: str) -> Any:
    """The step's summary: its last loop's, with the failed attempts of earlier engine
    attempts in front (so every failure of the step stays visible). A single loop's is
    returned as its record when it has one (`StepResult.summary` builds it when read)."""
    runs = ctx.summaries.get(step_id)
    if not runs:
        return None
    if len(runs) == 1:
        return runs[0]
    runs = [s.summary if isinstance(s, SummaryRecord) else s for s in runs]
    last = runs[-1]
    earlier = tuple(fa for s in runs[:-1] for fa in s.failed_attempts)
    retries = sum(s.provider_retries + 1 for s in runs[:-1])
    return last.model_copy(update={
        "failed_attempts": earlier + tuple(last.failed_attempts),
        "provider_retries": last.provider_retries + retries,
    })


# --- the run's budget and the runtime's settings -----------------------------------------


def run_budget(config: WorkflowConfig) -> RunBudget | None:
    """The run's RunBudget from `budget_usd` / `max_tokens_per_run`, or None."""
    cost = config.budget_usd
    tokens = getattr(config, "max_tokens_per_run", None)
    if cost is None and tokens is None:
        return None
    from agentloom.routing import RunBudget

    return RunBudget(max_cost_usd=None if cost is None else str(cost), max_tokens=tokens)


def needs_configure(workflow: Workflow) -> bool:
    """Whether `configure_runtime` has anything to hand over (most files set none of
    these knobs, and a run then skips it)."""
    config = workflow.config
    return bool(config.rate_limits or config.circuit_breaker is not None
                or config.prices is not None)


async def configure_runtime(clients: Any, workflow: Workflow) -> None:
    """Hand the workflow's rate limits, breaker thresholds and prices to the runtime (a
    factory without these knobs, such as a test's, is left alone)."""
    config = workflow.config
    from agentloom.routing import parse_breaker, parse_rate_limits

    if config.rate_limits and hasattr(clients, "set_rate_limit"):
        for provider, limit in parse_rate_limits(config.rate_limits).items():
            clients.set_rate_limit(provider, limit)
    breaker = parse_breaker(config.circuit_breaker)
    if breaker is not None and hasattr(clients, "set_breaker"):
        clients.set_breaker(breaker)
    if config.prices is not None and hasattr(clients, "set_prices"):
        clients.set_prices(await load_prices(config.prices, workflow,
                                             base=getattr(clients, "prices", None)))


async def load_prices(prices: str | dict[str, Any], workflow: Workflow, *, base: Any = None
                      ) -> Any:
    """A price file (read in a thread) or an inline map, over `base` or the packaged table."""
    from agentloom.pricing import PriceTable

    parent = base or PriceTable.default()
    if isinstance(prices, dict):
        return PriceTable.from_mapping(prices, where="config.prices", parent=parent)
    import asyncio
    from pathlib import Path

    path = Path(prices)
    if not path.is_absolute():
        path = Path(workflow.base_dir) / path
    return await asyncio.to_thread(PriceTable.from_file, path, parent=parent)


# --- helpers -----------------------------------------------------------------------------


_PARSED: dict[int, tuple[Any, dict[str, Profile]]] = {}


def _profiles(workflow: Workflow) -> dict[str, Profile]:
    """The workflow's profiles, parsed once per definition (they were checked at load)."""
    definition = workflow.definition
    raw = getattr(definition, "profiles", None) or {}
    hit = _PARSED.get(id(definition))
    if hit is not None and hit[0] is raw:
        return hit[1]
    from agentloom.routing import parse_profiles

    parsed = parse_profiles(raw, known_providers=known_providers(definition.providers))
    if len(_PARSED) > 256:
        _PARSED.clear()
    _PARSED[id(definition)] = (raw, parsed)
    return parsed


def _retry(step: LLMCallStep, config: WorkflowConfig, profile: Profile | None
           ) -> RetryPolicy:
    """The client's own retry policy: the profile's `retries` (spec 004), else none.

    The step's `retry` is not applied here: the engine re-runs the whole step with it, so
    a call is never retried twice over."""
    from agentloom.routing import NO_RETRY

    del step, config
    if profile is not None and profile.retry is not None:
        return profile.retry
    return NO_RETRY


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _has_template(value: Any) -> bool:
    if isinstance(value, str):
        return "{" in value
    if isinstance(value, dict):
        return any(_has_template(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_template(v) for v in value)
    return False


def _render(value: Any, ctx: RunContext) -> Any:
    if isinstance(value, str):
        if "{" not in value:
            return value
        from agentloom.workflow._templates import compile_template

        return compile_template(value).render(ctx.scope)
    if isinstance(value, dict):
        return {k: _render(v, ctx) for k, v in value.items()}
    if isinstance(value, list):
        return [_render(v, ctx) for v in value]
    return value


__all__ = ["check_choice", "client_for", "configure_runtime", "load_prices", "needs_configure",
           "profile_of", "run_budget", "step_summary", "summary_observer", "toolbox_options"]
