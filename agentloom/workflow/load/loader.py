"""Load a workflow file: YAML with line numbers, strict validation, graph and template
checks, and every problem reported at once as `file:line: message`.

Steps are validated one by one, so a bad step does not hide the others' problems; the
dependency graph is checked on the raw step list, so a cycle is found even when a step
has a typo. Templates and router expressions are compiled here, once, by each step
type's `prepare`, reached through the `StepLibrary` the caller hands in (the loader
imports no step module: `agentloom.workflow.load_workflow` hands it the step types).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path as FsPath
from typing import Any

from pydantic import ValidationError

from agentloom import tools
from agentloom.errors import ConfigError, TemplateError, WorkflowError
from agentloom.workflow.lang.paths import PathError, parse_path
from agentloom.workflow.lang.templates import Template, compile_template
from agentloom.workflow.load.diagnose import describe
from agentloom.workflow.load.diagnose import dotted as _dotted
from agentloom.workflow.load.graph import find_cycle
from agentloom.workflow.load.includes import include_scope
from agentloom.workflow.load.model_checks import check_conversations, valid_agents
from agentloom.workflow.load.problems import WorkflowProblems
from agentloom.workflow.load.provider_names import provider_name_warnings
from agentloom.workflow.load.secret_checks import provider_key_warnings
from agentloom.workflow.load.static_checks import check_state_reads
from agentloom.workflow.load.workflow import StepLibrary, StepNode, Workflow
from agentloom.workflow.load.yaml_source import Marks, load_yaml, read_source
from agentloom.workflow.schema.step_types import step_model, step_union
from agentloom.workflow.schema.steps import StepBase, plain_step
from agentloom.workflow.schema.workflow import (
    WorkflowConfig,
    WorkflowDefinition,
    plain_definition,
    valid_providers,
)


def _validate_step(raw: Any) -> StepBase:
    """One step, by its own type's model when `type` names one: only the step types a file
    uses get built. The errors are the discriminated union's, tag first in each `loc`."""
    tag = raw.get("type") if isinstance(raw, dict) else None
    model = step_model(tag) if isinstance(tag, str) else None
    if model is None:
        step: StepBase = step_union().validate_python(raw)
        return step
    try:
        return plain_step(model, raw) or model.model_validate(raw)
    except ValidationError as exc:
        raise _StepErrors([{**e, "loc": (tag, *e["loc"])} for e in exc.errors()]) from None


class _StepErrors(Exception):
    """A step's validation errors, as `ValidationError.errors()` gives them."""

    def __init__(self, errors: list[Any]) -> None:
        self.errors = errors


def load_workflow(source: str | os.PathLike[str], *, library: StepLibrary,
                  filename: str | None = None,
                  config: Mapping[str, Any] | None = None) -> Workflow:
    """Load and check a workflow from a file path, or from YAML text (any string with a
    newline), its steps prepared by `library`. Raises `WorkflowProblems` (a
    `WorkflowError`) listing every problem. `config` holds run-time changes to the file's
    `config` (`--model`, `--provider`; None values ignored): the load-time checks see the
    model a step will really get."""
    if isinstance(source, os.PathLike) or "\n" not in source:
        path = FsPath(source)
        try:
            text = read_source(path)
        except OSError as exc:
            raise WorkflowError(f"cannot read workflow file: {exc.strerror or exc}",
                                file=str(path)) from None
        return load_workflow_text(text, library=library, filename=filename or str(path),
                                  base_dir=path.parent, config=config)
    return load_workflow_text(source, library=library, filename=filename or "<string>",
                              config=config)


def load_workflow_text(
    text: str, *, library: StepLibrary, filename: str = "<string>",
    base_dir: FsPath | None = None, config: Mapping[str, Any] | None = None
) -> Workflow:
    data, marks = load_yaml(text, filename)
    _override_config(data, config)
    with include_scope():
        return Checker(data, marks, filename, library).build(base_dir or FsPath.cwd())


def _override_config(data: Any, changes: Mapping[str, Any] | None) -> None:
    """Apply run-time config changes to the parsed file in place (the same mapping, so
    its line marks still point into the file)."""
    changes = {k: v for k, v in (changes or {}).items() if v is not None}
    if not changes or not isinstance(data, dict):
        return
    current = data.get("config")
    if current is None:
        data["config"] = dict(changes)
    elif isinstance(current, dict):
        current.update(changes)


def load_workflow_data(data: dict[str, Any], *, library: StepLibrary,
                       filename: str = "<inline>", base_dir: FsPath | None = None) -> Workflow:
    """Check an already-parsed mapping (an inline subworkflow); no line numbers. Paths in
    it resolve against `base_dir` (the directory of the file that holds it)."""
    with include_scope():
        return Checker(data, Marks(), filename, library).build(base_dir or FsPath.cwd())


class PrepareContext:
    """Handed to a step module's `prepare`: compiles templates and reports problems at
    the line of the field they come from."""

    def __init__(self, checker: Checker, index: int, raw: dict[str, Any], node_ids: set[str]):
        self._checker = checker
        self._index = index
        self._raw = raw
        self.step_ids = node_ids
        self.config = checker.definition_config
        self.document: dict[str, Any] = checker.data if isinstance(checker.data, dict) else {}
        """The raw file (its `state` and `providers`), for checks that read them."""
        self.agent_plans: dict[str, Any] = checker.agent_plans
        raw_agents = self.document.get("agents")
        self.agent_names: set[str] = set(checker.agents) | (
            {str(k) for k in raw_agents} if isinstance(raw_agents, dict) else set())
        self.base_dir = checker.base_dir
        """The directory of the file being loaded: relative paths in it resolve here."""
        self.filename = checker.filename
        self.library = checker.library
        """The step types: a step that loads a nested workflow loads it with these."""

    def block(self, name: str, steps: Any) -> dict[str, Any]:
        """A block of this file's steps (a `map` body, an `on_error` block) as a workflow
        of its own: it asks for the file's models and provider by default
        (`BLOCK_DEFAULTS`), and its steps may name the file's agents, profiles and
        providers (a profile or a fallback entry naming one of them is checked against
        them)."""
        data: dict[str, Any] = {"name": name, "steps": steps}
        if self.config is not None:
            data["config"] = self.config.block_defaults()
        if self._checker.agents:
            data["agents"] = dict(self._checker.agents)  # the ones that validated
        profiles = self.document.get("profiles")
        if isinstance(profiles, dict) and profiles:
            data["profiles"] = profiles
        if self._checker.providers:
            data["providers"] = dict(self._checker.providers)  # the ones that validated
        return data

    def depends_on(self, step_id: str, ancestor: str) -> bool:
        """Whether `step_id` depends on `ancestor`, directly or through others."""
        return ancestor in self._checker.ancestors(step_id)

    def line(self, *field_path: str | int) -> int | None:
        return self._checker.line_in_step(self._index, field_path)

    def report(self, message: str, *field_path: str | int,
               kind: type[WorkflowError] = WorkflowError) -> None:
        step_id = self._raw.get("id", f"#{self._index}")
        dotted = _dotted(list(field_path))
        self._checker.problems.append(kind(
            f"step {step_id!r}, {dotted}: {message}" if dotted else f"step {step_id!r}: {message}",
            file=self._checker.filename, line=self.line(*field_path), field=dotted or None,
        ))

    def warn(self, message: str, *field_path: str | int) -> None:
        """A warning at the field's line (`validate` and `run` print it; the file runs)."""
        step_id = self._raw.get("id", f"#{self._index}")
        self._checker.warnings.append(f"{self._checker.filename}:{self.line(*field_path)}: "
                                      f"warning: step {step_id!r}, "
                                      f"{_dotted(list(field_path))}: {message}")

    def template(self, text: str, *field_path: str | int) -> Template:
        try:
            compiled = compile_template(text)
        except TemplateError as exc:
            self.report(exc.message.removeprefix("Prompt template error: "), *field_path,
                        kind=TemplateError)
            return compile_template(text.replace("{", "{{").replace("}", "}}"))
        return compiled


class Checker:
    """One file's check: its problems and warnings, and the lines they point to."""

    def __init__(self, data: Any, marks: Marks, filename: str, library: StepLibrary) -> None:
        self.data = data
        self.library = library
        self.marks = marks
        self.filename = filename
        self.problems: list[WorkflowError] = []
        self.definition_config: Any = None
        self.agents: dict[str, Any] = {}
        self.providers: dict[str, Any] = {}
        """The file's `providers:` entries that validated, for its blocks."""
        self.agent_plans: dict[str, Any] = {}
        self.warnings: list[str] = []
        self.base_dir: FsPath = FsPath.cwd()
        self._ancestors: dict[str, set[str]] = {}
        self.raw_index: dict[str, int] = {}
        """Step id -> its position in the file's `steps` list."""
        self._deps_of: dict[str, list[str]] = {}
        self.function_args: frozenset[str] | None = None
        """Set when checking a workflow function's steps: the args `{args.x}` may name."""

    def err(self, message: str, line: int | None, field: str | None = None) -> None:
        self.problems.append(WorkflowError(message, file=self.filename, line=line, field=field))

    def line_in_step(self, index: int, field_path: tuple[str | int, ...]) -> int | None:
        raw_steps = self.data.get("steps")
        container: Any = raw_steps
        line = self.marks.line_of(raw_steps, index)
        if isinstance(raw_steps, list) and index < len(raw_steps):
            container = raw_steps[index]
            for part in field_path:
                if isinstance(container, dict | list):
                    sub = self.marks.line_of(container, part)
                    line = sub or line
                    try:
                        container = container[part]  # type: ignore[index]
                    except (KeyError, IndexError, TypeError):
                        break
        return line

    def build(self, base_dir: FsPath) -> Workflow:
        data = self.data
        self.base_dir = base_dir
        if not isinstance(data, dict):
            raise WorkflowProblems([WorkflowError(
                "a workflow file is a mapping with at least 'name' and 'steps'",
                file=self.filename, line=1)])
        raw_steps = data.get("steps")
        models: list[StepBase | None] = []
        if isinstance(raw_steps, list):
            for i, raw in enumerate(raw_steps):
                try:
                    models.append(_validate_step(raw))
                except (ValidationError, _StepErrors) as exc:
                    models.append(None)
                    errors = exc.errors if isinstance(exc, _StepErrors) else exc.errors()
                    for e in errors:
                        self.err(*describe(e, ("steps", i), self.data, self.marks))
        top = dict(data)
        valid_steps = [m for m in models if m is not None]
        if valid_steps:
            top["steps"] = valid_steps
        definition: WorkflowDefinition | None = None
        try:
            definition = (plain_definition(top) if len(valid_steps) == len(models) else None
                          ) or WorkflowDefinition.model_validate(top)
            self.definition_config = definition.config
            self.agents = dict(definition.agents)
            self.providers = dict(definition.providers)
        except ValidationError as exc:
            for e in exc.errors():
                if e["loc"][:1] == ("steps",) and len(e["loc"]) > 1:
                    continue  # each step was validated (and reported) on its own
                self.err(*describe(e, (), self.data, self.marks))
            try:
                self.definition_config = WorkflowConfig.model_validate(data.get("config") or {})
            except ValidationError:
                pass
            self.agents = valid_agents(data.get("agents"))
            self.providers = valid_providers(data.get("providers"))
        nodes = self._graph(raw_steps if isinstance(raw_steps, list) else [], models)
        self.agent_plans = self.library.prepare_agents(self)
        self._prepare(nodes, raw_steps if isinstance(raw_steps, list) else [])
        check_conversations(self, nodes)
        self._check_invalid_steps(raw_steps if isinstance(raw_steps, list) else [], models)
        self._check_outputs(nodes)
        self._warn_unknown_state(nodes)
        self._check_state_reads(nodes)
        self.warnings += provider_key_warnings(data, self.marks, self.filename)
        if definition is not None and definition.mcp_servers:
            self._check_extra_mcp()
        if definition is not None:
            self.warnings += provider_name_warnings(definition, data, self.marks, self.filename)
        tooling = None
        if definition is not None and self.function_args is None:
            tooling = self.library.check_tooling(self, definition, nodes, base_dir)
        if self.problems or definition is None:
            raise WorkflowProblems(self.problems or [WorkflowError(
                "invalid workflow", file=self.filename, line=1)])
        definition = definition.model_copy(update={"steps": [n.step for n in nodes.values()]})
        providers = data.get("providers")
        wf = Workflow(definition=definition, nodes=nodes, file=self.filename,
                      base_dir=base_dir, warnings=self.warnings, library=self.library,
                      provider_lines={str(name): self.marks.line_of(providers, name)
                                      for name in (providers or {})})
        if tooling is not None:
            wf.functions, wf.tool_refs = tooling.functions, tooling.refs
        return wf

    def _check_extra_mcp(self) -> None:
        try:
            tools.require_mcp()
        except ConfigError as exc:
            self.err(str(exc), self.marks.line_of(self.data, "mcp_servers"), "mcp_servers")

    # -- pydantic errors -> file:line ---------------------------------------------------

    # -- graph ----------------------------------------------------------------------------

    def _graph(self, raw_steps: list[Any], models: list[StepBase | None]) -> dict[str, StepNode]:
        seen: dict[str, int] = {}
        ids: list[str | None] = []
        for i, raw in enumerate(raw_steps):
            sid = raw.get("id") if isinstance(raw, dict) else None
            sid = sid if isinstance(sid, str) else None
            ids.append(sid)
            if sid is None:
                continue
            if sid in seen:
                self.err(f"duplicate step id {sid!r} (first at line {seen[sid]})",
                         self.line_in_step(i, ("id",)), f"steps[{i}].id")
            else:
                seen[sid] = self.line_in_step(i, ("id",)) or 0
        known = set(seen)
        deps_of: dict[str, list[str]] = {}
        for i, raw in enumerate(raw_steps):
            sid = ids[i]
            if sid is None or sid in deps_of:
                continue
            deps = raw.get("depends_on") or []
            deps = [deps] if isinstance(deps, str) else deps
            good: list[str] = []
            for j, dep in enumerate(deps if isinstance(deps, list) else []):
                if not isinstance(dep, str):
                    continue
                if dep == sid:
                    self.err(f"step {sid!r} depends on itself",
                             self.line_in_step(i, ("depends_on", j)), f"steps[{i}].depends_on")
                elif dep not in known:
                    import difflib  # on an error only (its import is ~2 M instructions)
                    hint = difflib.get_close_matches(dep, sorted(known), n=1)
                    extra = f"; did you mean {hint[0]!r}?" if hint else ""
                    self.err(f"step {sid!r} depends on unknown step {dep!r}{extra}",
                             self.line_in_step(i, ("depends_on", j)), f"steps[{i}].depends_on")
                elif dep not in good:
                    good.append(dep)
            deps_of[sid] = good
        cycle = find_cycle(deps_of)
        if cycle:
            first = cycle[0]
            index = ids.index(first)
            self.err("dependency cycle: " + " -> ".join(cycle),
                     self.line_in_step(index, ("depends_on",)), f"steps[{index}].depends_on")
        nodes: dict[str, StepNode] = {}
        for i, model in enumerate(models):
            sid = ids[i] if i < len(ids) else None
            if model is None or sid is None or sid in nodes:
                continue
            nodes[sid] = StepNode(id=sid, type=str(model.type),  # type: ignore[attr-defined]
                                  step=model, line=self.line_in_step(i, ()),
                                  deps=tuple(deps_of.get(sid, ())))
        for node in nodes.values():
            for dep in node.deps:
                if dep in nodes:
                    nodes[dep].dependents.append(node.id)
        self.raw_index = {sid: i for i, sid in enumerate(ids) if sid is not None}
        self._deps_of = deps_of
        return nodes

    def _check_invalid_steps(self, raw_steps: list[Any], models: list[StepBase | None]) -> None:
        """Template problems of steps that failed validation are reported too, so one
        `validate` shows everything."""
        for i, (raw, model) in enumerate(zip(raw_steps, models, strict=False)):
            if model is not None or not isinstance(raw, dict):
                continue
            pc = PrepareContext(self, i, raw, set(self.raw_index))
            for key in ("prompt", "system_prompt"):
                if isinstance(raw.get(key), str):
                    pc.template(raw[key], key)

    def ancestors(self, step_id: str) -> set[str]:
        cached = self._ancestors.get(step_id)
        if cached is not None:
            return cached
        out: set[str] = set()
        todo = list(self._deps_of.get(step_id, ()))
        while todo:
            d = todo.pop()
            if d not in out:
                out.add(d)
                todo.extend(self._deps_of.get(d, ()))
        self._ancestors[step_id] = out
        return out

    def _check_state_reads(self, nodes: dict[str, StepNode]) -> None:
        state = self.data.get("state") if isinstance(self.data, dict) else None

        def warn(node: StepNode, field_path: tuple[str | int, ...], message: str) -> None:
            line = self.line_in_step(self.raw_index[node.id], field_path)
            self.warnings.append(f"{self.filename}:{line}: warning: {message}")

        check_state_reads(nodes, state if isinstance(state, dict) else {}, self.ancestors, warn)

    def _warn_unknown_state(self, nodes: dict[str, StepNode]) -> None:
        """A `{state.x}` whose key neither the file's state nor any step's output provides
        must come from `--state`; likely a typo otherwise, so `validate` says so."""
        state = self.data.get("state") if isinstance(self.data, dict) else None
        provided = set(state) if isinstance(state, dict) else set()
        provided |= {n.output_path[0] for n in nodes.values() if n.output_path}
        for node in nodes.values():
            templates = getattr(node.prepared, "templates", None)
            if templates is None:
                continue
            index = self.raw_index[node.id]
            for field_path, template in templates():
                for ref in template.refs:
                    if ref.root == "state" and ref.path[0] not in provided:
                        line = self.line_in_step(index, field_path)
                        self.warnings.append(
                            f"{self.filename}:{line}: warning: step {node.id!r} reads "
                            f"{{{ref.source}}}, which neither the file's state nor any step's "
                            "output provides; pass it with --state")

    def _check_outputs(self, nodes: dict[str, StepNode]) -> None:
        """With `strict_outputs`, two steps that may run at once writing one key is an
        error: one write would be lost. Branches of one router are exempt (one runs)."""
        config = self.definition_config
        if config is None or not config.strict_outputs:
            return
        branch_of: dict[str, str] = {}
        for node in nodes.values():
            for target in getattr(node.prepared, "targets", ()):
                branch_of[target] = node.id
        writers: dict[str, list[StepNode]] = {}
        for node in nodes.values():
            if node.output_path is not None:
                key = _dotted(list(node.output_path))
                writers.setdefault(key, []).append(node)
        for key, group in writers.items():
            for i, first in enumerate(group):
                for second in group[i + 1:]:
                    if first.id in self.ancestors(second.id) or \
                            second.id in self.ancestors(first.id):
                        continue
                    router = branch_of.get(first.id)
                    if router is not None and router == branch_of.get(second.id):
                        continue
                    index = self.raw_index[second.id]
                    self.err(f"steps {first.id!r} and {second.id!r} may run at the same "
                             f"time and both write {key!r} (strict_outputs); chain them "
                             "with depends_on or write different keys",
                             self.line_in_step(index, ("output",)), f"steps[{index}].output")

    # -- per-type preparation --------------------------------------------------------------

    def _prepare(self, nodes: dict[str, StepNode], raw_steps: list[Any]) -> None:
        ids = set(self.raw_index)
        for node in nodes.values():
            index = self.raw_index[node.id]
            pc = PrepareContext(self, index, raw_steps[index], ids)
            if node.step.output:
                try:
                    node.output_path = parse_path(node.step.output.removeprefix("state."))
                except PathError as exc:
                    pc.report(str(exc), "output")
            self.library.prepare(node, pc, self.function_args)
            for ref_step, field_path in _step_refs(node.prepared):
                if ref_step not in ids:
                    import difflib  # on an error only (its import is ~2 M instructions)
                    hint = difflib.get_close_matches(ref_step, sorted(ids), n=1)
                    extra = f"; did you mean {hint[0]!r}?" if hint else ""
                    pc.report(f"{{steps.{ref_step}.output}} names unknown step "
                              f"{ref_step!r}{extra}", *field_path, kind=TemplateError)
                elif ref_step not in self.ancestors(node.id):
                    pc.report(f"{{steps.{ref_step}.output}} reads step {ref_step!r}, which "
                              f"{node.id!r} does not depend on; add it to depends_on",
                              *field_path, kind=TemplateError)


def _step_refs(prepared: Any) -> list[tuple[str, tuple[str | int, ...]]]:
    refs = getattr(prepared, "templates", None)
    out: list[tuple[str, tuple[str | int, ...]]] = []
    if refs is None:
        return out
    for field_path, template in refs():
        for ref in template.refs:
            if ref.step_id is not None:
                out.append((ref.step_id, field_path))
    return out
