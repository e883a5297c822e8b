"""`build_request`: the one request builder of a model turn, for an `Agent`, an `agent`
step and an `llm_call` alike. Apart from `agent.py` so that a workflow's `llm_call`, which
needs only this, does not load the `Agent` class with its streaming, sync portal and tool
planning.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

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
    # `ModelRequest(...)` through its __init__ alone: a class called with keywords packs
    # them into a dict first (Python 3.11), and a request is built per run.
    request: ModelRequest = _new(ModelRequest)
    _init_request(
        request, model=model, messages=tuple(messages), temperature=temperature,
        max_tokens=max_tokens, tool_choice=tool_choice,
        tools=tools.specs if tools is not None else (), reasoning=reasoning,
        stream=stream, vendor_tools=tuple(vendor_tools), cache=cache,
    )
    return output.apply(request) if output is not None else request


_new = object.__new__
_init_request = ModelRequest.__init__
