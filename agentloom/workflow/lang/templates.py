"""Prompt templates: `{state.a.b}`, `{state.items[0]}`, `{steps.<id>.output}`; `{{`/`}}` are
literal braces.

A template is parsed once, when the workflow loads, into a tuple of literal strings and
references; rendering is a join over that tuple, with no parsing and no `str.format` (whose
format specs and attribute walks are how templates become code). Inserted values are text:
dicts and lists as JSON, and a value that itself contains braces is never parsed again.
A rendering longer than `MAX_RENDERED_CHARS` is refused as it is counted, not built.
"""

from __future__ import annotations

import json
from typing import Any

from agentloom._record import FrozenRecord, frozen_record, set_field
from agentloom.errors import TemplateError
from agentloom.workflow.lang.paths import MISSING, Path, PathError, format_path, lookup, parse_path


@frozen_record(kw_only=False)
class Ref(FrozenRecord):
    """One `{...}` of a template: a root (`state` or `steps`) and a path below it."""

    root: str
    path: Path
    source: str

    def __init__(self, root: str, path: Path, source: str) -> None:
        set_field(self, "root", root)
        set_field(self, "path", path)
        set_field(self, "source", source)

    @property
    def step_id(self) -> str | None:
        return str(self.path[0]) if self.root == "steps" else None


@frozen_record(kw_only=False)
class Template(FrozenRecord):
    """A compiled template. `parts` alternates literal text and `Ref`s."""

    parts: tuple[str | Ref, ...]
    source: str

    def __init__(self, parts: tuple[str | Ref, ...], source: str) -> None:
        set_field(self, "parts", parts)
        set_field(self, "source", source)

    @property
    def refs(self) -> tuple[Ref, ...]:
        return tuple(p for p in self.parts if isinstance(p, Ref))

    @property
    def is_literal(self) -> bool:
        return all(isinstance(p, str) for p in self.parts)

    def render(self, scope: Scope) -> str:
        parts = self.parts
        if len(parts) == 1 and isinstance(parts[0], str):
            return parts[0]
        out: list[str] = []
        size = 0
        for p in parts:
            text = p if isinstance(p, str) else to_text(scope.resolve(p))
            size += len(text)
            if size > MAX_RENDERED_CHARS:  # counted before the join builds it
                raise TemplateError(
                    f"template {_excerpt(self.source)} renders to more than "
                    f"{MAX_RENDERED_CHARS:,} characters; pass less state into it")
            out.append(text)
        return "".join(out)

    def value(self, scope: Scope) -> Any:
        """A template that is exactly one reference gives the value itself, typed; any
        other gives its rendered text (tool arguments keep numbers and lists this way)."""
        parts = self.parts
        if len(parts) == 1 and isinstance(parts[0], Ref):
            return scope.resolve(parts[0])
        return self.render(scope)


class Scope:
    """What a template reads: the run's state and the raw text of finished steps."""

    __slots__ = ("args", "state", "step_text")

    def __init__(self, state: dict[str, Any], step_text: dict[str, str],
                 args: dict[str, Any] | None = None) -> None:
        self.state = state
        self.step_text = step_text
        # A workflow function's arguments (`{args.x}`); None outside function bodies.
        self.args = args

    def resolve(self, ref: Ref) -> Any:
        if ref.root == "state":
            value = lookup(self.state, ref.path)
            if value is MISSING:
                raise TemplateError(
                    f"{{{ref.source}}}: the state has no {format_path(ref.path)!r}"
                )
            return value
        if ref.root == "args":
            if self.args is None:
                raise TemplateError(f"{{{ref.source}}}: args exist only in a function's steps")
            value = lookup(self.args, ref.path)
            if value is MISSING:
                raise TemplateError(f"{{{ref.source}}}: no argument {format_path(ref.path)!r}")
            return value
        step_id = str(ref.path[0])
        text = self.step_text.get(step_id)
        if text is None:
            raise TemplateError(f"{{{ref.source}}}: step {step_id!r} has no output")
        return text


MAX_RENDERED_CHARS = 32 * 1024 * 1024
"""A rendered template longer than this fails its step. A reference repeated in the file
multiplies a state value (a model's reply, `--state`): 2,000 `{state.x}` over a 100 kB
`x` rendered a 200 MB prompt, and a 1 MB file could ask for 10 GB."""


def _excerpt(source: str, limit: int = 40) -> str:
    return repr(source) if len(source) <= limit else f"{source[:limit]!r}..."


def to_text(value: Any) -> str:
    if type(value) is str:
        return value
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def compile_template(source: str) -> Template:
    """Parse a template. Raises TemplateError (without file:line: the loader adds it)."""
    if "{" not in source and "}" not in source:
        return Template((source,), source)
    parts: list[str | Ref] = []
    buf: list[str] = []
    i = 0
    n = len(source)
    while i < n:
        ch = source[i]
        if ch == "{":
            if i + 1 < n and source[i + 1] == "{":
                buf.append("{")
                i += 2
                continue
            end = source.find("}", i + 1)
            inner_open = source.find("{", i + 1)
            if end < 0 or (0 <= inner_open < end):
                raise TemplateError(
                    f"unclosed '{{' at column {i + 1}; write '{{{{' for a literal brace"
                )
            if buf:
                parts.append("".join(buf))
                buf = []
            parts.append(_compile_ref(source[i + 1 : end].strip(), i + 1))
            i = end + 1
        elif ch == "}":
            if i + 1 < n and source[i + 1] == "}":
                buf.append("}")
                i += 2
                continue
            raise TemplateError(
                f"single '}}' at column {i + 1}; write '}}}}' for a literal brace"
            )
        else:
            buf.append(ch)
            i += 1
    if buf:
        parts.append("".join(buf))
    merged: list[str | Ref] = []
    for p in parts:
        if isinstance(p, str) and merged and isinstance(merged[-1], str):
            merged[-1] = merged[-1] + p
        else:
            merged.append(p)
    return Template(tuple(merged) or ("",), source)


def _compile_ref(inner: str, column: int) -> Ref:
    if not inner:
        raise TemplateError(
            f"empty '{{}}' at column {column}; write '{{{{}}}}' for literal braces"
        )
    try:
        path = parse_path(inner)
    except PathError as exc:
        raise TemplateError(
            f"{{{inner}}} at column {column}: {exc}; write '{{{{' and '}}}}' for literal braces"
        ) from None
    root = path[0]
    if root == "state":
        if len(path) < 2:
            raise TemplateError(f"{{{inner}}} at column {column}: name a state key, as {{state.x}}")
        return Ref("state", path[1:], inner)
    if root == "steps":
        if len(path) != 3 or path[2] != "output" or not isinstance(path[1], str):
            raise TemplateError(
                f"{{{inner}}} at column {column}: a step reference reads {{steps.<id>.output}}"
            )
        return Ref("steps", path[1:2], inner)
    if root == "args" and len(path) >= 2:
        # A workflow function's argument; the loader allows it only in function bodies.
        return Ref("args", path[1:], inner)
    if isinstance(root, str) and root not in ("steps", "args"):
        # `{question}` is `{state.question}`, as the public AgentLoom's templates read it.
        return Ref("state", path, inner)
    hint = f"; did you mean {{state.{inner}}}?" if isinstance(root, str) else ""
    raise TemplateError(
        f"{{{inner}}} at column {column}: unknown reference, expected {{state.…}} or "
        f"{{steps.<id>.output}}{hint} (write '{{{{' and '}}}}' for literal braces)"
    )
