"""The pause signal: a step (or a tool function) stops the run to wait for a person.

`approval_gate` and `ask` steps raise `PauseRun`, and so does `ask(...)` inside a tool
function; the engine catches it and ends the run `paused` or `needs_decision`, without
skipping what comes after. It lives in the engine, not in `durable/`, because the engine
must recognise it without knowing how (or whether) the run is saved.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentloom.store import PauseInfo

ANSWER_KINDS = ("text", "choose_one", "choose_many", "secret")


class PauseRun(Exception):
    """Stop the run here and wait for a person. Raised by `approval_gate`, `ask` steps
    and `ask(...)` in a tool function; never a tool failure (ToolSets let it through)."""

    pause = True

    def __init__(self, waiting_for: str, prompt: str | None = None, *,
                 data: dict[str, Any] | None = None, step_id: str | None = None,
                 call_id: str | None = None) -> None:
        self.waiting_for = waiting_for
        self.prompt = prompt
        self.data = dict(data or {})
        self.step_id = step_id
        self.call_id = call_id
        super().__init__(f"paused: waiting for {waiting_for}"
                         + (f" ({prompt})" if prompt else ""))

    def info(self) -> PauseInfo:
        from agentloom.store import PauseInfo

        return PauseInfo(step_id=self.step_id or "", waiting_for=self.waiting_for,
                         prompt=self.prompt, call_id=self.call_id, data=self.data)


def coerce_answer(kind: str, choices: list[str] | None, raw: Any) -> Any:
    """The answer typed as `kind` asks; raises ValueError naming what is wrong."""
    if kind in ("text", "secret"):
        return raw if isinstance(raw, str) else str(raw)
    options = list(choices or [])
    if kind == "choose_one":
        value = str(raw).strip()
        if value not in options:
            raise ValueError(f"answer {value!r} is not one of the choices: "
                             f"{', '.join(options)}")
        return value
    if kind == "choose_many":
        picked = ([str(v).strip() for v in raw] if isinstance(raw, list)
                  else [v.strip() for v in str(raw).split(",") if v.strip()])
        wrong = [v for v in picked if v not in options]
        if wrong:
            raise ValueError(f"{', '.join(map(repr, wrong))} not among the choices: "
                             f"{', '.join(options)}")
        return picked
    raise ValueError(f"unknown answer kind {kind!r}")


def take_answer(durable: Any, kind: str, choices: list[str] | None, raw: Any, *,
                key: str | None = None) -> Any:
    """A person's answer as the run gets it, wherever the question was asked (an `ask`
    step, `ask(...)` in a tool): typed by `kind`, and a `secret` one taught to the run's
    redactor (`durable.add_secret`; `key`, the state key it goes to) before anything
    stores it."""
    value = coerce_answer(kind, choices, raw)
    if kind == "secret":
        durable.add_secret(str(value), key=key)
    return value


def waited_too_long(paused_at: datetime | None, now: datetime,
                    timeout_seconds: float | None) -> float | None:
    """The seconds a person took to answer a pause, when more than `timeout_seconds`
    (a store's naive timestamp is UTC); None when in time or there is no timeout."""
    if timeout_seconds is None or paused_at is None:
        return None
    at = paused_at if paused_at.tzinfo is not None else paused_at.replace(tzinfo=UTC)
    waited = (now - at).total_seconds()
    return waited if waited > timeout_seconds else None
