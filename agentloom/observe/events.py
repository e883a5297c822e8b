"""EventTraceObserver: every callback of a run as one ordered JSON line.

Lines go through a callable you supply (`file.write`, a logger, a queue), so the library
never opens files. By default events carry metadata only: names, ids, counts, timings,
finish reasons, error types. Message text, tool arguments and tool results are written
only with `capture_content=True`, which requires a `redact` function (applied to every
captured string) or an explicit `allow_unredacted=True`; captured strings are clipped.
Exception text is never written: an error is its type, status and phase.
Names the model or the provider chose (tool names and call ids, the reply's model and
finish reason) are cut at `MAX_NAME` characters and redacted like content (given
`redact`), content or not; one reply's tool calls list at most `MAX_NAMES` names.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from agentloom._clock import SYSTEM_CLOCK, Clock
from agentloom.loop.observer import ConversationInfo, NullObserver, current_conversation
from agentloom.loop.summary import ConversationSummary
from agentloom.messages import ModelRequest, ModelResponse, ToolCallPart, ToolResultPart
from agentloom.observe._bounds import MAX_NAMES, bounded, counts
from agentloom.observe._bounds import name as bounded_name
from agentloom.providers import AttemptRecord


class EventTraceObserver(NullObserver):
    """JSONL events: `{"seq": n, "ts": epoch seconds, "t": seconds since the observer
    was made, "event": ..., "conversation_id": ..., ...}` per line.

        with open("trace.jsonl", "a") as f:
            agent = Agent(client, observer=EventTraceObserver(f.write))
    """

    def __init__(
        self,
        write: Callable[[str], Any],
        *,
        capture_content: bool = False,
        redact: Callable[[str], str] | None = None,
        allow_unredacted: bool = False,
        clip: int = 2000,
        clock: Clock | None = None,
    ) -> None:
        if capture_content and redact is None and not allow_unredacted:
            raise ValueError(
                "EventTraceObserver(capture_content=True) needs redact=<function> or "
                "allow_unredacted=True: captured content may hold secrets"
            )
        if clip < 1:
            raise ValueError(f"EventTraceObserver clip must be positive, got {clip}")
        self._write = write
        self.capture_content = capture_content
        self._redact = redact
        self._clip = clip
        self._seq = 0
        self._lock = threading.Lock()
        self._clock = clock or SYSTEM_CLOCK
        self._origin = self._clock.now()

    # --- output --------------------------------------------------------------------------
    def _content(self, text: str) -> str:
        return bounded(text, self._clip, self._redact)

    def _name(self, text: str | None) -> str | None:
        return None if text is None else bounded_name(text, self._redact)

    def record(self, event: str, **fields: Any) -> None:
        """Write an event of your own (a workflow's run start and end) in the same
        sequence; `fields` must be metadata, they are written as given."""
        self._emit(event, **fields)

    def _emit(self, event: str, conversation_id: str | None = None, **fields: Any) -> None:
        info = current_conversation()
        if conversation_id is None:
            conversation_id = info.conversation_id if info else None
        with self._lock:
            self._seq += 1
            # ts: wall-clock seconds since the epoch; t: monotonic seconds since this
            # observer was made (orders lines across a clock step).
            record = {"seq": self._seq, "ts": round(self._clock.wall(), 6),
                      "t": round(self._clock.now() - self._origin, 6), "event": event,
                      "conversation_id": conversation_id}
            if info is not None and info.run_id is not None:
                # A workflow step's conversation: which run and step it belongs to.
                record["run_id"], record["step_id"] = info.run_id, info.step_id
            record.update(fields)
            line = json.dumps(record, default=str, separators=(",", ":"))
            self._write(line + "\n")

    # --- callbacks -----------------------------------------------------------------------
    def on_conversation_start(self, info: ConversationInfo) -> None:
        self._emit("conversation_start", info.conversation_id,
                   correlation_id=info.correlation_id, parent_id=info.parent_id,
                   agent_name=info.agent_name, model=info.model,
                   iteration_limit=info.iteration_limit,
                   deadline_seconds=info.deadline_seconds)

    def on_request(self, request: ModelRequest, iteration: int) -> None:
        fields: dict[str, Any] = {"iteration": iteration, "model": request.model,
                                  "messages": len(request.messages),
                                  "tools": [t.name for t in request.tools]}
        if self.capture_content:
            fields["content"] = [
                {"role": m.role, "text": self._content(m.text)} for m in request.messages
            ]
        self._emit("request", **fields)

    def on_attempt(self, record: AttemptRecord) -> None:
        self._emit("attempt", provider=self._name(record.provider),
                   model=self._name(record.model),
                   attempt=record.attempt, ok=record.ok, status=record.status,
                   phase=record.phase, request_sent=record.request_sent,
                   error_type=record.error_type,
                   duration_seconds=round(record.duration_seconds, 6),
                   wait_before_seconds=round(record.wait_before_seconds, 6))

    def on_response(self, response: ModelResponse, iteration: int,
                    duration_seconds: float) -> None:
        u = response.usage
        calls = response.tool_calls  # a reply may hold 100,000 of them
        fields: dict[str, Any] = {
            "iteration": iteration, "provider": self._name(response.provider),
            "model": self._name(response.model),
            "finish_reason": self._name(response.finish_reason),
            "tool_calls": [self._name(c.name) for c in calls[:MAX_NAMES]],
            "input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
            "cache_read_tokens": u.cache_read_tokens,
            "reasoning_tokens": u.reasoning_tokens,
            "cost_usd": float(u.cost_usd) if u.cost_usd is not None else None,
            "duration_seconds": round(duration_seconds, 6),
        }
        if len(calls) > MAX_NAMES:
            fields["tool_calls_omitted"] = len(calls) - MAX_NAMES
        if response.time_to_first_token is not None:  # a streamed call
            fields["time_to_first_token"] = round(response.time_to_first_token, 6)
        if self.capture_content:
            fields["content"] = self._content(response.text)
        self._emit("response", **fields)

    def on_model_error(self, error: BaseException, iteration: int,
                       duration_seconds: float) -> None:
        self._emit("model_error", iteration=iteration, error_type=type(error).__name__,
                   status=getattr(error, "status", None), phase=getattr(error, "phase", None),
                   request_sent=getattr(error, "request_sent", None),
                   duration_seconds=round(duration_seconds, 6))

    def on_tool_start(self, call: ToolCallPart) -> None:
        fields: dict[str, Any] = {"tool": self._name(call.name),
                                  "call_id": self._name(call.id)}
        if self.capture_content:
            fields["arguments"] = self._content(call.arguments)
        self._emit("tool_start", **fields)

    def on_tool_end(self, call: ToolCallPart, result: ToolResultPart,
                    duration_seconds: float) -> None:
        fields: dict[str, Any] = {"tool": self._name(call.name),
                                  "call_id": self._name(call.id),
                                  "is_error": result.is_error,
                                  "duration_seconds": round(duration_seconds, 6)}
        if self.capture_content:
            fields["result"] = self._content(result.content)
        self._emit("tool_end", **fields)

    def on_stall(self, tool_name: str, repeats: int) -> None:
        self._emit("stall", tool=self._name(tool_name), repeats=repeats)

    def on_budget_warning(self, kind: str, used: float, limit: float) -> None:
        self._emit("budget_warning", kind=kind, used=used, limit=limit)

    def on_conversation_end(self, summary: ConversationSummary) -> None:
        dumped = summary.model_dump(mode="json")
        for key in ("provider", "model", "finish_reason"):
            dumped[key] = self._name(dumped.get(key))
        for key in ("tool_calls", "tool_errors"):
            dumped[key] = counts(dumped.get(key) or {}, self._redact)
        for turn in dumped.get("timeline") or ():
            for key in ("tools", "tool_errors"):
                names = turn.get(key) or []
                turn[key] = [self._name(n) for n in names[:MAX_NAMES]]
        self._emit("conversation_end", summary.conversation_id, summary=dumped)
