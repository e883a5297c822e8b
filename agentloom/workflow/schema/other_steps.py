"""The step types after `llm_call`: tool, router, subworkflow, map, approval_gate, ask and
agent, the union of all eight discriminated on `type` (`Step`), and `STEP_TYPES`.

Apart from `steps.py` so that a file of model calls alone never creates these classes
(~25 M instructions of a one-step run's start-up): the loader finds a step's model with
`step_types.step_model`, which imports this module for the first other type it meets.
"""

from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, model_validator

from agentloom.workflow.schema.steps import (
    Attachment,
    LLMCallStep,
    OptionalNumber,
    StepBase,
    Strict,
    empty_dict,
    empty_list,
)


class ToolStep(StepBase):
    type: Literal["tool"]
    tool_name: str
    tool_args: dict[str, Any] = Field(default_factory=empty_dict)


class Condition(Strict):
    expression: str
    target: str


class RouterStep(StepBase):
    type: Literal["router"]
    conditions: list[Condition] = Field(default_factory=empty_list)
    default: str | None = None


class SubworkflowStep(StepBase):
    type: Literal["subworkflow"]
    workflow_path: str | None = None
    workflow_inline: dict[str, Any] | None = None
    input: dict[str, Any] | None = None
    return_keys: list[str] | None = None
    isolated_state: bool = Field(default=False, strict=True)

    @model_validator(mode="after")
    def _one_source(self) -> "SubworkflowStep":
        if (self.workflow_path is None) == (self.workflow_inline is None):
            raise ValueError(
                "a subworkflow step needs exactly one of workflow_path, workflow_inline")
        return self


class MapStep(StepBase):
    """Run `step` (one step) or `steps` (a block) once per item of the list at `over`;
    each run sees the item as `{state.<as>}` and its position as `{state.index}`."""

    type: Literal["map"]
    over: str
    """A state path such as `state.items`: a list at run time."""
    as_: str = Field(default="item", alias="as", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    concurrency: int = Field(default=4, ge=1, le=256, strict=True)
    max_items: int = Field(default=10_000, ge=1, le=1_000_000, strict=True)
    """A list longer than this fails the step before any item runs (the list may be a
    model's answer: a million items would be a million runs)."""
    step: dict[str, Any] | None = None
    steps: list[dict[str, Any]] | None = None
    on_item_error: Literal["fail", "continue"] = "fail"
    """`fail`: the step fails once every item has run if any failed; `continue`: it
    succeeds and each item's status and error are in its output."""

    @model_validator(mode="after")
    def _one_body(self) -> "MapStep":
        if (self.step is None) == (self.steps is None):
            raise ValueError("a map step needs exactly one of step, steps")
        if self.steps is not None and not self.steps:
            raise ValueError("a map step's steps block is empty")
        return self


EnvName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")]
"""The name of an environment variable."""


class Notify(Strict):
    url: str | None = None
    url_env: EnvName | None = None
    """The variable holding the URL, for a webhook whose URL is its credential (Slack)."""
    headers: dict[str, str] = Field(default_factory=empty_dict)
    headers_env: dict[str, EnvName] = Field(default_factory=empty_dict)
    """Header name -> the variable holding its value: a credential kept out of the file."""
    secret_env: EnvName | None = None
    """The variable holding the key the body is signed with (HMAC-SHA256)."""
    body_template: str | None = None
    timeout: OptionalNumber = Field(default=None, gt=0, strict=True)

    @model_validator(mode="after")
    def _one_url(self) -> "Notify":
        if (self.url is None) == (self.url_env is None):
            raise ValueError("notify needs exactly one of url, url_env")
        return self


class ApprovalGateStep(StepBase):
    type: Literal["approval_gate"]
    message: str | None = None
    timeout_seconds: OptionalNumber = Field(default=None, gt=0, strict=True)
    on_timeout: Literal["approve", "reject"] | None = None
    notify: Notify | None = None


class AskStep(StepBase):
    """Pauses the run with a question; the answer, typed by `answer_type`, goes to `output`."""

    type: Literal["ask"]
    question: str
    answer_type: Literal["text", "choose_one", "choose_many", "secret"] = "text"
    choices: list[str] | None = None
    timeout_seconds: OptionalNumber = Field(default=None, gt=0, strict=True)
    default: Any = None
    """The answer used when the run is resumed after `timeout_seconds` (else it fails)."""

    @model_validator(mode="after")
    def _choices(self) -> "AskStep":
        choosing = self.answer_type in ("choose_one", "choose_many")
        if choosing and not self.choices:
            raise ValueError(f"answer_type {self.answer_type} needs a list of 'choices'")
        if not choosing and self.choices:
            raise ValueError(f"'choices' is only for choose_one/choose_many, "
                             f"not answer_type {self.answer_type}")
        return self


class AgentStep(StepBase):
    """Runs an agent of the top-level `agents:` map (its model, tools and rules)."""

    type: Literal["agent"]
    agent: str
    prompt: str | None = None
    conversation: str | None = None
    attachments: list[Attachment] = Field(default_factory=empty_list)

    @model_validator(mode="after")
    def _coherent(self) -> "AgentStep":
        if self.prompt is None and self.conversation is None:
            raise ValueError("an agent step needs a 'prompt' (or a 'conversation')")
        return self


Step = Annotated[
    LLMCallStep | ToolStep | RouterStep | SubworkflowStep | ApprovalGateStep | AgentStep
    | MapStep | AskStep,
    Field(discriminator="type"),
]
_STEP_ADAPTER: TypeAdapter[Any] | None = None


def step_adapter() -> TypeAdapter[Any]:
    """The whole union, built on first use: for a step whose `type` is missing or unknown
    (its errors list the types), and for the JSON Schema."""
    global _STEP_ADAPTER
    if _STEP_ADAPTER is None:
        _STEP_ADAPTER = TypeAdapter(Step)
    return _STEP_ADAPTER


STEP_TYPES: dict[str, type[StepBase]] = {
    "llm_call": LLMCallStep,
    "tool": ToolStep,
    "router": RouterStep,
    "subworkflow": SubworkflowStep,
    "approval_gate": ApprovalGateStep,
    "agent": AgentStep,
    "map": MapStep,
    "ask": AskStep,
}


