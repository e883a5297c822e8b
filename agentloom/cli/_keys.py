"""A step that names a hosted model whose provider has no key fails before any call.

With no provider configured, every call would go to the embedded model, whatever model a
step names. Doing that silently lets a mistyped `OPENAI_API_KEY` pass for gpt-4o, so
`agentloom run` refuses, before the first call, naming the variable to set. Running on
the embedded model stays one word away: `--provider local`, `config.provider: local` or
`AGENTLOOM_PROVIDER=local`. Steps that name no model (`examples/hello.yaml`) run on the
embedded model as before: nothing was asked for that it replaces.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentloom.cli._exit import RunRefused

if TYPE_CHECKING:
    from agentloom.workflow import Workflow

_VENDOR_KEYS = (("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY"),
                ("gemini", "GEMINI_API_KEY"), ("ollama", "OLLAMA_HOST"))


def key_for(model: str) -> str | None:
    """The variable that configures the vendor serving `model`, if one does."""
    from agentloom.providers import get_protocol

    for vendor, variable in _VENDOR_KEYS:
        if get_protocol(vendor).serves(model):
            return variable
    return None


def check_keys(wf: Workflow, runtime: Any) -> None:
    """Raise RunRefused when the embedded model would answer for models steps name."""
    from agentloom.routing.runtime import LOCAL_MODEL

    if not runtime.answers_locally_unasked or wf.config.provider is not None:
        return
    asked: dict[str, list[str]] = {}
    for node_id, model in wf.models.items():
        if model and model != LOCAL_MODEL and \
                getattr(wf.nodes[node_id].step, "provider", None) is None:
            asked.setdefault(model, []).append(node_id)
    if not asked:
        return
    named = "; ".join(f"{model} (step{'s' if len(ids) > 1 else ''} "
                      f"{', '.join(repr(i) for i in ids)})" for model, ids in asked.items())
    variables = sorted({v for m in asked if (v := key_for(m)) is not None})
    to_set = (" and ".join(variables) if variables else
              "the key of the provider that serves it (OPENAI_API_KEY, ANTHROPIC_API_KEY, "
              "GEMINI_API_KEY or OLLAMA_HOST)")
    raise RunRefused(
        f"no provider is configured for {named}: set {to_set}",
        hint=f"to run it on the embedded model {LOCAL_MODEL} instead, pass --provider "
             "local (or set config.provider: local)")
