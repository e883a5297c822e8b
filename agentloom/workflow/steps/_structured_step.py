"""A step's `response_schema` (or an agent's `output_schema`), made ready at load.

Everything that can be wrong is found when the file loads: the block is parsed by
`ResponseSchemaSpec.from_dict` (a pydantic path is imported from the run directory, the
process's working directory, as `agentloom run` is started from it), the request's
`ResponseFormat` is built once, and the forced-tool mode is refused for a model that
can't be forced to call a tool. Running is then a matter of putting the prepared parts
on the request; the agent loop validates the reply and re-asks.

Forced-tool mode (spec 004 `outputFormat: structured`) goes through the one loop too:
`ForcedToolClient` wraps the model client, forces the schema's tool on every call (a
re-ask included) and hands the loop the call's arguments as the reply's text, so the
same validator and re-asks apply and the conversation stores the JSON the model wrote.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentloom import structured
from agentloom.errors import ConfigError
from agentloom.messages import (
    ModelRequest,
    ModelResponse,
    NamedToolChoice,
    TextPart,
)
from agentloom.providers import get_protocol

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentloom.messages import StreamEvent
    from agentloom.providers import AttemptRecord, ModelClient
    from agentloom.structured import OutputPlan
    from agentloom.workflow.schema.steps import ResponseSchema

_VENDORS = ("openai", "anthropic", "gemini", "ollama")
_OPENAI_LIKE = ("generic_openai", "local")


def with_client(plan: OutputPlan, client: ModelClient) -> ModelClient:
    """The client a turn under `plan` calls: in forced-tool mode it forces the schema's
    tool and hands the loop the call's arguments as the reply's text."""
    if plan.tool_choice is not None:
        return ForcedToolClient(client, plan.tool_choice)
    return client


def prepare_structured(
    block: ResponseSchema,
    name: str,
    *,
    protocol: str | None,
    model: str | None,
    with_tools: bool = False,
    base_dir: Path | None = None,
) -> OutputPlan:
    """The plan of one schema block. Raises ConfigError (the caller adds file:line).

    `name` is the step id (or the agent's name): the schema's name when none is given.
    `protocol` is the wire protocol the step's model resolves to, when it is known at load.
    """
    spec = structured.ResponseSchemaSpec.from_dict(block.spec_dict(),
                                                   base_dir=base_dir or Path.cwd())
    if block.mode == "tool" and protocol is not None:
        try:
            structured.check_forced_tool_support(get_protocol(protocol).capabilities(model or ""),
                                      provider=protocol, model=model)
        except ConfigError:
            who = f"{protocol} model {model!r}" if model else f"provider {protocol!r}"
            raise ConfigError(
                f"mode tool needs a forced tool call, and {who} can't be forced to "
                "call a tool; drop mode: tool to use the provider's JSON mode") from None
    return structured.plan_output(spec, name, with_tools=with_tools,
                                  forced_tool=block.mode == "tool")


def load_protocol(provider: str | None, model: str | None,
                  providers: Mapping[str, Any] | None = None) -> str | None:
    """The wire protocol a step resolves to, as far as the file says; None if unknown
    (the runtime decides, and the request is checked again when sent)."""
    if provider is not None:
        cfg = (providers or {}).get(provider)
        if cfg is not None:
            if isinstance(cfg, dict):
                kind = cfg.get("type") or cfg.get("protocol")
            else:
                kind = getattr(cfg, "type", None) or getattr(cfg, "protocol", None)
            return kind if kind in _VENDORS else "openai"
        if provider in _VENDORS:
            return provider
        if provider in _OPENAI_LIKE:
            return "openai"
        return None
    if not model:
        return None
    for name in ("anthropic", "gemini", "openai", "ollama"):
        if get_protocol(name).serves(model):
            return name
    return None


class ForcedToolClient:
    """A ModelClient that forces the schema's tool and returns its arguments as text.

    A reply that calls the tool becomes a text reply holding the arguments (as JSON), so
    the loop validates it like any structured reply; a reply with text only passes
    through unchanged and fails validation with a re-ask that names the function.
    """

    __slots__ = ("_choice", "_inner")

    def __init__(self, inner: ModelClient, choice: NamedToolChoice) -> None:
        self._inner = inner
        self._choice = choice

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def complete(self, request: ModelRequest, *,
                       on_event: Callable[[StreamEvent], None] | None = None,
                       on_attempt: Callable[[AttemptRecord], None] | None = None
                       ) -> ModelResponse:
        request = request.replace(tool_choice=self._choice, stream=False)
        response = await self._inner.complete(request, on_event=None, on_attempt=on_attempt)
        try:
            args = structured.parse_forced_tool_call(response, expected=self._choice.name)
        except ValueError as exc:
            if response.tool_calls:
                return _as_text(response, f"(invalid call) {exc}")
            return response
        return _as_text(response, json.dumps(args, ensure_ascii=False))


def _as_text(response: ModelResponse, text: str) -> ModelResponse:
    return dataclasses.replace(response, parts=(TextPart(text=text),))
