"""`build_request`: the one request builder of a model turn, for an `Agent`, an `agent`
step and an `llm_call` alike. Apart from `agent.py` so that a workflow's `llm_call`, which
needs only this, does not load the `Agent` class with its streaming, sync portal and tool
planning.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from agentloom._record import TWINS
from agentloom.messages import Message, ModelRequest, ReasoningConfig, ToolChoice

if TYPE_CHECKING:
    from agentloom.structured import OutputPlan
    from agentloom.tools.contracts import ToolBox


def build_request(
    *,
    model: str,
    messages: Sequence[Message] = (),
    tools: ToolBox | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    tool_choice: ToolChoice = "auto",
    reasoning: ReasoningConfig | None = None,
    stream: bool = False,
    vendor_tools: Sequence[Any] = (),
    output: OutputPlan | None = None,
    cache: Literal["auto"] | None = None,
) -> ModelRequest:
    """The request of one model turn: model, messages, sampling, tools, and the output
    schema's plan put on last (it may add a system sentence or force a tool), so
    requests are built the same way for an Agent, an `agent` step and an `llm_call`."""
    # Made as its positional factory would (`agentloom._record`): a class called with
    # keywords packs them into a dict first (Python 3.11), and a request is built per run.
    # Every field of ModelRequest is set here (tests/loop checks against the class call).
    request: Any = _new(TWINS[ModelRequest])
    request.model = model
    request.messages = messages if type(messages) is tuple else tuple(messages)
    request.temperature = temperature
    request.max_tokens = max_tokens
    request.tools = tools.specs if tools is not None else ()
    request.tool_choice = tool_choice
    request.reasoning = reasoning
    request.response_format = None
    request.stream = stream
    request.vendor_tools = vendor_tools if type(vendor_tools) is tuple else tuple(vendor_tools)
    request.extra = {}
    request.headers = {}
    request.prefill = None
    request.cache = cache
    request.__class__ = ModelRequest
    return output.apply(request) if output is not None else request  # type: ignore[no-any-return]


def turn_request(request: ModelRequest, messages: tuple[Message, ...], stream: bool,
                 tool_choice: ToolChoice) -> ModelRequest:
    """`request.replace(messages=..., stream=..., tool_choice=...)`, made field by field as
    `build_request` is: the loop asks this for every call after a run's first."""
    turn: Any = _new(TWINS[ModelRequest])
    turn.model = request.model
    turn.messages = messages
    turn.temperature = request.temperature
    turn.max_tokens = request.max_tokens
    turn.tools = request.tools
    turn.tool_choice = tool_choice
    turn.reasoning = request.reasoning
    turn.response_format = request.response_format
    turn.stream = stream
    turn.vendor_tools = request.vendor_tools
    turn.extra = request.extra
    turn.headers = request.headers
    turn.prefill = request.prefill
    turn.cache = request.cache
    turn.__class__ = ModelRequest
    return turn  # type: ignore[no-any-return]


_new = object.__new__
