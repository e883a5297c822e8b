"""Load a workflow file: YAML with line numbers, strict validation, graph and template
checks, and every problem reported at once as `file:line: message`.

Steps are validated one by one, so a bad step does not hide the others' problems; the
dependency graph is checked on the raw step list, so a cycle is found even when a step
has a typo. Templates and router expressions are compiled here, once, by each step
type's `prepare`.
"""

from __future__ import annotations

import difflib
import os
import types
import typing
from collections.abc import Callable
from pathlib import Path as FsPath
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from agentloom.errors import TemplateError, WorkflowError
from agentloom.workflow._paths import PathError, parse_path
from agentloom.workflow._problems import WorkflowProblems
from agentloom.workflow._schema import WorkflowConfig, WorkflowDefinition
from agentloom.workflow._schema_steps import STEP_TYPES, Step, StepBase
from agentloom.workflow._templates import Template, compile_template
from agentloom.workflow._workflow import StepNode, Workflow
from agentloom.workflow._yaml import Marks, load_yaml

_STEP_ADAPTER: TypeAdapter[Any] | None = None


def _step_adapter() -> TypeAdapter[Any]:
    global _STEP_ADAPTER
    if _STEP_ADAPTER is None:
        _STEP_ADAPTER = TypeAdapter(Step)
    return _STEP_ADAPTER


def load_workflow(source: str | os.PathLike[str], *, filename: str | None = None) -> Workflow:
    """Load and check a workflow from a file path, or from YAML text (any string with a
    newline). Raises `WorkflowProblems` (a `WorkflowError`) listing every problem."""
    if isinstance(source, os.PathLike) or "\n" not in source:
        path = FsPath(source)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise WorkflowError(f"cannot read workflow file: {exc.strerror or exc}",
                                file=str(path)) from None
        return load_workflow_text(text, filename=filename or str(path), base_dir=path.parent)
    return load_workflow_text(source, filename=filename or "<string>")


def load_workflow_text(
    text: str, *, filename: str = "<string>", base_dir: FsPath | None = None
) -> Workflow:
    data, marks = load_yaml(text, filename)
    return _Checker(data, marks, filename).build(base_dir or FsPath.cwd())


def load_workflow_data(data: dict[str, Any], *, filename: str = "<inline>") -> Workflow:
    """Check an already-parsed mapping (an inline subworkflow); no line numbers."""
    return _Checker(data, Marks(), filename).build(FsPath.cwd())


class PrepareContext:
    """Handed to a step module's `prepare`: compiles templates and reports problems at
    the line of the field they come from."""

    def __init__(self, checker: _Checker, index: int, raw: dict[str, Any], node_ids: set[str]):
        self._checker = checker
        self._index = index
        self._raw = raw
        self.step_ids = node_ids
        self.config = checker.definition_config

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

    def template(self, text: str, *field_path: str | int) -> Template:
        try:
            compiled = compile_template(text)
        except TemplateError as exc:
            self.report(exc.message.removeprefix("Prompt template error: "), *field_path,
                        kind=TemplateError)
            return compile_template(text.replace("{", "{{").replace("}", "}}"))
        return compiled


class _Checker:
    def __init__(self, data: Any, marks: Marks, filename: str) -> None:
        self.data = data
        self.marks = marks
        self.filename = filename
        self.problems: list[WorkflowError] = []
        self.definition_config: Any = None

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
        if not isinstance(data, dict):
            raise WorkflowProblems([WorkflowError(
                "a workflow file is a mapping with at least 'name' and 'steps'",
                file=self.filename, line=1)])
        raw_steps = data.get("steps")
        models: list[StepBase | None] = []
        if isinstance(raw_steps, list):
            for i, raw in enumerate(raw_steps):
                try:
                    models.append(_step_adapter().validate_python(raw))
                except ValidationError as exc:
                    models.append(None)
                    for e in exc.errors():
                        self._pydantic_error(e, ("steps", i))
        top = dict(data)
        valid_steps = [m for m in models if m is not None]
        if valid_steps:
            top["steps"] = valid_steps
        definition: WorkflowDefinition | None = None
        try:
            definition = WorkflowDefinition.model_validate(top)
            self.definition_config = definition.config
        except ValidationError as exc:
            for e in exc.errors():
                if e["loc"][:1] == ("steps",) and len(e["loc"]) > 1:
                    continue  # each step was validated (and reported) on its own
                self._pydantic_error(e, ())
            try:
                self.definition_config = WorkflowConfig.model_validate(data.get("config") or {})
            except ValidationError:
                pass
        nodes = self._graph(raw_steps if isinstance(raw_steps, list) else [], models)
        self._prepare(nodes, raw_steps if isinstance(raw_steps, list) else [])
        self._check_invalid_steps(raw_steps if isinstance(raw_steps, list) else [], models)
        if self.problems or definition is None:
            raise WorkflowProblems(self.problems or [WorkflowError(
                "invalid workflow", file=self.filename, line=1)])
        definition = definition.model_copy(update={"steps": [n.step for n in nodes.values()]})
        return Workflow(definition=definition, nodes=nodes, file=self.filename,
                        base_dir=base_dir)

    # -- pydantic errors -> file:line ---------------------------------------------------

    def _pydantic_error(self, e: Any, prefix: tuple[str | int, ...]) -> None:
        loc = prefix + tuple(e["loc"])
        container: Any = self.data
        line = self.marks.line_of(container)
        real: list[str | int] = []
        for part in loc:
            if _has(container, part):
                line = self.marks.line_of(container, part) or line
                container = container[part]
                real.append(part)
        kind = e["type"]
        where, model = self._where(real)
        msg = str(e.get("msg", "invalid value")).removeprefix("Value error, ")
        field = _dotted(real)
        if kind == "extra_forbidden":
            key = str(real[-1])
            parent_where, parent_model = self._where(real[:-1])
            message = f"unknown field {key!r} in {parent_where}"
            if parent_model is not None:
                names = _field_names(parent_model)
                close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
                if close:
                    message += f"; did you mean {close[0]!r}?"
        elif kind == "missing":
            message = f"{where}: missing required field {str(loc[-1])!r}"
            field = _dotted([*real, loc[-1]])
        elif kind in ("union_tag_invalid", "union_tag_not_found"):
            given = container.get("type") if isinstance(container, dict) else None
            types_ = ", ".join(STEP_TYPES)
            if given is None:
                message = f"{where}: missing 'type' (one of {types_})"
            else:
                message = f"{where}: unknown step type {given!r}; expected one of {types_}"
                close = difflib.get_close_matches(str(given), list(STEP_TYPES), n=1)
                if close:
                    message += f"; did you mean {close[0]!r}?"
                line = self.marks.line_of(container, "type") or line
            field = _dotted([*real, "type"])
        else:
            shown = repr(e.get("input"))
            if len(shown) > 60:
                shown = shown[:57] + "..."
            leaf = real[-1] if real and real[-1] == loc[-1] and isinstance(real[-1], str) else None
            if leaf is not None:
                parent_where, _ = self._where(real[:-1])
                message = f"{parent_where}, field {leaf!r}: {msg} (got {shown})"
            else:
                message = f"{where}: {msg}"
        del model
        self.err(message, line, field)

    def _where(self, real: list[str | int]) -> tuple[str, type[BaseModel] | None]:
        """A readable name for a location, and the model class that validates it."""
        model: type[BaseModel] | None = WorkflowDefinition
        words: list[str] = []
        raw: Any = self.data
        skip_key = False
        i = 0
        while i < len(real):
            part = real[i]
            if part == "steps" and i == 0 and len(real) > 1 and isinstance(raw, dict):
                index = real[1]
                step = raw["steps"][index]
                sid = step.get("id") if isinstance(step, dict) else None
                stype = step.get("type") if isinstance(step, dict) else None
                words.append(f"step {sid!r} ({stype})" if sid else f"step #{int(index) + 1}")
                model = STEP_TYPES.get(str(stype))
                raw = step
                i += 2
                continue
            if skip_key:
                skip_key = False
            elif model is not None and isinstance(part, str):
                model, skip_key = _field_model(model, part)
            words.append(str(part) if isinstance(part, str) else f"[{part}]")
            raw = raw[part] if _has(raw, part) else None
            i += 1
        text = " ".join(words).replace(" [", "[") if words else "the workflow"
        return text, model

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
                    hint = difflib.get_close_matches(dep, sorted(known), n=1)
                    extra = f"; did you mean {hint[0]!r}?" if hint else ""
                    self.err(f"step {sid!r} depends on unknown step {dep!r}{extra}",
                             self.line_in_step(i, ("depends_on", j)), f"steps[{i}].depends_on")
                elif dep not in good:
                    good.append(dep)
            deps_of[sid] = good
        cycle = _find_cycle(deps_of)
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
        self._raw_index = {sid: i for i, sid in enumerate(ids) if sid is not None}
        self._deps_of = deps_of
        return nodes

    def _check_invalid_steps(self, raw_steps: list[Any], models: list[StepBase | None]) -> None:
        """Template problems of steps that failed validation are reported too, so one
        `validate` shows everything."""
        for i, (raw, model) in enumerate(zip(raw_steps, models, strict=False)):
            if model is not None or not isinstance(raw, dict):
                continue
            pc = PrepareContext(self, i, raw, set(self._raw_index))
            for key in ("prompt", "system_prompt"):
                if isinstance(raw.get(key), str):
                    pc.template(raw[key], key)

    def ancestors(self, step_id: str) -> set[str]:
        out: set[str] = set()
        todo = list(self._deps_of.get(step_id, ()))
        while todo:
            d = todo.pop()
            if d not in out:
                out.add(d)
                todo.extend(self._deps_of.get(d, ()))
        return out

    # -- per-type preparation --------------------------------------------------------------

    def _prepare(self, nodes: dict[str, StepNode], raw_steps: list[Any]) -> None:
        from agentloom.workflow.steps import STEP_KINDS

        ids = set(self._raw_index)
        for node in nodes.values():
            index = self._raw_index[node.id]
            pc = PrepareContext(self, index, raw_steps[index], ids)
            if node.step.output:
                try:
                    node.output_path = parse_path(node.step.output.removeprefix("state."))
                except PathError as exc:
                    pc.report(str(exc), "output")
            kind = STEP_KINDS.get(node.type)
            if kind is not None:
                node.prepared = kind.prepare(node.step, pc)
            for ref_step, field_path in _step_refs(node.prepared):
                if ref_step not in ids:
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


def _find_cycle(deps_of: dict[str, list[str]]) -> list[str] | None:
    """A dependency cycle as [a, b, ..., a], or None. Iterative, so deep chains are fine."""
    state: dict[str, int] = {}
    for start in deps_of:
        if state.get(start):
            continue
        stack: list[tuple[str, int]] = [(start, 0)]
        path: list[str] = []
        while stack:
            node, i = stack.pop()
            if i == 0:
                state[node] = 1
                path.append(node)
            deps = deps_of.get(node, [])
            if i < len(deps):
                stack.append((node, i + 1))
                nxt = deps[i]
                if state.get(nxt) == 1:
                    cyc = [*path[path.index(nxt):], nxt]
                    cyc.reverse()
                    return cyc
                if not state.get(nxt):
                    stack.append((nxt, 0))
            else:
                state[node] = 2
                path.pop()
    return None


def _has(container: Any, part: Any) -> bool:
    if isinstance(container, dict):
        return part in container
    return isinstance(container, list) and isinstance(part, int) and part < len(container)


def _dotted(parts: list[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _field_names(model: type[BaseModel]) -> list[str]:
    names = []
    for name, info in model.model_fields.items():
        names.append(info.alias or name)
    return names


def _field_model(model: type[BaseModel], name: str) -> tuple[type[BaseModel] | None, bool]:
    """The model validating field `name`, and whether the field is a mapping of them
    (whose keys are names the user chose, not fields)."""
    for fname, info in model.model_fields.items():
        if name in (fname, info.alias):
            is_map = typing.get_origin(info.annotation) is dict
            return _first_model(info.annotation), is_map
    return None, False


def _first_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin is None and not isinstance(annotation, types.UnionType):
        return None
    args = typing.get_args(annotation)
    if origin is dict and len(args) == 2:
        args = (args[1],)
    for arg in args:
        found = _first_model(arg)
        if found is not None:
            return found
    return None


Reporter = Callable[..., None]
