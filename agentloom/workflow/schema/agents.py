"""The top-level `agents:` map: a model, its tools and its rules, defined once.

An agent here is data, the same data the Python `agentloom.Agent` takes: `model` (or a
`profile`), `instructions` (its system prompt), `tools`, `output_schema`, `limits` and
`settings`. `AgentSpec` (in `steps/agent.py`) turns one into the other. Agents take no
`thinking` block; saying so is a load error with its line, not a silently dropped field.
"""


import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from agentloom.workflow.schema.steps import OptionalNumber, ResponseSchema, Strict, ToolDecl

AGENT_NAME = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")
"""An agent's name is its speaker name in a conversation, so it takes the same pattern."""


class AgentLimits(Strict):
    max_tool_iterations: int = Field(default=5, ge=1, le=1000, strict=True)
    """Model calls at most in one turn, the answering one included."""


class AgentSettings(Strict):
    temperature: OptionalNumber = Field(default=None, strict=True)
    max_tokens: int | None = Field(default=None, ge=1, strict=True)


class AgentDef(Strict):
    model: str | None = None
    provider: str | None = None
    profile: str | None = None
    """A named profile of `config.profiles` (model, provider, fallback, params)."""
    instructions: str | None = None
    """The agent's system prompt, for its own turns only."""
    description: str | None = None
    tools: list[ToolDecl | str] | None = None
    """Tool names, or declarations; a name is read as `{name: ...}` (see `declared`)."""
    output_schema: ResponseSchema | None = None
    """The final answer's shape; with tools, they stay available and the final answer
    is validated, with re-asks."""
    limits: AgentLimits = Field(default_factory=AgentLimits)
    settings: AgentSettings = Field(default_factory=AgentSettings)
    cache: Literal["auto"] | None = None
    """`auto`: mark the stable prefix of the agent's calls for the prompt cache."""
    thinking: Any = None
    """Never accepted: present only so its error says why."""

    @field_validator("tools", mode="before")
    @classmethod
    def _tool_names(cls, v: Any) -> Any:
        if isinstance(v, list):
            return [{"name": t} if isinstance(t, str) else t for t in v]
        return v

    @property
    def declared(self) -> list[ToolDecl]:
        """The tools as declarations (names were turned into them when validated)."""
        return [t if isinstance(t, ToolDecl) else ToolDecl(name=t) for t in self.tools or ()]

    @field_validator("thinking")
    @classmethod
    def _no_thinking(cls, v: Any) -> Any:
        if v is not None:
            raise ValueError(
                "agents don't take a thinking block; use an llm_call step for reasoning")
        return v

    @model_validator(mode="after")
    def _coherent(self) -> "AgentDef":
        if self.output_schema is not None and self.output_schema.mode == "tool" and self.tools:
            raise ValueError(
                "output_schema.mode tool makes the schema the agent's one tool; drop "
                "mode: tool to keep the agent's own tools")
        return self
