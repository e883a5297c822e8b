"""MetricsObserver: OpenTelemetry counters and histograms of agent runs.

Attributes are low-cardinality only: operation, provider, model, agent name, status,
tool name, error type. Never a conversation, correlation or parent id: those would make
one time series per run. A name the model or the provider chose (a tool the model called,
the reply's model) is bounded, and redacted given `redact`, as on spans. Uses the
OpenTelemetry API (a no-op without an SDK configured); pass `meter_provider` to record
into a specific one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentloom.loop.observer import NullObserver, current_conversation
from agentloom.loop.summary import ConversationSummary
from agentloom.messages import ModelRequest, ModelResponse, ToolCallPart, ToolResultPart
from agentloom.observe import semconv as sc
from agentloom.observe._bounds import name as bounded_name

_SCOPE = "agentloom"


class MetricsObserver(NullObserver):
    """Records model-call durations and token usage (GenAI semconv metrics), and
    conversation, tool and retry counts (ours)."""

    def __init__(self, meter_provider: Any = None, *,
                 redact: Callable[[str], str] | None = None) -> None:
        from opentelemetry import metrics

        self._redact = redact

        meter = (meter_provider.get_meter(_SCOPE) if meter_provider is not None
                 else metrics.get_meter(_SCOPE))
        self._op_duration = meter.create_histogram(
            sc.METRIC_OPERATION_DURATION, unit="s",
            description="Duration of GenAI operations (model calls, retries included)")
        self._tokens = meter.create_histogram(
            sc.METRIC_TOKEN_USAGE, unit="{token}", description="Tokens used per model call")
        self._first_chunk = meter.create_histogram(
            sc.METRIC_TIME_TO_FIRST_CHUNK, unit="s",
            description="Time to the first chunk of a streamed model call")
        self._conversations = meter.create_counter(
            sc.METRIC_CONVERSATIONS, unit="{conversation}",
            description="Finished conversations by status")
        self._conv_duration = meter.create_histogram(
            sc.METRIC_CONVERSATION_DURATION, unit="s", description="Conversation wall time")
        self._tool_calls = meter.create_counter(
            sc.METRIC_TOOL_CALLS, unit="{call}", description="Tool calls by name and outcome")
        self._tool_duration = meter.create_histogram(
            sc.METRIC_TOOL_DURATION, unit="s", description="Duration of one tool call")
        self._retries = meter.create_counter(
            sc.METRIC_RETRIES, unit="{attempt}", description="Model-call attempts after the first")

    def _name(self, text: str) -> str:
        return bounded_name(text, self._redact)

    @staticmethod
    def _base() -> dict[str, Any]:
        info = current_conversation()
        attrs: dict[str, Any] = {}
        if info is not None and info.agent_name:
            attrs[sc.GEN_AI_AGENT_NAME] = info.agent_name
        return attrs

    def on_response(self, response: ModelResponse, iteration: int,
                    duration_seconds: float) -> None:
        attrs = self._base()
        attrs.update({sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                      sc.GEN_AI_PROVIDER_NAME: self._name(response.provider),
                      sc.GEN_AI_RESPONSE_MODEL: self._name(response.model)})
        info = current_conversation()
        if info is not None and info.model:
            attrs[sc.GEN_AI_REQUEST_MODEL] = info.model
        self._op_duration.record(duration_seconds, attrs)
        if response.time_to_first_token is not None:
            self._first_chunk.record(response.time_to_first_token, attrs)
        u = response.usage
        if u.input_tokens is not None:
            self._tokens.record(u.input_tokens, {**attrs, sc.GEN_AI_TOKEN_TYPE: "input"})
        if u.output_tokens is not None:
            self._tokens.record(u.output_tokens, {**attrs, sc.GEN_AI_TOKEN_TYPE: "output"})

    def on_model_error(self, error: BaseException, iteration: int,
                       duration_seconds: float) -> None:
        attrs = self._base()
        attrs.update({sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                      sc.ERROR_TYPE: type(error).__name__})
        provider = getattr(error, "provider", None)
        if isinstance(provider, str):
            attrs[sc.GEN_AI_PROVIDER_NAME] = self._name(provider)
        self._op_duration.record(duration_seconds, attrs)

    def on_retry(self, attempt: int, error: BaseException) -> None:
        self._retries.add(1, {
            sc.GEN_AI_PROVIDER_NAME: self._name(str(getattr(error, "provider", ""))),
            sc.GEN_AI_REQUEST_MODEL: self._name(str(getattr(error, "model", "") or ""))})

    def on_tool_end(self, call: ToolCallPart, result: ToolResultPart,
                    duration_seconds: float) -> None:
        attrs = {**self._base(), sc.GEN_AI_TOOL_NAME: self._name(call.name),
                 sc.AL_TOOL_ERROR: result.is_error}
        self._tool_calls.add(1, attrs)
        self._tool_duration.record(duration_seconds, attrs)

    def on_conversation_end(self, summary: ConversationSummary) -> None:
        attrs: dict[str, Any] = {sc.AL_STATUS: summary.status.value}
        if summary.agent_name:
            attrs[sc.GEN_AI_AGENT_NAME] = summary.agent_name
        if summary.provider:
            attrs[sc.GEN_AI_PROVIDER_NAME] = self._name(summary.provider)
        if summary.model:
            attrs[sc.GEN_AI_RESPONSE_MODEL] = self._name(summary.model)
        self._conversations.add(1, attrs)
        self._conv_duration.record(summary.elapsed_seconds, attrs)

    # Unused callbacks stay no-ops (NullObserver).
    def on_request(self, request: ModelRequest, iteration: int) -> None:
        pass
