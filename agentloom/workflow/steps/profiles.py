"""A step's profile (spec 004) as it applies to one call: parsed once per definition,
its templated params rendered for the call, and the tool options it sets.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Literal

from agentloom.routing import get_profile, parse_profiles
from agentloom.workflow.lang.templates import compile_template
from agentloom.workflow.schema.workflow import known_providers

if TYPE_CHECKING:
    from agentloom.routing import Profile
    from agentloom.workflow.engine.context import RunContext
    from agentloom.workflow.load.workflow import Workflow
    from agentloom.workflow.schema.steps import LLMCallStep


def profile_of(step: LLMCallStep, ctx: RunContext) -> Profile | None:
    """The step's profile with its templated params rendered for this call, or None."""
    if step.profile is None:
        return None
    profiles = _profiles(ctx.workflow)
    profile = get_profile(profiles, step.profile, where=f"step {step.id!r}")
    if profile.params and _has_template(profile.params):
        profile = dataclasses.replace(profile, params=_render(profile.params, ctx))
    return profile


def profile_cache(name: str | None, ctx: RunContext) -> Literal["auto"] | None:
    """A profile's `cache` setting, for a step or agent that names it and sets none."""
    if name is None:
        return None
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


_PARSED: dict[int, tuple[Any, dict[str, Profile]]] = {}


def _profiles(workflow: Workflow) -> dict[str, Profile]:
    """The workflow's profiles, parsed once per definition (they were checked at load)."""
    definition = workflow.definition
    raw = getattr(definition, "profiles", None) or {}
    hit = _PARSED.get(id(definition))
    if hit is not None and hit[0] is raw:
        return hit[1]
    parsed = parse_profiles(raw, known_providers=known_providers(definition.providers))
    if len(_PARSED) > 256:
        _PARSED.clear()
    _PARSED[id(definition)] = (raw, parsed)
    return parsed


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
        return compile_template(value).render(ctx.scope)
    if isinstance(value, dict):
        return {k: _render(v, ctx) for k, v in value.items()}
    if isinstance(value, list):
        return [_render(v, ctx) for v in value]
    return value
