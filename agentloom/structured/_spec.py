"""The `response_schema` block of a step: parsed, checked and turned into a ResponseFormat.

Everything that can be wrong with a schema is found here, when the workflow loads: a
pydantic path that doesn't import, a schema that isn't valid JSON Schema, an open object
(`additionalProperties: true`), or a shape OpenAI's strict mode can't express. Errors are
ConfigError with a plain message; the workflow loader adds `file:line`.

Importing a pydantic model runs user code from the run directory; it happens once, at
load, with that directory put on `sys.path` only for the import (under a lock, so two
loads in threads don't fight over `sys.path`).
"""

from __future__ import annotations

import builtins
import importlib
import re
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentloom.errors import ConfigError, kind_of
from agentloom.messages import ResponseFormat
from agentloom.structured._refs import check_refs
from agentloom.structured._strict import open_objects, to_strict

if TYPE_CHECKING:
    from pydantic import BaseModel

SchemaType = Literal["pydantic", "json_schema", "json_object"]
_TYPES = ("pydantic", "json_schema", "json_object")
_KEYS = {"type", "model", "schema", "name", "strict", "description"}
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_PATH = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_]\w*)*([.:][A-Za-z_]\w*)$")
_IMPORT_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseSchemaSpec:
    """A checked `response_schema` block.

    spec = ResponseSchemaSpec.from_dict({"type": "json_schema", "schema": {...}})
    fmt = build_response_format(spec, "extract")
    """

    type: SchemaType = "json_object"
    model: str | None = None
    """The dotted path as written (`pkg.mod.Class` or `pkg.mod:Class`)."""
    model_class: builtins.type[BaseModel] | None = field(default=None, compare=False)
    """The imported class, for type pydantic."""
    schema: dict[str, Any] | None = None
    """The full JSON Schema: inline for json_schema, `model_json_schema()` for pydantic."""
    name: str | None = None
    strict: bool = True
    description: str | None = None

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, base_dir: str | Path | None = None
    ) -> ResponseSchemaSpec:
        """Parse the YAML block. `base_dir` (the run directory) is where pydantic models
        are imported from; None means the current `sys.path` only."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"response_schema must be a mapping, got {kind_of(data)}")
        unknown = sorted(set(data) - _KEYS)
        if unknown:
            raise ConfigError(
                f"response_schema: unknown field {unknown[0]!r}; expected one of "
                + ", ".join(sorted(_KEYS))
            )
        kind = data.get("type", "json_object")
        if kind not in _TYPES:
            raise ConfigError(
                f"response_schema.type is {kind!r}; expected pydantic, json_schema or json_object"
            )
        strict = data.get("strict", True)
        if not isinstance(strict, bool):
            raise ConfigError(f"response_schema.strict must be true or false, got {strict!r}")
        name = data.get("name")
        if name is not None and (not isinstance(name, str) or not _NAME.match(name)):
            raise ConfigError(f"response_schema.name {name!r} must be 1-64 letters, digits, _ or -")
        description = data.get("description")
        if description is not None and not isinstance(description, str):
            raise ConfigError("response_schema.description must be a string")
        model_path = data.get("model")
        raw_schema = data.get("schema")
        model_class = None
        schema: dict[str, Any] | None = None
        if kind == "pydantic":
            if raw_schema is not None:
                raise ConfigError("response_schema: type pydantic takes model, not schema")
            if not isinstance(model_path, str) or not model_path:
                raise ConfigError(
                    "response_schema: type pydantic needs model: package.module.Class"
                )
            model_class = import_model(model_path, base_dir)
            schema = model_class.model_json_schema()
        elif kind == "json_schema":
            if model_path is not None:
                raise ConfigError("response_schema: type json_schema takes schema, not model")
            if not isinstance(raw_schema, Mapping):
                raise ConfigError(
                    "response_schema: type json_schema needs schema: an inline JSON Schema mapping"
                )
            schema = check_schema(dict(raw_schema))
        elif model_path is not None or raw_schema is not None:
            raise ConfigError(
                "response_schema: type json_object takes neither model nor schema; "
                "use type json_schema or pydantic for a shape"
            )
        if schema is not None:
            _refuse_open_objects(schema)
        return cls(
            type=kind,
            model=model_path,
            model_class=model_class,
            schema=schema,
            name=name,
            strict=strict,
            description=description,
        )

    @classmethod
    def from_model(
        cls,
        model_class: builtins.type[BaseModel],
        *,
        name: str | None = None,
        strict: bool = True,
        description: str | None = None,
    ) -> ResponseSchemaSpec:
        """The spec of a pydantic class given from Python (an agent's output type)."""
        schema = model_class.model_json_schema()
        _refuse_open_objects(schema)
        path = f"{model_class.__module__}:{model_class.__qualname__}"
        return cls(
            type="pydantic",
            model=path,
            model_class=model_class,
            schema=schema,
            name=name,
            strict=strict,
            description=description,
        )

    @classmethod
    def from_json_schema(
        cls,
        schema: Mapping[str, Any],
        *,
        name: str | None = None,
        strict: bool = True,
        description: str | None = None,
    ) -> ResponseSchemaSpec:
        """The spec of an inline JSON Schema given from Python."""
        return cls.from_dict(
            {
                "type": "json_schema",
                "schema": dict(schema),
                "name": name,
                "strict": strict,
                "description": description,
            }
        )


def check_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` itself, once it is checked against its metaschema (the `$schema` it names,
    else draft 2020-12) and found to describe an object."""
    from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]
    from jsonschema.validators import validator_for  # type: ignore[import-untyped]

    validator = validator_for(schema)
    try:
        validator.check_schema(schema)
    except SchemaError as exc:
        where = "$" + "".join(
            f"[{p}]" if isinstance(p, int) else f".{p}" for p in exc.absolute_path
        )
        raise ConfigError(
            f"response_schema.schema is not valid JSON Schema at {where}: {_short(exc.message)}"
        ) from None
    kind = schema.get("type")
    if kind != "object" and "properties" not in schema:
        raise ConfigError(
            f"response_schema.schema must describe an object (type: object), not {kind!r}: "
            "replies are read as one JSON object"
        )
    check_refs(schema)
    return schema


def _refuse_open_objects(schema: dict[str, Any]) -> None:
    paths = open_objects(schema)
    if paths:
        raise ConfigError(
            f"response_schema: additionalProperties: true is not allowed (at {paths[0]}); "
            "list the properties, or use additionalProperties: false"
        )


def import_model(path: str, base_dir: str | Path | None = None) -> type[BaseModel]:
    """Import a pydantic model class from `pkg.mod.Class` or `pkg.mod:Class`."""
    from pydantic import BaseModel

    if not _PATH.match(path):
        raise ConfigError(
            f"response_schema.model {path!r} is not a dotted path like "
            "package.module.Class or package.module:Class"
        )
    if ":" in path:
        module_name, attr = path.split(":", 1)
    else:
        module_name, _, attr = path.rpartition(".")
    if not module_name:
        raise ConfigError(
            f"response_schema.model {path!r} names no module: write package.module.Class"
        )
    try:
        module = _import_from(module_name, base_dir)
    except Exception as exc:
        raise ConfigError(
            f"response_schema.model {path!r} could not be imported: "
            f"{type(exc).__name__}: {_short(str(exc))}"
        ) from exc
    obj = getattr(module, attr, None)
    if obj is None:
        raise ConfigError(f"response_schema.model {path!r}: module {module_name!r} has no {attr!r}")
    if not (isinstance(obj, type) and issubclass(obj, BaseModel)):
        raise ConfigError(
            f"response_schema.model {path!r} is a {type(obj).__name__}, not a pydantic "
            "BaseModel class"
        )
    return obj


def _import_from(module_name: str, base_dir: str | Path | None) -> Any:
    if base_dir is None:
        return importlib.import_module(module_name)
    entry = str(Path(base_dir).resolve())
    with _IMPORT_LOCK:
        added = entry not in sys.path
        if added:
            sys.path.insert(0, entry)
        try:
            importlib.invalidate_caches()
            return importlib.import_module(module_name)
        finally:
            if added:
                try:
                    sys.path.remove(entry)
                except ValueError:
                    pass


def schema_name(spec: ResponseSchemaSpec, step_id: str) -> str:
    """The name OpenAI requires: the given one, else the class name, else the step id
    with characters outside `[A-Za-z0-9_-]` replaced."""
    if spec.name:
        return spec.name
    base = spec.model_class.__name__ if spec.model_class is not None else step_id
    cleaned = re.sub(r"[^A-Za-z0-9_-]", "_", base)[:64]
    return cleaned or "response"


def build_response_format(spec: ResponseSchemaSpec, step_id: str) -> ResponseFormat:
    """The request's ResponseFormat: the strict form of the schema when `strict` is set.

    Raises ConfigError when strict mode can't express the schema; call it at load time.
    """
    name = schema_name(spec, step_id)
    if spec.schema is None:
        return ResponseFormat(
            kind="json_object", name=name, strict=False, description=spec.description
        )
    schema = to_strict(spec.schema) if spec.strict else spec.schema
    description = spec.description
    if description is None and spec.model_class is not None:
        description = (spec.model_class.__doc__ or "").strip() or None
    return ResponseFormat(
        kind="json_schema", schema=schema, name=name, strict=spec.strict, description=description
    )


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
