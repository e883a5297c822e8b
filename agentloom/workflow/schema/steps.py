"""Strict pydantic models of steps: what every step type shares (`StepBase`), the blocks
a model call takes, and the `llm_call` step; the other types are in `other_steps.py`.

`extra="forbid"` everywhere, so a typo such as `temprature` is an error, not a silently
dropped field; the loader turns pydantic's errors into `file:line` messages with a
did-you-mean. Fields that later step types share (`output`, `timeout`, `retry`,
`depends_on`) live in `StepBase`. Adding a step type is a model in `other_steps.py`, its
name in `step_types.py`, and a module in `workflow/steps/`.
"""


import operator
import re
from collections.abc import Callable
from math import isfinite
from typing import Annotated, Any, Literal, get_args, get_origin

from annotated_types import Ge, Gt, Le
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.types import Strict as StrictMode

from agentloom.errors import ConfigError
from agentloom.routing import parse_fallback

STEP_ID = r"^[A-Za-z_][A-Za-z0-9_\-]*$"
DEFAULT_RETRYABLE_STATUS = (429, 500, 502, 503, 504)
MAX_RETRIES = 100
"""The most retries a step may ask for (a profile's parser, in `agentloom.routing`, holds
its `retries` to the same)."""
MAX_BACKOFF_SECONDS = 600.0
"""The longest wait between two attempts a `retry` block may ask for: ten minutes, the
longest `Retry-After` a step waits out."""
StatusCode = Annotated[StrictInt, Field(ge=100, le=599)]

EXPONENT_NUMBER = re.compile(
    r"[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)[eE][-+]?[0-9]+")
"""A number with an exponent, as YAML 1.2 writes it (`1e3`, `1.5e-3`, `2E+6`)."""


def yaml_exponent(value: Any) -> Any:
    """`1e3` as the number it is. YAML 1.1, which PyYAML reads, takes a number with an
    exponent but no dot or no sign (`1e3`, `1.5e3`) for text, where YAML 1.2 and a
    person read a number; a number field takes it so (as it did when it converted any
    text). Other text is left for the strict check to refuse."""
    if type(value) is str and EXPONENT_NUMBER.fullmatch(value):
        return float(value.replace("_", ""))
    return value


READ_EXPONENT = BeforeValidator(yaml_exponent)
Number = Annotated[float, READ_EXPONENT]
"""A number field's type; with `Field(strict=True)`: an int or a float, never a flag or
text (but `1e3`, see `yaml_exponent`)."""
OptionalNumber = Annotated[float | None, READ_EXPONENT]


class Strict(BaseModel):
    # Built on first use: a run pays only for the models its file needs (the loader
    # validates each step with its own type's model), not for the whole format.
    # A non-finite number (`.inf`, `.nan`) has no JSON form to send nor a meaning as a
    # limit: refused at load, by line, rather than sent as `Infinity` to a provider.
    # Every number and flag of the format is `strict=True`: `timeout: true`, `stream: 1`,
    # `max_retries: '3'` and `concurrency: 2.0` are mistakes to name by line, not values
    # to convert (pydantic's lax mode read `true` as 1 and `'3'` as 3); an int is still a
    # number (`timeout: 30`), and a number field reads `1e3` (`Number`).
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True,
                              allow_inf_nan=False)


# Empty-container factories as Python functions, not `list`/`dict`: pydantic reads a
# factory's signature when it builds a default, and a builtin's signature is parsed from
# text with the tokenizer, whose patterns a one-step run would otherwise compile just
# for that (~14 M instructions, a tenth of what it may spend beyond a bare HTTP call).
def empty_list() -> list[Any]:
    return []


def empty_dict() -> dict[str, Any]:
    return {}


class RetryConfig(Strict):
    """Retries of one step: a retryable failure re-runs the whole step, its tool loop
    included, in the engine. Only a step under a profile has a client that retries one
    call by itself (the profile's `retries`, spec 004); without one a failing call falls
    back at once and this retry decides what comes next."""

    max_retries: int | None = Field(default=None, ge=0, le=MAX_RETRIES, strict=True)
    """Retries after the first attempt; unset means `config.max_retries`, else 3."""
    backoff_base: Number = Field(default=2.0, ge=1.0, strict=True)
    """The wait before retry n (from 0) is backoff_base**n seconds, capped by backoff_max."""
    backoff_max: Number = Field(default=60.0, ge=0, le=MAX_BACKOFF_SECONDS, strict=True)
    """The longest wait between two attempts, in seconds (at most ten minutes)."""
    jitter: bool | float = True
    """True spreads each wait by ±25%; a number is the fraction; false waits exactly."""
    retryable_status_codes: list[StatusCode] = Field(
        default_factory=lambda: list(DEFAULT_RETRYABLE_STATUS))

    @field_validator("jitter", mode="before")
    @classmethod
    def _jitter_kind(cls, v: Any) -> Any:
        # `bool | float` would read the text 'yes' as true and give two errors for 'x'.
        v = yaml_exponent(v)
        if type(v) not in (bool, int, float):
            raise ValueError("jitter must be true, false or a fraction between 0 and 1")
        return v

    @field_validator("jitter")
    @classmethod
    def _jitter_range(cls, v: bool | float) -> bool | float:
        if not isinstance(v, bool) and not 0 <= v <= 1:
            raise ValueError("jitter must be true, false or a fraction between 0 and 1")
        return v


class StepBase(Strict):
    id: str = Field(pattern=STEP_ID)
    depends_on: list[str] = Field(default_factory=empty_list)
    output: str | None = None
    """The state key (a path, such as `report.summary`) that receives the step's result."""
    timeout: OptionalNumber = Field(default=None, gt=0, strict=True)
    """Seconds per attempt."""
    retry: RetryConfig | None = None
    description: str | None = None
    on_error: list[dict[str, Any]] | None = None
    """Steps run when this step fails for good (after its retries), with the error in
    `{state.error}`; if they succeed, the failure is handled and dependents run."""

    @field_validator("depends_on", mode="before")
    @classmethod
    def _one_dep(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v


class Attachment(Strict):
    type: Literal["image", "pdf", "audio"] = "image"
    source: str
    media_type: str | None = None
    fetch: Literal["local", "provider"] = "local"


class Thinking(Strict):
    enabled: bool = Field(default=False, strict=True)
    budget_tokens: int | None = Field(default=None, ge=1, strict=True)
    level: Literal["low", "medium", "high"] | None = None
    capture_reasoning: bool = Field(default=True, strict=True)


class ToolDecl(Strict):
    """A tool the model may call: what it sees. Without parameters, the registered
    tool's own schema is sent."""

    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


class NamedChoice(Strict):
    name: str


class ResponseSchema(Strict):
    type: Literal["pydantic", "json_schema", "json_object"] = "json_object"
    model: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    name: str | None = None
    strict: bool = Field(default=True, strict=True)
    description: str | None = None
    mode: Literal["native", "tool"] = "native"
    """How the shape is asked for: `native` (the provider's JSON mode, or the schema in
    the system prompt), or `tool` (spec 004's `outputFormat: structured`: the schema is
    the one tool and the model is forced to call it)."""

    def spec_dict(self) -> dict[str, Any]:
        """The block as `ResponseSchemaSpec.from_dict` reads it (without `mode`)."""
        out = self.model_dump(by_alias=True, exclude_none=True, exclude={"mode"})
        if self.type == "json_object":
            out.pop("schema", None)
        return out

    @model_validator(mode="after")
    def _needs(self) -> "ResponseSchema":
        if self.type == "pydantic" and not self.model:
            raise ValueError("response_schema of type pydantic needs 'model' (a dotted path)")
        if self.type == "json_schema" and self.schema_ is None:
            raise ValueError("response_schema of type json_schema needs 'schema'")
        if self.schema_ is not None and _allows_additional(self.schema_):
            raise ValueError("additionalProperties: true is refused in response_schema")
        return self


def _allows_additional(node: Any) -> bool:
    if isinstance(node, dict):
        if node.get("additionalProperties") is True:
            return True
        return any(_allows_additional(v) for v in node.values())
    if isinstance(node, list):
        return any(_allows_additional(v) for v in node)
    return False


_SPEAKER = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")


class LLMCallStep(StepBase):
    type: Literal["llm_call"]
    prompt: str | None = None
    system_prompt: str | None = None
    model: str | None = None
    provider: str | None = None
    profile: str | None = None
    """A top-level `profiles:` entry; the step's own fields win over the profile's."""
    fallback: list[str | dict[str, Any]] | None = None
    """Tried in order once this step's model is out of retries or can't take the request:
    `[{provider: anthropic, model: claude-haiku-4-5, max_tokens: 800}, ...]`."""
    temperature: OptionalNumber = Field(default=None, strict=True)
    """Sent as given, without a range check."""
    max_tokens: int | None = Field(default=None, ge=1, strict=True)
    stream: bool | None = Field(default=None, strict=True)
    attachments: list[Attachment] = Field(default_factory=empty_list)
    thinking: Thinking | None = None
    tools: list[ToolDecl] | None = None
    functions: list[str] | None = None
    """Workflow functions (top-level `functions:`) the model may call."""
    mcp: list[str] | None = None
    """MCP tools as `server.tool`, or `server` for every tool it offers."""
    vendor_tools: list[Any] | None = None
    """Provider-run tools (web search, ...), sent to the provider unchanged."""
    cache: Literal["auto"] | None = None
    """`auto`: mark the stable prefix for the provider's prompt cache."""
    tool_choice: Literal["auto", "none", "required"] | NamedChoice = "auto"
    max_tool_iterations: int = Field(default=5, ge=1, le=1000, strict=True)
    response_schema: ResponseSchema | None = None
    conversation: str | None = None
    speaker: str | None = None

    @field_validator("fallback")
    @classmethod
    def _fallback(cls, v: Any) -> Any:
        try:
            parse_fallback(v)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return v

    @field_validator("tools", mode="before")
    @classmethod
    def _tool_names(cls, v: Any) -> Any:
        if isinstance(v, list):
            return [{"name": t} if isinstance(t, str) else t for t in v]
        return v

    @field_validator("speaker")
    @classmethod
    def _speaker(cls, v: str | None) -> str | None:
        if v is not None and not _SPEAKER.match(v):
            raise ValueError("speaker takes letters, digits, _ and -, up to 64 characters")
        return v

    @model_validator(mode="after")
    def _coherent(self) -> "LLMCallStep":
        if self.prompt is None and self.conversation is None:
            raise ValueError("an llm_call step needs a 'prompt' (or a 'conversation')")
        if (self.tools or self.functions or self.mcp) and self.response_schema is not None:
            raise ValueError(
                "tools and response_schema can't share a step (an agent with an "
                "output_schema combines them)"
            )
        # max_tokens against thinking.budget_tokens is Claude's rule alone (checked when
        # the step is prepared, with its model): OpenAI and Ollama ignore the budget.
        return self


# --- steps taken as they are -------------------------------------------------------------
# A step model's validator costs 10-20 ms to build, once per type, which a one-step run
# pays at start-up. A step whose every key is a field of a plain type (text, a flag, a
# number, a literal) with a value of exactly that type needs no conversion: it is built
# from its values and its model checks are run on it. Anything else (a nested block, a
# value pydantic would convert, a field with its own validator) goes through the model.

_Check = Callable[[Any], bool]
_ID = re.compile(STEP_ID.removeprefix("^").removesuffix("$"))  # pydantic anchors it so
_PLANS: dict[type[StepBase], tuple[dict[str, _Check], tuple[Callable[..., Any], ...]] | None] = {}


def _bounded(check: _Check, metadata: list[Any]) -> _Check | None:
    bounds: list[tuple[Callable[[Any, Any], bool], Any]] = []
    for m in metadata:
        if isinstance(m, Ge):
            bounds.append((operator.ge, m.ge))
        elif isinstance(m, Gt):
            bounds.append((operator.gt, m.gt))
        elif isinstance(m, Le):
            bounds.append((operator.le, m.le))
        elif (isinstance(m, StrictMode) and m.strict) or m is READ_EXPONENT:
            pass  # the checks below take a value of exactly its type: stricter still
        else:
            return None
    if not bounds:
        return check
    return lambda v: check(v) and (v is None or all(op(v, b) for op, b in bounds))


def _plain_check(name: str, annotation: Any, metadata: list[Any]) -> _Check | None:
    if name == "id" and annotation is str:  # the one pattern: STEP_ID
        return lambda v: type(v) is str and _ID.fullmatch(v) is not None
    optional = False
    args = get_args(annotation)
    if type(None) in args and len(args) == 2:
        optional, annotation = True, next(a for a in args if a is not type(None))
    check: _Check
    if annotation is float:  # finite, as `allow_inf_nan=False` asks
        check = lambda v: type(v) is float and isfinite(v)  # noqa: E731
    elif annotation in (str, bool, int):
        exact = annotation
        check = lambda v: type(v) is exact  # noqa: E731  (int is not bool, float not int)
    elif get_origin(annotation) is Literal and all(type(a) is str for a in get_args(annotation)):
        words = frozenset(get_args(annotation))
        check = lambda v: type(v) is str and v in words  # noqa: E731
    else:
        return None
    if optional:
        inner = check
        check = lambda v: v is None or inner(v)  # noqa: E731
    return _bounded(check, metadata)


def _plan(model: type[StepBase]) -> tuple[dict[str, _Check], tuple[Callable[..., Any], ...]] | None:
    if model in _PLANS:
        return _PLANS[model]
    decorators = model.__pydantic_decorators__
    validated = {f for d in decorators.field_validators.values() for f in d.info.fields}
    checks: dict[str, _Check] = {}
    for name, info in model.model_fields.items():
        if info.alias not in (None, name):
            continue
        check = None if name in validated else _plain_check(name, info.annotation,
                                                            info.metadata)
        if check is not None:
            checks[name] = check
    after = tuple(d.func for d in decorators.model_validators.values()
                  if d.info.mode == "after")
    plan = None if len(after) != len(decorators.model_validators) else (checks, after)
    _PLANS[model] = plan
    return plan


def _dependencies(value: Any) -> list[str] | None:
    """`depends_on` as `StepBase._one_dep` and `list[str]` take it, when no conversion
    is needed beyond a single name."""
    if type(value) is str:
        return [value]
    if type(value) is list and all(type(v) is str for v in value):
        return list(value)
    return None


def plain_step(model: type[StepBase], raw: Any) -> StepBase | None:
    """`model.model_validate(raw)` for a step `raw` whose values need no conversion, without
    building the model's validator; None for anything else, including a step the model
    would refuse (validate it then, for its errors)."""
    plan = _plan(model)
    if plan is None or type(raw) is not dict:
        return None
    checks, after = plan
    values = dict(raw)
    for key, value in raw.items():
        if key == "depends_on":
            deps = _dependencies(value)
            if deps is None:
                return None
            values[key] = deps
            continue
        check = checks.get(key) if type(key) is str else None
        if check is None or not check(value):
            return None
    step = model.model_construct(_fields_set=set(raw), **values)
    try:
        for validate in after:
            step = validate(step)
    except (ValueError, AssertionError, TypeError, ValidationError):  # the model says why
        return None
    return step
