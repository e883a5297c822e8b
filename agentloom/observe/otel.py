"""OTelObserver: a run as OpenTelemetry spans, following the GenAI semantic conventions.

    invoke_agent {agent}          root, one per conversation; the summary lands here
    ├── chat {model}              one per model call (retries are events on it)
    └── execute_tool {tool}       one per tool call

The summary is copied onto the root span as `agentloom.conversation.*` attributes and
`agentloom.tool.calls.<name>` / `agentloom.tool.errors.<name>` counts, identical whether
or not content capture is on. Content (messages, tool arguments and results) is recorded
only with `capture_content=True`, under the same rule as the JSONL trace: a `redact`
function or an explicit `allow_unredacted=True`; each captured string is cut at `clip`
characters, as the JSONL trace's are (no `OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT` is needed to
keep a 50 MB reply out of one attribute). Names the model or the provider chose (a tool's
name and call id, the reply's model, id and finish reason) are cut at `MAX_NAME`
characters and, given `redact`, redacted, capture or not: a model that calls a tool named
after a secret it was shown puts no secret in a span name. Only the OpenTelemetry API is imported;
spans go to the tracer provider given, or the global one. Metrics (low-cardinality
attributes only) are recorded through `MetricsObserver`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentloom.loop.observer import ConversationInfo, NullObserver, current_conversation
from agentloom.loop.summary import ConversationSummary
from agentloom.messages import ModelRequest, ModelResponse, ToolCallPart, ToolResultPart
from agentloom.observe import semconv as sc
from agentloom.observe._bounds import bounded, counts
from agentloom.observe._bounds import name as bounded_name
from agentloom.observe.metrics import MetricsObserver

_SCOPE = "agentloom"


@dataclass(slots=True)
class _Spans:
    root: Any
    context: Any
    chat: Any = None
    tools: dict[str, Any] = field(default_factory=dict)


class OTelObserver(NullObserver):
    """GenAI spans (and metrics) for every conversation; safe across concurrent runs."""

    def __init__(
        self,
        tracer_provider: Any = None,
        meter_provider: Any = None,
        capture_content: bool = False,
        *,
        redact: Callable[[str], str] | None = None,
        allow_unredacted: bool = False,
        metrics: bool = True,
        clip: int = 2000,
    ) -> None:
        from opentelemetry import trace

        if capture_content and redact is None and not allow_unredacted:
            raise ValueError(
                "OTelObserver(capture_content=True) needs redact=<function> or "
                "allow_unredacted=True: captured content may hold secrets"
            )
        if clip < 1:
            raise ValueError(f"OTelObserver clip must be positive, got {clip}")
        self._clip = clip
        self._trace = trace
        self._tracer = (tracer_provider.get_tracer(_SCOPE) if tracer_provider is not None
                        else trace.get_tracer(_SCOPE))
        self.capture_content = capture_content
        self._redact = redact
        self._metrics = MetricsObserver(meter_provider, redact=redact) if metrics else None
        self._runs: dict[str, _Spans] = {}

    # --- helpers -------------------------------------------------------------------------
    def _content(self, text: str) -> str:
        return bounded(text, self._clip, self._redact)

    def _name(self, text: str) -> str:
        return bounded_name(text, self._redact)

    def _spans(self) -> _Spans | None:
        info = current_conversation()
        return self._runs.get(info.conversation_id) if info is not None else None

    def _child(self, name: str, spans: _Spans, kind: Any, attrs: dict[str, Any]) -> Any:
        return self._tracer.start_span(name, context=spans.context, kind=kind,
                                       attributes=attrs)

    def _error(self, span: Any, error_type: str) -> None:
        from opentelemetry.trace import Status, StatusCode

        span.set_attribute(sc.ERROR_TYPE, error_type)
        span.set_status(Status(StatusCode.ERROR, error_type))

    # --- callbacks -----------------------------------------------------------------------
    def on_conversation_start(self, info: ConversationInfo) -> None:
        from opentelemetry.trace import SpanKind

        attrs: dict[str, Any] = {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
                                 sc.GEN_AI_CONVERSATION_ID: info.conversation_id,
                                 sc.AL_CONVERSATION_ID: info.conversation_id}
        if info.agent_name:
            attrs[sc.GEN_AI_AGENT_NAME] = info.agent_name
        if info.model:
            attrs[sc.GEN_AI_REQUEST_MODEL] = info.model
        if info.correlation_id is not None:
            attrs[sc.AL_CORRELATION_ID] = info.correlation_id
        if info.parent_id is not None:
            attrs[sc.AL_PARENT_ID] = info.parent_id
        if info.run_id is not None:  # a workflow step's loop
            attrs[sc.AL_RUN_ID] = info.run_id
            if info.step_id is not None:
                attrs[sc.AL_STEP_ID] = info.step_id
        name = f"{sc.OP_INVOKE_AGENT} {info.agent_name}" if info.agent_name else sc.OP_INVOKE_AGENT
        root = self._tracer.start_span(name, kind=SpanKind.INTERNAL, attributes=attrs)
        self._runs[info.conversation_id] = _Spans(
            root=root, context=self._trace.set_span_in_context(root))

    def on_request(self, request: ModelRequest, iteration: int) -> None:
        from opentelemetry.trace import SpanKind

        spans = self._spans()
        if spans is None:
            return
        attrs: dict[str, Any] = {sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                                 sc.GEN_AI_REQUEST_MODEL: self._name(request.model),
                                 sc.AL_ITERATIONS: iteration}
        info = current_conversation()
        if info is not None:
            attrs[sc.GEN_AI_CONVERSATION_ID] = info.conversation_id
        if request.temperature is not None:
            attrs[sc.GEN_AI_REQUEST_TEMPERATURE] = request.temperature
        if request.max_tokens is not None:
            attrs[sc.GEN_AI_REQUEST_MAX_TOKENS] = request.max_tokens
        if self.capture_content:
            attrs[sc.GEN_AI_INPUT_MESSAGES] = json.dumps(
                [{"role": m.role, "content": self._content(m.text)} for m in request.messages])
        spans.chat = self._child(f"{sc.OP_CHAT} {self._name(request.model)}", spans,
                                 SpanKind.CLIENT, attrs)

    def on_retry(self, attempt: int, error: BaseException) -> None:
        spans = self._spans()
        if spans is not None and spans.chat is not None:
            spans.chat.add_event("retry", {
                sc.AL_ATTEMPT: attempt,
                sc.GEN_AI_PROVIDER_NAME: self._name(str(getattr(error, "provider", "") or "")),
                sc.GEN_AI_REQUEST_MODEL: self._name(str(getattr(error, "model", "") or "")),
                sc.ERROR_TYPE: type(error).__name__,
            })
        if self._metrics is not None:
            self._metrics.on_retry(attempt, error)

    def on_response(self, response: ModelResponse, iteration: int,
                    duration_seconds: float) -> None:
        spans = self._spans()
        if spans is not None and spans.chat is not None:
            chat, spans.chat = spans.chat, None
            u = response.usage
            attrs: dict[str, Any] = {
                sc.GEN_AI_PROVIDER_NAME: self._name(response.provider),
                sc.GEN_AI_RESPONSE_MODEL: self._name(response.model),
                sc.GEN_AI_RESPONSE_FINISH_REASONS: (self._name(response.finish_reason or ""),),
            }
            for key, value in ((sc.GEN_AI_USAGE_INPUT_TOKENS, u.input_tokens),
                               (sc.GEN_AI_USAGE_OUTPUT_TOKENS, u.output_tokens),
                               (sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, u.cache_read_tokens),
                               (sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
                                u.cache_write_tokens),
                               (sc.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS, u.reasoning_tokens),
                               (sc.GEN_AI_RESPONSE_ID, None if response.response_id is None
                                else self._name(response.response_id)),
                               (sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK,
                                response.time_to_first_token)):
                if value is not None:
                    attrs[key] = value
            if u.cost_usd is not None:
                attrs["agentloom.cost_usd"] = float(u.cost_usd)
            if self.capture_content:
                attrs[sc.GEN_AI_OUTPUT_MESSAGES] = json.dumps(
                    [{"role": "assistant", "content": self._content(response.text)}])
            chat.set_attributes(attrs)
            chat.end()
        if self._metrics is not None:
            self._metrics.on_response(response, iteration, duration_seconds)

    def on_model_error(self, error: BaseException, iteration: int,
                       duration_seconds: float) -> None:
        spans = self._spans()
        if spans is not None and spans.chat is not None:
            chat, spans.chat = spans.chat, None
            for key, attr in ((sc.GEN_AI_PROVIDER_NAME, "provider"),
                              ("agentloom.status_code", "status"),
                              ("agentloom.error.phase", "phase")):
                value = getattr(error, attr, None)
                if isinstance(value, str):
                    chat.set_attribute(key, self._name(value))
                elif isinstance(value, int):
                    chat.set_attribute(key, value)
            self._error(chat, type(error).__name__)
            chat.end()
        if self._metrics is not None:
            self._metrics.on_model_error(error, iteration, duration_seconds)

    def on_tool_start(self, call: ToolCallPart) -> None:
        from opentelemetry.trace import SpanKind

        spans = self._spans()
        if spans is None:
            return
        tool = self._name(call.name)  # the model's choice, maybe no tool at all
        attrs: dict[str, Any] = {sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
                                 sc.GEN_AI_TOOL_NAME: tool,
                                 sc.GEN_AI_TOOL_CALL_ID: self._name(call.id),
                                 sc.GEN_AI_TOOL_TYPE: "function"}
        if self.capture_content:
            attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS] = self._content(call.arguments)
        spans.tools[call.id] = self._child(f"{sc.OP_EXECUTE_TOOL} {tool}", spans,
                                           SpanKind.INTERNAL, attrs)

    def on_tool_end(self, call: ToolCallPart, result: ToolResultPart,
                    duration_seconds: float) -> None:
        spans = self._spans()
        span = spans.tools.pop(call.id, None) if spans is not None else None
        if span is not None:
            if self.capture_content:
                span.set_attribute(sc.GEN_AI_TOOL_CALL_RESULT, self._content(result.content))
            if result.is_error:
                self._error(span, "tool_error")
            span.end()
        if self._metrics is not None:
            self._metrics.on_tool_end(call, result, duration_seconds)

    def on_conversation_end(self, summary: ConversationSummary) -> None:
        spans = self._runs.pop(summary.conversation_id, None)
        if self._metrics is not None:
            self._metrics.on_conversation_end(summary)
        if spans is None:
            return
        for dangling in (spans.chat, *spans.tools.values()):
            if dangling is not None:  # cancelled mid-call
                self._error(dangling, "cancelled")
                dangling.end()
        root = spans.root
        root.set_attributes(summary_attributes(summary, self._redact))
        if not summary.status.succeeded:
            self._error(root, summary.error_type or summary.status.value)
        root.end()


def summary_attributes(summary: ConversationSummary,
                       redact: Callable[[str], str] | None = None) -> dict[str, Any]:
    """The summary as root-span attributes: metadata only, same with or without capture.
    Tool, provider and model names are bounded (and redacted, given `redact`); at most
    `MAX_NAMES` tools get a count of their own, the rest are summed under `[other]`."""
    attrs: dict[str, Any] = {
        sc.AL_STATUS: summary.status.value,
        sc.AL_ITERATIONS: summary.iterations,
        sc.AL_ELAPSED: summary.elapsed_seconds,
        sc.AL_CONVERSATION_ID: summary.conversation_id,
        sc.AL_RETRIES: summary.provider_retries,
        sc.AL_STALLED: summary.stalled,
        sc.GEN_AI_CONVERSATION_ID: summary.conversation_id,
    }
    optional = {
        sc.AL_ITERATION_LIMIT: summary.iteration_limit,
        sc.AL_CORRELATION_ID: summary.correlation_id,
        sc.AL_PARENT_ID: summary.parent_id,
        sc.AL_ERROR_TYPE: summary.error_type,
        sc.AL_COST_USD: summary.usage.cost_usd,
        sc.GEN_AI_PROVIDER_NAME: None if summary.provider is None
        else bounded_name(summary.provider, redact),
        sc.GEN_AI_RESPONSE_MODEL: None if summary.model is None
        else bounded_name(summary.model, redact),
        sc.GEN_AI_USAGE_INPUT_TOKENS: summary.usage.input_tokens,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: summary.usage.output_tokens,
    }
    attrs.update({k: v for k, v in optional.items() if v is not None})
    for name, count in counts(summary.tool_calls, redact).items():
        attrs[sc.TOOL_CALLS_PREFIX + name] = count
    for name, count in counts(summary.tool_errors, redact).items():
        attrs[sc.TOOL_ERRORS_PREFIX + name] = count
    return attrs
