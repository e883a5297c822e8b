"""Workflow functions (spec 004) and the file's tool references, checked at load.

A `functions:` entry is a small workflow of its own: its steps are checked by the same
loader (so their problems carry the file's line numbers), may read `{args.<name>}`, and
run as a nested run when the model calls the function; the `return` template, rendered
after them, is what the model reads. A body sees its arguments, its own steps' outputs
and the file's `state:` defaults, never the calling run's live state: concurrent calls
stay independent and a call's result depends only on its arguments.

The same pass records every tool name a step declares, with its line, so the run can
check them against the real registry (Python tools and MCP tools are known only then).
"""

from __future__ import annotations

import contextvars
import uuid
from dataclasses import field
from typing import TYPE_CHECKING, Any

from agentloom import tools as toolkit
from agentloom._clock import SYSTEM_CLOCK
from agentloom._record import FACTORY, FrozenRecord, Record, frozen_record, record, set_field
from agentloom.errors import ConfigError, TemplateError, ToolError, WorkflowError
from agentloom.tools import check_parameters
from agentloom.workflow.engine.nested import NESTED_USAGE, rolled_usage
from agentloom.workflow.lang.templates import Scope, Template, compile_template
from agentloom.workflow.load.loader import Checker
from agentloom.workflow.load.problems import WorkflowProblems
from agentloom.workflow.schema.steps import ToolDecl

if TYPE_CHECKING:
    from pathlib import Path

    from agentloom.tools import FunctionTool
    from agentloom.workflow.engine.context import ChildRunner, ClientFactory, ToolSource
    from agentloom.workflow.load.loader import PrepareContext
    from agentloom.workflow.load.workflow import StepNode, Workflow
    from agentloom.workflow.schema.workflow import WorkflowDefinition

BUILTIN_NAMES = ("http_request", "shell_command", "file_read", "file_write")
MAX_DEPTH = 8
"""Functions calling functions (through their own llm_call steps) nest at most this deep."""
_DEPTH: contextvars.ContextVar[int] = contextvars.ContextVar("agentloom_function_depth",
                                                             default=0)


@frozen_record(kw_only=False)
class ToolRef(FrozenRecord):
    """A tool name a step declares, where it is written."""

    step_id: str
    name: str
    kind: str
    """`tools`, `functions`, `mcp` or `tool_name`: how the step names it."""
    line: int | None
    field: str
    function: str | None = None
    """The workflow function whose body holds the step; None at top level."""
    parameters: Any = None
    """The JSON Schema the step declares for the tool, if any."""

    def __init__(
        self, step_id: str, name: str, kind: str, line: int | None, field: str,
        function: str | None = None, parameters: Any = None,
    ) -> None:
        set_field(self, "step_id", step_id)
        set_field(self, "name", name)
        set_field(self, "kind", kind)
        set_field(self, "line", line)
        set_field(self, "field", field)
        set_field(self, "function", function)
        set_field(self, "parameters", parameters)


@frozen_record(kw_only=False)
class FunctionDef(FrozenRecord):
    """A workflow function as loaded: its arguments, its steps and its return template."""

    name: str
    description: str
    args: dict[str, Any]
    """The declared args as `agentloom.tools.ArgSpec`."""
    body: Workflow | None
    """The steps, as a workflow; None for a function that only returns a template."""
    returns: Template

    def __init__(
        self, name: str, description: str, args: dict[str, Any], body: Workflow | None,
        returns: Template,
    ) -> None:
        set_field(self, "name", name)
        set_field(self, "description", description)
        set_field(self, "args", args)
        set_field(self, "body", body)
        set_field(self, "returns", returns)


@record(kw_only=False)
class Tooling(Record):
    """The workflow functions and tool references of a file, checked at load."""

    functions: dict[str, FunctionDef] = field(default_factory=dict)
    refs: list[ToolRef] = field(default_factory=list)

    def __init__(
        self, functions: dict[str, FunctionDef] = FACTORY, refs: list[ToolRef] = FACTORY,
    ) -> None:
        self.functions = {} if functions is FACTORY else functions
        self.refs = [] if refs is FACTORY else refs


# -- load time ----------------------------------------------------------------------------

def check_arg_refs(pc: PrepareContext, prepared: Any, allowed: frozenset[str] | None) -> None:
    """`{args.x}` is legal only in a function's steps, and x must be a declared arg."""
    templates = getattr(prepared, "templates", None)
    if templates is None:
        return
    for field_path, template in templates():
        for ref in template.refs:
            if ref.root != "args":
                continue
            name = str(ref.path[0])
            if allowed is None:
                pc.report(f"{{{ref.source}}}: args exist only in the steps of a function "
                          "(top-level `functions:`)", *field_path)
            elif name not in allowed:
                declared = ", ".join(sorted(allowed)) or "none"
                pc.report(f"{{{ref.source}}}: the function has no argument {name!r}"
                          f"{_hint(name, allowed)} (declared: {declared})", *field_path)


def check_tooling(checker: Checker, definition: WorkflowDefinition,
                  nodes: dict[str, StepNode], base_dir: Path) -> Tooling:
    """Load every function body and check every tool reference the file makes; problems
    go to `checker.problems`, likely typos of tools the run may still provide to
    `checker.warnings`."""
    tooling = Tooling()
    raw_functions = checker.data.get("functions") if isinstance(checker.data, dict) else None
    for name, decl in definition.functions.items():
        raw = raw_functions.get(name) if isinstance(raw_functions, dict) else None
        fn, sub = _load_function(checker, name, decl, raw if isinstance(raw, dict) else {},
                                 base_dir)
        if fn is not None:
            tooling.functions[name] = fn
            if fn.body is not None and sub is not None:
                tooling.refs.extend(_refs(sub, fn.body.nodes, name))
                # A body's steps are held to the same limits, reported as the file's.
                _check_max_tools(sub, definition, fn.body.nodes, name, checker.problems)
                _check_vendor_tools(sub, fn.body.nodes, name, checker.problems)
    tooling.refs.extend(_refs(checker, nodes, None))
    _check_refs(checker, definition, tooling)
    _check_max_tools(checker, definition, nodes)
    _check_vendor_tools(checker, nodes)
    return tooling


def _check_vendor_tools(checker: Checker, nodes: dict[str, StepNode],
                        function: str | None = None,
                        report_to: list[WorkflowError] | None = None) -> None:
    problems = checker.problems if report_to is None else report_to
    for sid, node in nodes.items():
        items = getattr(node.step, "vendor_tools", None)
        if items is None:
            continue
        try:
            toolkit.normalize_vendor_tools(items)
        except ConfigError as exc:
            problems.append(WorkflowError(
                f"{_where(function, sid)}: {exc}", file=checker.filename, field="vendor_tools",
                line=checker.line_in_step(checker.raw_index[sid], ("vendor_tools",))))


def _refs(checker: Checker, nodes: dict[str, StepNode], function: str | None) -> \
        list[ToolRef]:
    out: list[ToolRef] = []
    agents_seen: set[str] = set()
    for sid, node in nodes.items():
        index = checker.raw_index[sid]
        out.extend(_refs_of(node, lambda fp, i=index: checker.line_in_step(i, fp), function))
        if node.type == "agent":
            name = node.step.agent  # type: ignore[attr-defined]
            if name not in agents_seen:  # an agent's tools are checked once, where defined
                agents_seen.add(name)
                out.extend(_agent_refs(checker, sid, name, function))
    return out


def _agent_refs(checker: Checker, step_id: str, agent: str, function: str | None) -> \
        list[ToolRef]:
    """The tools of the agent an `agent` step runs, at their lines under `agents:`."""
    definition = getattr(checker, "agents", {}).get(agent)
    if definition is None:
        return []  # an unknown agent is reported by the step itself
    raw_agents = checker.data.get("agents") if isinstance(checker.data, dict) else None
    raw = raw_agents.get(agent) if isinstance(raw_agents, dict) else None
    raw_tools = raw.get("tools") if isinstance(raw, dict) else None
    out = []
    for i, decl in enumerate(definition.declared):
        line = checker.marks.line_of(raw_tools, i) if raw_tools is not None \
            else checker.marks.line_of(raw)
        out.append(ToolRef(step_id, decl.name, "tools", line,
                           f"agents.{agent}.tools[{i}]", function, decl.parameters))
    return out


def _load_function(checker: Checker, name: str, decl: Any, raw: dict[str, Any],
                   base_dir: Path) -> tuple[FunctionDef | None, Checker | None]:
    marks, filename = checker.marks, checker.filename
    where = marks.line_of(raw) or marks.line_of(checker.data.get("functions"), name)
    ok = True
    args: dict[str, Any] = {}
    for arg_name, a in decl.args.items():
        config = a.model_dump(exclude_unset=True)
        try:
            args[arg_name] = toolkit.ArgSpec.from_config(arg_name, config)
        except ConfigError as exc:
            ok = False
            checker.problems.append(WorkflowError(f"function {name!r}: {exc}", file=filename,
                                                  line=where, field=f"functions.{name}.args"))
    body = None
    sub = None
    step_ids: set[str] = set()
    raw_steps = raw.get("steps")
    if isinstance(raw_steps, list) and raw_steps:
        sub_data: dict[str, Any] = {"name": f"{definition_name(checker)}.{name}",
                                    "steps": raw_steps}
        # A body's steps name the file's providers, profiles and agents as the
        # top-level steps do (spec 004: `profile` is the literal name of a profile).
        for key in ("config", "state", "providers", "profiles", "agents"):
            if isinstance(checker.data.get(key), dict) and checker.definition_config is not None:
                sub_data[key] = checker.data[key]
        if "config" in sub_data:  # the step defaults only: the caps, limits and prices
            # are the calling run's, not set again (and a price file read) at every call
            sub_data["config"] = checker.definition_config.block_defaults()
        sub = Checker(sub_data, marks, filename, checker.library)
        sub.function_args = frozenset(decl.args)
        try:
            body = sub.build(base_dir)
            step_ids = set(body.nodes)
            checker.warnings.extend(body.warnings)
        except WorkflowProblems as exc:
            ok = False
            for e in exc.errors:
                checker.problems.append(WorkflowError(
                    f"function {name!r}: {e.message}", file=e.file, line=e.line, field=e.field))
    try:
        returns = compile_template(decl.return_)
    except WorkflowError as exc:
        checker.problems.append(WorkflowError(
            f"function {name!r}, return: {exc.message.removeprefix('Prompt template error: ')}",
            file=filename, line=marks.line_of(raw, "return") or where,
            field=f"functions.{name}.return"))
        return None, None
    for ref in returns.refs:
        problem = None
        if ref.root == "args" and str(ref.path[0]) not in decl.args:
            problem = (f"{{{ref.source}}}: no argument {str(ref.path[0])!r}"
                       f"{_hint(str(ref.path[0]), decl.args)}")
        elif ref.root == "steps" and ref.step_id not in step_ids:
            problem = (f"{{{ref.source}}}: the function has no step {ref.step_id!r}"
                       f"{_hint(str(ref.step_id), step_ids)}")
        if problem:
            ok = False
            checker.problems.append(WorkflowError(
                f"function {name!r}, return: {problem}", file=filename,
                line=marks.line_of(raw, "return") or where, field=f"functions.{name}.return"))
    if not ok:
        return None, None
    return FunctionDef(name=name, description=decl.description, args=args, body=body,
                       returns=returns), sub


def definition_name(checker: Checker) -> str:
    name = checker.data.get("name") if isinstance(checker.data, dict) else None
    return str(name) if name else "workflow"


def _refs_of(node: StepNode, line: Any, function: str | None = None) -> list[ToolRef]:
    step = node.step
    out: list[ToolRef] = []
    if node.type == "llm_call":
        for kind in ("tools", "functions", "mcp"):
            for i, item in enumerate(getattr(step, kind, None) or ()):
                name = item if isinstance(item, str) else item.name
                field_path = (kind, i)
                out.append(ToolRef(node.id, name, kind, line(field_path), f"{kind}[{i}]",
                                   function, getattr(item, "parameters", None)))
    elif node.type == "tool":
        out.append(ToolRef(node.id, step.tool_name, "tool_name",  # type: ignore[attr-defined]
                           line(("tool_name",)), "tool_name", function))
    return out


def _check_refs(checker: Checker, definition: WorkflowDefinition, tooling: Tooling) -> None:
    servers = set(definition.mcp_servers)
    functions = set(definition.functions)
    known = {*BUILTIN_NAMES, *functions}
    for ref in tooling.refs:
        where = f"function {ref.function!r}, step {ref.step_id!r}" if ref.function \
            else f"step {ref.step_id!r}"
        server = ref.name.split(".", 1)[0]
        problem = None
        if ref.kind == "functions" and ref.name not in functions:
            problem = (f"unknown function {ref.name!r}{_hint(ref.name, functions)} "
                       f"(declared under functions: {', '.join(sorted(functions)) or 'none'})")
        elif ref.kind == "mcp" and server not in servers:
            problem = (f"unknown MCP server {server!r}{_hint(server, servers)} (declared under "
                       f"mcp_servers: {', '.join(sorted(servers)) or 'none'})")
        elif ref.kind in ("tools", "tool_name") and ref.name not in known \
                and server not in servers:
            import difflib  # on an error only (its import is ~2 M instructions)
            close = difflib.get_close_matches(ref.name, sorted({*known, *servers}), n=1)
            if close:
                checker.warnings.append(
                    f"{checker.filename}:{ref.line}: warning: {where} names tool "
                    f"{ref.name!r}, which is no built-in, function or MCP server; did you "
                    f"mean {close[0]!r}? (fine if --tools or a plugin provides it)")
        if problem is None and ref.parameters is not None:
            problem = _bad_parameters(ref.name, ref.parameters)
        if problem:
            checker.problems.append(WorkflowError(f"{where}, {ref.field}: {problem}",
                                                  file=checker.filename, line=ref.line,
                                                  field=ref.field))


def _bad_parameters(name: str, parameters: Any) -> str | None:
    try:
        check_parameters(name, parameters)
    except ConfigError as exc:
        return str(exc)
    return None


def _check_max_tools(checker: Checker, definition: WorkflowDefinition,
                     nodes: dict[str, StepNode], function: str | None = None,
                     report_to: list[WorkflowError] | None = None) -> None:
    """The most tools one call may carry (a profile's `max_tools`, else config's) counts
    every tool the call sends: tools, functions, MCP entries and vendor tools alike."""
    raw_profiles = checker.data.get("profiles") if isinstance(checker.data, dict) else None
    profiles = raw_profiles if isinstance(raw_profiles, dict) else {}
    for sid, node in nodes.items():
        if node.type != "llm_call":
            continue
        # The profile's limit wins over config's, as at run time.
        profile = profiles.get(getattr(node.step, "profile", None) or "")
        limit = profile.get("max_tools") if isinstance(profile, dict) else None
        where = "the profile" if isinstance(limit, int) else "config.max_tools"
        if not isinstance(limit, int):
            limit = definition.config.max_tools
        if limit is None:
            continue
        names = {t.name for t in node.step.tools or ()}  # type: ignore[attr-defined]
        names |= set(node.step.functions or ())  # type: ignore[attr-defined]
        names |= set(node.step.mcp or ())  # type: ignore[attr-defined]
        vendor = len(node.step.vendor_tools or ())  # type: ignore[attr-defined]
        if len(names) + vendor <= limit:
            continue
        count = f"{len(names) + vendor} tools declared"
        if vendor:
            count += f" ({vendor} of them vendor tools)"
        field = "vendor_tools" if vendor and len(names) <= limit else "tools"
        (checker.problems if report_to is None else report_to).append(WorkflowError(
            f"{_where(function, sid)}: {count}, but {where} allows {limit} per call",
            file=checker.filename, field=field,
            line=checker.line_in_step(checker.raw_index[sid], (field,))))


def _where(function: str | None, step_id: str) -> str:
    return f"function {function!r}, step {step_id!r}" if function else f"step {step_id!r}"


def _hint(name: str, options: Any) -> str:
    import difflib  # on an error only (its import is ~2 M instructions)
    close = difflib.get_close_matches(name, sorted(options), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


# -- run time -----------------------------------------------------------------------------

def function_tool(fn: FunctionDef, *, runner: ChildRunner, clients: ClientFactory,
                  tools: ToolSource, transport: Any = None, clock: Any = None) -> FunctionTool:
    """The tool the model calls: coerces the arguments, runs the body as a nested run
    (through the engine's `runner`), renders `return`. A failed body is a ToolError,
    which the model reads as the call's error result."""

    async def body(args: dict[str, Any]) -> object:
        depth = _DEPTH.get()
        if depth >= MAX_DEPTH:
            raise ToolError(f"function {fn.name!r}: functions nest at most {MAX_DEPTH} deep")
        token = _DEPTH.set(depth + 1)
        try:
            return await _run_body(fn, args, runner=runner, clients=clients, tools=tools,
                                   transport=transport, clock=clock)
        finally:
            _DEPTH.reset(token)

    return toolkit.FunctionTool(fn.name, fn.description, fn.args, body)


async def _run_body(fn: FunctionDef, args: dict[str, Any], *, runner: ChildRunner,
                    clients: ClientFactory, tools: ToolSource, transport: Any,
                    clock: Any) -> object:
    if fn.body is None:
        scope = Scope({}, {}, args)
    else:
        result, scope, durable = await runner.run_call(
            fn.body, args=args, run_id=f"fn-{fn.name}-{uuid.uuid4().hex[:12]}",
            clients=clients, tools=tools, clock=clock or SYSTEM_CLOCK, transport=transport)
        sink = NESTED_USAGE.get()
        usage = rolled_usage([result])
        if sink is not None and usage is not None:
            sink.append(usage)
        if result.pause is not None:
            _paused(fn, result.pause, durable)
        if not result.ok:
            raise ToolError(f"function {fn.name!r} failed: {result.error or result.status}")
    try:
        return fn.returns.value(scope)
    except TemplateError as exc:
        raise ToolError(f"function {fn.name!r}: its return template failed: "
                        f"{exc.message.removeprefix('Prompt template error: ')}") from None


def _paused(fn: FunctionDef, pause: Any, durable: bool) -> None:
    """A step of the body waits for a person: in a durable run the whole run pauses
    (the signal passes the toolbox); without a store there is nothing to resume, so the
    model reads why the call could not finish."""
    if durable:
        raise pause
    raise ToolError(f"function {fn.name!r} paused at step {pause.step_id!r} waiting for "
                    f"{pause.waiting_for} ({pause.prompt or ''}), but this run has no "
                    "checkpoint store to resume from")


def declared_tools(step: Any) -> list[Any]:
    """An llm_call's `tools`, `functions` and `mcp` as one list of tool declarations."""
    names = [*(step.functions or ()), *(step.mcp or ())]
    return [*(step.tools or ()), *(ToolDecl(name=n) for n in names)]
