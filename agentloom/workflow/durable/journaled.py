"""The wrappers that make a run durable without its step modules knowing.

`JournaledClients` hands out model clients that store every reply under (step, turn,
request hash) and, on resume, serve the replies already paid for instead of asking
again. `JournaledTools` hands out toolboxes that journal each call (`in_flight` before it
runs, `done` with its result after), reuse finished calls on resume, re-run an
interrupted one only when its tool is idempotent, and deliver a person's answer to the
call that asked for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentloom.loop.tool_names import bounded_name, redacted_name
from agentloom.messages import ToolCallPart, ToolResultPart, Usage
from agentloom.recording import current_call_context, model_request_hash
from agentloom.store import tool_call_resume_action
from agentloom.workflow.durable.context import UNSET, DurableRoot, call_answer, scope_prefix
from agentloom.workflow.engine.hooks import call_hooks
from agentloom.workflow.engine.nested import NESTED_USAGE, sum_usage
from agentloom.workflow.engine.pause import PauseRun, take_answer
from agentloom.workflow.engine.secrets import learn_reply

if TYPE_CHECKING:
    from agentloom.loop import ToolContext


class JournaledClients:
    """A client factory whose clients store every reply and serve stored ones on resume."""

    def __init__(self, inner: Any, durable: DurableRoot) -> None:
        self._inner = inner
        self._durable = durable

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def client(self, **kwargs: Any) -> Any:
        return _JournaledClient(self._inner.client(**kwargs), self._durable)


class _JournaledClient:
    def __init__(self, inner: Any, durable: DurableRoot) -> None:
        self._inner = inner
        self._durable = durable

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def complete(self, request: Any, **kwargs: Any) -> Any:
        ctx = current_call_context.get()
        if ctx is None or ctx.step_id is None or ctx.turn is None:
            return await self._inner.complete(request, **kwargs)
        d = self._durable
        try:
            key = (scope_prefix.get() + ctx.step_id, ctx.turn, model_request_hash(request))
        except (TypeError, ValueError):  # a request the hash can't read is not journalled
            return await self._inner.complete(request, **kwargs)
        stored = d.take_exchange(key)
        if stored is not None:
            # Paid for before the run stopped: it counts against the run's caps again.
            budget = getattr(self._inner, "budget", None)
            usage = getattr(stored, "usage", None)
            if budget is not None and usage is not None:
                budget.charge(cost=usage.cost_usd, tokens=usage.total_tokens)
            return stored
        flush = getattr(d.store, "flush_model_exchanges", None)
        if flush is not None:  # a reply still queued is stored before the next call
            await flush(d.run_id)
        response = await self._inner.complete(request, **kwargs)
        redactor = getattr(d, "redactor", None)
        if redactor is not None and ctx.step_id in getattr(redactor, "secret_steps", ()):
            learn_reply(redactor, response)  # a redacted output's reply: never stored
        # Queued where the store can: stored with the run's next write (before any tool
        # call of this reply runs, and with the step's checkpoint), one trip per step.
        queue = getattr(d.store, "queue_model_exchange", None)
        if queue is not None:
            queue(d.run_id, key[0], key[1], key[2], d.redact(response))
        else:
            await d.store.record_model_exchange(d.run_id, key[0], key[1], key[2],
                                                d.redact(response))
        return response


class JournaledTools:
    """A tool source whose toolboxes journal every call and let `PauseRun` through."""

    def __init__(self, inner: Any, durable: DurableRoot) -> None:
        self._inner = inner
        self._durable = durable

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def toolbox(self, declared: Any, **kwargs: Any) -> Any:
        signals = (*kwargs.pop("control_signals", ()), PauseRun)
        try:
            box = self._inner.toolbox(declared, control_signals=signals, **kwargs)
        except TypeError:  # a source without control signals
            box = self._inner.toolbox(declared, **kwargs)
        return _JournaledBox(box, self._durable)


class _JournaledBox:
    def __init__(self, inner: Any, durable: DurableRoot) -> None:
        self._inner = inner
        self._durable = durable

    @property
    def specs(self) -> Any:
        return self._inner.specs

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _idempotent(self, name: str) -> bool:
        get = getattr(self._inner, "get", None)  # a ToolSet's; another box may have none
        return bool(getattr(get(name) if callable(get) else None, "idempotent", False))

    async def call(self, call: ToolCallPart, ctx: ToolContext) -> ToolResultPart:
        d, step = self._durable, ctx.step_id
        if step is None:
            return await self._inner.call(call, ctx)  # type: ignore[no-any-return]
        # In a nested run (a subworkflow, a function's body) the step id is namespaced.
        step = scope_prefix.get() + step
        # Some providers number calls per reply (call_0 every turn): the turn makes the
        # journal key unique within the step, and a count the retries of the step.
        base = f"{ctx.turn}:{call.id}"
        key = d.call_key(step, base)
        record = d.take_tool_call(step, key)
        answer = UNSET
        paused = d.resumed.paused if d.resumed is not None else None
        resumed_here = (paused is not None and paused.step_id == step
                        and paused.call_id == key)
        # A step of a workflow function's body paused inside this call: the call runs
        # again and the body resumes (its finished steps restored, the answer delivered
        # to the step that asked, under its own namespaced id).
        inside = paused is not None and paused.step_id.startswith(f"{step}/{key}/")
        action = tool_call_resume_action(record)
        if record is not None and action == "reuse":
            d.reused_tool_calls += 1
            stored = record.result or {}
            _add_usage(stored.get("usage"))  # a function's model calls, paid before
            return ToolResultPart(call_id=call.id, name=call.name,
                                  content=str(stored.get("content", "")),
                                  is_error=bool(stored.get("is_error", False)))
        if inside or (action == "needs_decision" and _asked(record)):
            # It stopped to ask a person, never in the middle of an effect: by the
            # contract of `ask`, the call runs again (and asks again if not answered).
            action = "rerun"
        if resumed_here and paused is not None:
            if paused.waiting_for == "answer" and d.decision.has_answer:
                asked = paused.data or {}
                answer = take_answer(d, str(asked.get("kind") or "text"),
                                     asked.get("choices"), d.decision.answer)
            elif paused.waiting_for == "decision" and d.decision.approve is False:
                return await self._done(step, ctx.turn, key, call, ToolResultPart(
                    call_id=call.id, name=call.name, is_error=True,
                    content="this call was interrupted and a person chose not to run it "
                            "again; its effect, if any, is unknown"))
            action = "rerun"
        if action == "needs_decision":
            raise PauseRun(
                "decision", f"tool call {_stored_name(d, call.name)} ({call.id}) was in "
                "flight when the run stopped and the tool is not idempotent: it may or may "
                "not have run",
                data={"tool": _stored_name(d, call.name), "arguments": call.arguments},
                step_id=step, call_id=key)
        await d.store.record_tool_call(
            d.run_id, step, ctx.turn, key, status="in_flight",
            idempotent=self._idempotent(call.name), name=_stored_name(d, call.name),
            arguments=d.redact(call.arguments))
        token = call_answer.set(answer)
        scope_token = call_hooks.set(d.child(f"{step}/{key}"))
        spent: list[Any] = []  # a workflow function's model usage, kept with its result
        usage_token = NESTED_USAGE.set(spent)
        try:
            result: ToolResultPart = await self._inner.call(call, ctx)
        except PauseRun as exc:
            if exc.step_id is None:  # `ask(...)` in the tool itself; else a nested step's
                exc.step_id, exc.call_id = step, key
            # Journalled as waiting, not as interrupted: a resume runs it again.
            await d.store.record_tool_call(
                d.run_id, step, ctx.turn, key, status="in_flight",
                idempotent=self._idempotent(call.name), name=_stored_name(d, call.name),
                arguments=d.redact(call.arguments), result=_ASKED)
            raise
        finally:
            NESTED_USAGE.reset(usage_token)
            call_hooks.reset(scope_token)
            call_answer.reset(token)
        usage = sum_usage(spent)
        _add_usage(usage)
        d.drop_children(f"{step}/{key}/")  # the call's result now stands for its body
        return await self._done(step, ctx.turn, key, call, result, usage)

    async def _done(self, step: str, turn: int, key: str, call: ToolCallPart,
                    result: ToolResultPart, usage: Any = None) -> ToolResultPart:
        d = self._durable
        stored = {"content": d.redact(result.content), "is_error": result.is_error}
        if usage is not None:
            stored["usage"] = usage
        await d.store.record_tool_call(
            d.run_id, step, turn, key, status="done",
            idempotent=self._idempotent(call.name), name=_stored_name(d, call.name),
            arguments=d.redact(call.arguments), result=stored)
        return result


def _stored_name(d: Any, name: str) -> str:
    """A tool call's name as the journal keeps it: the model chose it, so it is cut as a
    summary cuts it and redacted (a tool named after a secret the model was shown)."""
    cut = bounded_name(name) if type(name) is str else str(name)
    return redacted_name(cut, d.redactor) if d.redactor is not None else cut


_ASKED = {"asked": True}
"""The result an `in_flight` record carries when its call stopped to ask a person."""


def _asked(record: Any) -> bool:
    result = getattr(record, "result", None)
    return isinstance(result, dict) and result.get("asked") is True


def _add_usage(usage: Any) -> None:
    sink = NESTED_USAGE.get()
    if sink is not None and isinstance(usage, Usage):
        sink.append(usage)
