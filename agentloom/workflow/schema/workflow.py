"""The workflow file, format v1: `name`, `version`, `description`, `config`, `providers`,
`state`, `state_schema`, `steps`.

Compatible with the public AgentLoom's files, strict where it was lax: every model forbids
unknown fields, and every `config` field has an effect (see each field's docstring).
Steps are validated one by one by the loader, each by its own type's model
(`step_types.step_model`), so one bad step does not hide the problems of the others.
"""


from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator

from agentloom import tools
from agentloom.errors import ConfigError
from agentloom.pricing import PriceTable
from agentloom.routing import (
    Profile,
    endpoint_from_config,
    parse_breaker,
    parse_profiles,
    parse_rate_limits,
    profile_endpoint,
)
from agentloom.workflow.schema.agents import AgentDef
from agentloom.workflow.schema.step_types import step_union
from agentloom.workflow.schema.steps import (
    MAX_RETRIES,
    OptionalNumber,
    RetryConfig,
    StepBase,
    Strict,
    empty_dict,
)
from agentloom.workflow.schema.tools import FunctionDecl, MCPServerDecl

__all__ = ["ProviderConfig", "RetryConfig", "SandboxConfig", "WorkflowConfig",
           "WorkflowDefinition", "plain_definition", "valid_providers"]


class SandboxConfig(Strict):
    """What the built-in tools may touch; handed as written (unset keys left out) to
    `agentloom.tools.SandboxPolicy.from_config`, which owns the defaults."""

    enabled: bool | None = Field(default=None, strict=True)
    allowed_commands: list[str] | None = None
    allowed_paths: list[str] | None = None
    readable_paths: list[str] | None = None
    writable_paths: list[str] | None = None
    allow_network: bool | None = Field(default=None, strict=True)
    allowed_domains: list[str] | None = None
    allowed_schemes: list[str] | None = None
    allow_private_addresses: bool | None = Field(default=None, strict=True)
    allowed_addresses: list[str] | None = None
    max_output_bytes: int | None = Field(default=None, ge=0, strict=True)
    max_write_bytes: int | None = Field(default=None, ge=0, strict=True)
    danger_opt_in: list[str] | None = None
    allow_internal_webhook_targets: bool | None = Field(default=None, strict=True)
    isolation: Literal["auto", "bwrap", "none"] | None = None
    env: list[str] | None = None

    @model_validator(mode="after")
    def _builds_a_policy(self) -> "SandboxConfig":
        # Refusals the policy makes on its own (an interpreter without danger_opt_in, a
        # bad env entry) surface at load, with the file and line, not at the first call.
        try:
            tools.SandboxPolicy.from_config(self.model_dump(exclude_unset=True))
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return self


MAX_MOCK_LATENCY_MS = 3_600_000
"""The longest mock delay `config.latency_ms` asks for, an hour: a mock file's own bound
(`agentloom.recording.mock_responses.MAX_LATENCY_MS`, not imported: loading a workflow
doesn't load the mock reader)."""

class WorkflowConfig(Strict):
    provider: str | None = None
    """Provider of every step without its own; unset lets the runtime choose."""
    model: str | None = None
    """Model of every step without its own. `--model` changes this, never a step's model."""
    stream: bool = Field(default=False, strict=True)
    """Stream every step's reply unless the step says `stream: false`."""
    max_concurrent_steps: int = Field(default=10, ge=1, le=1024, strict=True)
    """Steps running at once, at most."""
    timeout: OptionalNumber = Field(default=None, gt=0, strict=True)
    """Whole-run deadline in seconds: work in flight is cancelled, status deadline_exceeded."""
    budget_usd: OptionalNumber = Field(default=None, ge=0, strict=True)
    """No step starts once the run has spent this much; a step whose cost is unknown
    fails the run closed (status budget_exceeded)."""
    max_tokens_per_run: int | None = Field(default=None, ge=1, strict=True)
    """Token budget of the run (input + output over every model call), checked before each
    call with that call's worst case, like `budget_usd`."""
    max_steps: int = Field(default=100_000, ge=1, le=10_000_000, strict=True)
    """Steps one run may start, those of the runs nested in it (map items, subworkflows,
    on_error blocks, workflow functions) included: nested maps multiply, and a model's
    answer may be the list a map runs over."""
    rate_limits: dict[str, dict[str, Any]] | None = None
    """`{provider: {rpm: N, tpm: N}}`; providers not named are not limited."""
    circuit_breaker: dict[str, Any] | None = None
    """`{failure_threshold: 5, recovery_seconds: 30, half_open_max: 1}` for every endpoint."""
    prices: str | dict[str, Any] | None = None
    """A price file (JSON/YAML, relative to the workflow file) or an inline
    `{provider: {model: {input, output, cached_input, cache_write}}}` map, USD per 1M
    tokens, over the packaged table."""

    @field_validator("rate_limits")
    @classmethod
    def _rate_limits(cls, v: Any) -> Any:
        if v is not None:
            _config_checked(parse_rate_limits, v)
        return v

    @field_validator("circuit_breaker")
    @classmethod
    def _breaker(cls, v: Any) -> Any:
        if v is not None:
            _config_checked(parse_breaker, v)
        return v

    @field_validator("prices")
    @classmethod
    def _prices(cls, v: Any) -> Any:
        if isinstance(v, dict):
            _config_checked(PriceTable.from_mapping, v)
        return v
    def block_defaults(self) -> dict[str, Any]:
        """The fields set here that a block of the file takes (`BLOCK_DEFAULTS`), as a
        block's `config:` mapping."""
        return self.model_dump(include=set(BLOCK_DEFAULTS), exclude_unset=True)

    max_retries: int | None = Field(default=None, ge=0, le=MAX_RETRIES, strict=True)
    """Default `retry.max_retries` of every step (3 when neither is set)."""
    on_step_failure: Literal["skip_downstream", "continue"] = "skip_downstream"
    """What a failed step does to its dependents: skip them, or let them run."""
    strict_outputs: bool = Field(default=False, strict=True)
    """Two steps that may run at once writing the same `output` key: error, not warning."""
    sandbox: SandboxConfig | None = None
    max_tools: int | None = Field(default=None, ge=1, strict=True)
    """The most tools one model call may carry (a step declaring more is a load error)."""
    tool_error_prompt: str | None = None
    """Appended to a failing tool's result, to tell the model how to recover."""
    responses_file: str | None = None
    """With `provider: mock`: the recording to replay (the public AgentLoom's format)."""
    latency_model: Literal["constant", "normal", "replay"] | None = None
    latency_ms: OptionalNumber = Field(default=None, ge=0, le=MAX_MOCK_LATENCY_MS, strict=True)
    """A mock reply's delay, at most an hour (as a mock file's own `latency_ms`): 1e300
    slept for ever."""
    capture_prompts: bool = Field(default=False, strict=True)
    """Put messages, tool arguments and results in `--trace`/`--otel` output (redacted),
    as `--trace-content` does; the public AgentLoom's name for it."""


BLOCK_DEFAULTS = ("provider", "model", "stream", "max_retries", "on_step_failure",
                  "strict_outputs", "max_tools", "tool_error_prompt", "responses_file",
                  "latency_model", "latency_ms", "capture_prompts")
"""The `config` fields a block of steps (a `map` body, an `on_error` block) takes from
its file: what its steps ask for by default. The run-wide ones (deadline, caps, rate
limits, breaker, prices, sandbox) stay the run's, which the block runs inside."""


class ProviderConfig(Strict):
    """An endpoint named in the top-level `providers:` map."""

    type: str | None = Field(default=None, alias="type")
    """The wire protocol: openai, anthropic, gemini, ollama (also accepted as `protocol`)."""
    protocol: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    """The environment variable holding the key (read by the CLI's runtime)."""
    api_key: str | None = None
    """A key written in the file; prefer api_key_env."""
    headers: dict[str, str] = Field(default_factory=empty_dict)
    models: list[str] | None = None
    max_reply_bytes: int | None = Field(default=None, gt=0, strict=True)
    """The largest reply accepted (decompressed; a stream in total); default 32 MB."""
    api: str | dict[str, str] | None = None
    """OpenAI protocol only: `responses` or `chat_completions`, for every model or as a
    mapping of model -> api."""

    def as_config(self) -> dict[str, Any]:
        """The entry as a runtime takes it (`Runtime.add_provider`): the fields written."""
        return self.model_dump(exclude_none=True, exclude_defaults=True, by_alias=True)


class StateKeyRule(Strict):
    redact: bool = Field(default=False, strict=True)
    description: str | None = None


class _StepsSeenAlone:
    """`steps` as the loader hands them over: models it validated one by one, each with its
    own type's model, so that one bad step does not hide another's problems. Building the
    whole union here would only cost start-up time; a raw step (a caller validating a plain
    mapping) still goes through it. The JSON Schema is the union's. Both ask for at least
    one step. The union is made when first needed (`step_union`), so a file of model calls
    never creates the other step types' classes."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.list_schema(core_schema.no_info_plain_validator_function(_step),
                                       min_length=1)

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return handler(core_schema.list_schema(step_union().core_schema, min_length=1))


def _step(value: Any) -> Any:
    return value if isinstance(value, StepBase) else step_union().validate_python(value)


class WorkflowDefinition(Strict):
    name: str
    version: str = "1.0"

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, v: Any) -> Any:
        # `version: 1.0` in YAML is a float; the format means the text.
        return str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v

    description: str | None = None
    config: WorkflowConfig = Field(default_factory=WorkflowConfig)
    providers: dict[str, ProviderConfig] = Field(default_factory=empty_dict)
    """Endpoints by name; each is built here as the runtime will build it when a run
    adds it (`endpoint_from_config`), so what that refuses (an unknown `type`, a bad
    `api`, an empty `api_key_env`) is a load error at its line, not the run's."""

    @field_validator("providers")
    @classmethod
    def _providers(cls, v: dict[str, ProviderConfig]) -> Any:
        for name, entry in v.items():
            _provider_checked(name, entry)
        return v

    profiles: dict[str, dict[str, Any]] = Field(default_factory=empty_dict)
    """Named model setups (spec 004) a step uses with `profile: name`; checked here, read
    by `agentloom.workflow.steps.profiles`."""

    @field_validator("profiles")
    @classmethod
    def _profiles(cls, v: dict[str, dict[str, Any]], info: ValidationInfo) -> Any:
        declared = info.data.get("providers")
        # `providers` failed (and is reported): its names are not held against profiles.
        known = None if declared is None else known_providers(declared)
        _config_checked(lambda d: _profile_endpoints(parse_profiles(d, known_providers=known)),
                        v)
        return v

    state: dict[str, Any] = Field(default_factory=empty_dict)
    state_schema: dict[str, StateKeyRule] = Field(default_factory=empty_dict)
    agents: dict[str, AgentDef] = Field(default_factory=empty_dict)
    """Agents run by `type: agent` steps, by name."""
    steps: Annotated[list[StepBase], _StepsSeenAlone]
    """At least one (checked by `_StepsSeenAlone`), each of its type's model (the
    `other_steps.Step` union)."""
    functions: dict[str, FunctionDecl] = Field(default_factory=empty_dict)
    """Workflow functions the model can call as tools (spec 004)."""
    mcp_servers: dict[str, MCPServerDecl] = Field(default_factory=empty_dict)
    """MCP servers whose tools steps name as `server.tool` (or `server` for all)."""


_PLAIN_KEYS = frozenset({"name", "version", "description", "config", "state", "steps"})


def plain_definition(top: dict[str, Any]) -> WorkflowDefinition | None:
    """`WorkflowDefinition.model_validate(top)` without building that model, for a file
    that sets only plain top-level keys and whose steps are models already; None for any
    other file (or any value these checks don't accept as they are), which then goes
    through the model and its errors. Building the model's validator costs ~20 ms of a
    one-step run's start-up, mostly for sections such a file doesn't have (providers,
    agents, functions, MCP servers)."""
    if not top.keys() <= _PLAIN_KEYS:
        return None
    name, steps = top.get("name"), top.get("steps")
    if (type(name) is not str or type(steps) is not list or not steps
            or not all(isinstance(s, StepBase) for s in steps)):
        return None
    values: dict[str, Any] = {"name": name, "steps": list(steps)}
    if "version" in top:
        version = top["version"]
        version = str(version) if type(version) in (int, float) else version  # as _version_text
        if type(version) is not str:
            return None
        values["version"] = version
    if "description" in top:
        description = top["description"]
        if description is not None and type(description) is not str:
            return None
        values["description"] = description
    if "state" in top:
        state = top["state"]
        if type(state) is not dict or not all(type(k) is str for k in state):
            return None
        values["state"] = dict(state)
    given = set(values) | ({"config"} if "config" in top else set())
    try:
        # The default config is built the same way: `WorkflowConfig()` would build its
        # validator only to check the defaults.
        values["config"] = (WorkflowConfig.model_validate(top["config"]) if "config" in top
                            else WorkflowConfig.model_construct())
    except ValidationError:
        return None
    return WorkflowDefinition.model_construct(_fields_set=given, **values)


BUILTIN_PROVIDERS = frozenset(
    {"openai", "anthropic", "gemini", "google", "ollama", "local", "generic_openai", "mock"})


def known_providers(declared: Any) -> frozenset[str]:
    """Provider names a workflow may use: the built-in ones and its `providers:` keys."""
    return BUILTIN_PROVIDERS | frozenset(str(k) for k in declared)


def unknown_provider(provider: str, known: frozenset[str]) -> str:
    """What a name outside `known` is told: the closest known one, and where to declare."""
    import difflib  # on an error only (its import is ~2 M instructions)
    close = difflib.get_close_matches(provider, sorted(known), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown provider {provider!r}{hint} (declare it under `providers:`)"


def _provider_checked(name: str, entry: ProviderConfig) -> None:
    """`providers.<name>` built as a run will build it; what that refuses is a ValueError
    (the loader adds file:line)."""
    config = entry.as_config()
    if not config.get("base_url"):
        # The run's runtime may hold an endpoint of this name to take it from
        # (`Workflow.add_providers_to` names the entry if it doesn't).
        config["base_url"] = "http://base-url.invalid"
    # No environment here: a key named by api_key_env is looked up by the run.
    _config_checked(lambda c: endpoint_from_config(name, c, env={}), config)


def valid_providers(raw: Any) -> dict[str, ProviderConfig]:
    """The entries of a raw `providers:` map that validate on their own (the others are
    reported by the file's validation), for the blocks of a file that didn't."""
    out: dict[str, ProviderConfig] = {}
    if not isinstance(raw, dict):
        return out
    for name, body in raw.items():
        try:
            entry = ProviderConfig.model_validate(body)
            _provider_checked(str(name), entry)
        except (ValidationError, ValueError):
            continue
        out[str(name)] = entry
    return out


def _profile_endpoints(profiles: dict[str, Profile]) -> None:
    """A profile with a `base_url` is an endpoint of its own, which the runtime builds at
    its first call (`routing.profile_endpoint`: the profile's provider as the wire
    protocol, openai by default); what that would refuse is refused here, under the
    profile's own field names (`provider`, not the endpoint's `type`)."""
    for profile in profiles.values():
        if profile.base_url:
            _profile_endpoint(profile)


def _profile_endpoint(profile: Profile) -> None:
    name, config = profile_endpoint(profile)
    try:
        endpoint_from_config(name, config, env={})
    except ConfigError as exc:
        place, _, detail = str(exc).partition(": ")  # `providers.<name>[.<field>]: ...`
        field = place.removeprefix(f"providers.{name}")
        if field == ".type":
            field, detail = ".provider", f"{detail} (with a base_url, the provider names the " \
                "wire protocol)"
        raise ConfigError(f"profiles.{profile.name}{field}: {detail}") from None


def _config_checked(parse: Any, value: Any) -> None:
    """Run a routing parser for its checks; its ConfigError becomes a pydantic error (the
    loader adds file:line)."""
    try:
        parse(value)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
