"""A step whose `output` is a redacted state key (`state_schema: {plan: {redact: true}}`)
keeps that output out of everything the run writes, not only out of the state.

At the run's start each such step is marked on the run's redactor
(`Redactor.mark_secret_step`), so its result's `output`, `text` and `reasoning_content`
are redacted by name in `--json` and checkpoints. The texts themselves are learned as
secrets the moment they exist: each reply of the step's loop (`SecretLearner`, first
among the step's observers, so traces and spans already redact it; the durable journal
learns before it stores the reply), and the step's outcome before it is committed. A
recording made earlier in the step is redacted again when the redactor learns them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from agentloom.loop.observer import NullObserver
from agentloom.redact import Redactor

if TYPE_CHECKING:
    from agentloom.workflow.engine.context import RunContext
    from agentloom.workflow.load.workflow import Workflow


def workflow_redactor(wf: Workflow, state: Mapping[str, Any],
                      env: Mapping[str, str]) -> Redactor:
    """The redactor for one run of `wf` over `state` (merged over the file's): the keys
    its `state_schema` marks secret and those `AGENTLOOM_REDACT_STATE_KEYS` names (the
    public AgentLoom's deployment-wide policy, comma-separated keys or globs), with their
    values, and the API keys in `env` (`*_API_KEY`, `*_TOKEN`, a provider's
    `api_key_env`) and in the file. `agentloom run`, `resume` and every batch run, durable
    or not, redact with it."""
    schema = {k: (v.model_dump() if hasattr(v, "model_dump") else v)
              for k, v in (getattr(wf.definition, "state_schema", None) or {}).items()}
    for glob in env.get("AGENTLOOM_REDACT_STATE_KEYS", "").split(","):
        if glob.strip():
            schema.setdefault(glob.strip(), {"redact": True})
    merged = {**(wf.definition.state or {}), **state}
    keys = [v for k, v in env.items() if k.endswith(("_API_KEY", "_TOKEN")) and v]
    for provider in (getattr(wf.definition, "providers", None) or {}).values():
        keys += [v for v in (env.get(provider.api_key_env or ""), provider.api_key) if v]
    return Redactor.from_state_schema(schema, state=merged, secrets=keys)


def run_redactor(ctx: RunContext) -> Redactor | None:
    """The run's redactor: its observers' or its durable run's (the CLI gives both the
    same one)."""
    for holder in (ctx.observers, ctx.durable):
        redactor = getattr(holder, "redactor", None)
        if redactor is not None and hasattr(redactor, "mark_secret_step"):
            return redactor  # type: ignore[no-any-return]
    return None


def mark_secret_steps(redactor: Redactor, wf: Workflow) -> None:
    for node_id, node in wf.nodes.items():
        output = getattr(node.step, "output", None)
        if isinstance(output, str) and output and redactor.path_is_secret(
                output.removeprefix("state.")):
            redactor.mark_secret_step(node_id)


def secret_step_redactor(step_id: str, ctx: RunContext) -> Redactor | None:
    """The run's redactor (found when the run started) when `step_id`'s output is
    redacted, else None."""
    redactor: Redactor | None = ctx.redactor
    if redactor is None or step_id not in redactor.secret_steps:
        return None
    return redactor


def learn_reply(redactor: Redactor, response: Any) -> None:
    """A reply of a secret step: its text and reasoning become secrets."""
    redactor.add_secrets(t for t in (getattr(response, "text", None),
                                     getattr(response, "reasoning", None)) if t)


def learn_outcome(redactor: Redactor, value: Any, *texts: str | None) -> None:
    """A secret step's outcome: every string in its value, its text and reasoning."""
    redactor.add_secrets([*_strings(value), *(t for t in texts if t)])


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)
    else:
        dump = getattr(value, "model_dump", None)
        if callable(dump) and hasattr(type(value), "model_fields"):
            yield from _strings(dump(mode="python"))


class SecretLearner(NullObserver):
    """First among a secret step's observers: each reply's text and reasoning are
    secrets before any trace or span sees them."""

    __slots__ = ("_redactor",)

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor

    def on_response(self, response: Any, iteration: int, duration_seconds: float) -> None:
        learn_reply(self._redactor, response)
