"""OpenTelemetry GenAI semantic-convention names, and our own `agentloom.*` names.

Kept as constants in one module so spans, metrics and tests agree; a drift test
(tests/observe/test_semconv.py) checks each GenAI name against the published
`opentelemetry-semantic-conventions` package when it is installed. Only the API package
is needed at run time: these are plain strings.
"""

from __future__ import annotations

# --- operations and span names --------------------------------------------------------
OP_INVOKE_AGENT = "invoke_agent"
OP_CHAT = "chat"
OP_EXECUTE_TOOL = "execute_tool"
OP_INVOKE_WORKFLOW = "invoke_workflow"

# --- GenAI attributes ------------------------------------------------------------------
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"
GEN_AI_WORKFLOW_NAME = "gen_ai.workflow.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_REQUEST_TEMPERATURE = "gen_ai.request.temperature"
GEN_AI_REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_RESPONSE_ID = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
GEN_AI_USAGE_REASONING_OUTPUT_TOKENS = "gen_ai.usage.reasoning.output_tokens"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"
GEN_AI_TOOL_TYPE = "gen_ai.tool.type"
GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
GEN_AI_TOKEN_TYPE = "gen_ai.token.type"
ERROR_TYPE = "error.type"

# --- GenAI metrics ---------------------------------------------------------------------
METRIC_OPERATION_DURATION = "gen_ai.client.operation.duration"
METRIC_TOKEN_USAGE = "gen_ai.client.token.usage"
METRIC_TIME_TO_FIRST_CHUNK = "gen_ai.client.operation.time_to_first_chunk"
"""Recorded for streamed calls only, as the conventions ask."""

# --- ours --------------------------------------------------------------------------------
AL_STATUS = "agentloom.conversation.status"
AL_ITERATIONS = "agentloom.conversation.iterations"
AL_ITERATION_LIMIT = "agentloom.conversation.iteration_limit"
AL_ELAPSED = "agentloom.conversation.elapsed_seconds"
AL_CONVERSATION_ID = "agentloom.conversation.id"
AL_CORRELATION_ID = "agentloom.conversation.correlation_id"
AL_PARENT_ID = "agentloom.conversation.parent_id"
AL_RETRIES = "agentloom.conversation.provider_retries"
AL_STALLED = "agentloom.conversation.stalled"
AL_ERROR_TYPE = "agentloom.conversation.error_type"
AL_COST_USD = "agentloom.conversation.cost_usd"
TOOL_CALLS_PREFIX = "agentloom.tool.calls."
TOOL_ERRORS_PREFIX = "agentloom.tool.errors."
AL_ATTEMPT = "agentloom.attempt"
AL_RUN_ID = "agentloom.run.id"
AL_STEP_ID = "agentloom.step.id"
AL_WORKFLOW_NAME = "agentloom.workflow.name"
RUN_PREFIX = "agentloom.run."
AL_TOOL_ERROR = "agentloom.tool.error"

METRIC_CONVERSATIONS = "agentloom.conversations"
METRIC_CONVERSATION_DURATION = "agentloom.conversation.duration"
METRIC_TOOL_CALLS = "agentloom.tool.calls"
METRIC_TOOL_DURATION = "agentloom.tool.duration"
METRIC_RETRIES = "agentloom.provider.retries"
METRIC_WORKFLOW_RUNS = "agentloom.workflow.runs"
METRIC_WORKFLOW_DURATION = "agentloom.workflow.duration"
