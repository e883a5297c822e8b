"""`WorkflowParser`: the public AgentLoom's loader face, on our loader.

`from_yaml` takes a path or YAML text, `from_dict` a mapping; both return a
`CompatWorkflow`, which reads like their `WorkflowDefinition` (`name`, `config`, `state`,
`steps`) and lets a script change `config.provider` / `config.model` before the run, as
their examples do. Problems come out as our `WorkflowProblems` (`file:line: ...`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentloom.errors import ConfigError
from agentloom.workflow import Workflow, load_workflow, load_workflow_text


class _Config:
    """`workflow.config`: reads the loaded config, and records assignments as overrides
    applied (through `Workflow.with_overrides`) when the engine runs."""

    __slots__ = ("_base", "_changes")

    def __init__(self, base: Any, changes: dict[str, Any]) -> None:
        object.__setattr__(self, "_base", base)
        object.__setattr__(self, "_changes", changes)  # the workflow's own dict

    def __getattr__(self, name: str) -> Any:
        changes: dict[str, Any] = object.__getattribute__(self, "_changes")
        if name in changes:
            return changes[name]
        return getattr(object.__getattribute__(self, "_base"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        base = object.__getattribute__(self, "_base")
        if name not in type(base).model_fields:
            raise AttributeError(f"workflow config has no field {name!r}")
        # Checked as the file's config is: `timeout = -1` ended the run as a timeout
        # before any step, `max_concurrent_steps = -1` or a NaN latency was taken.
        try:
            type(base).model_validate(
                base.model_dump(exclude_unset=True) | self._changes | {name: value})
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"]) or name
            raise ConfigError(f"workflow config {where}: {error['msg']} "
                              f"(got {value!r})") from None
        self._changes[name] = value

    def __repr__(self) -> str:
        return f"<config {self._base.model_dump(exclude_none=True) | self._changes}>"


class CompatWorkflow:
    """A loaded workflow, as the public AgentLoom's scripts handle one."""

    def __init__(self, loaded: Workflow) -> None:
        self.loaded = loaded
        self._overrides: dict[str, Any] = {}
        self.config: Any = _Config(loaded.config, self._overrides)
        self.state: dict[str, Any] = dict(loaded.definition.state)

    @property
    def name(self) -> str:
        return self.loaded.name

    @property
    def version(self) -> str:
        return self.loaded.definition.version

    @property
    def description(self) -> str:
        return self.loaded.definition.description or ""

    @property
    def steps(self) -> list[Any]:
        return list(self.loaded.definition.steps)

    def resolved(self) -> Workflow:
        """Our Workflow with the script's config changes applied."""
        changes = dict(self._overrides)
        return self.loaded.with_overrides(**changes) if changes else self.loaded

    def __repr__(self) -> str:
        return f"<CompatWorkflow {self.name!r}, {len(self.loaded.nodes)} steps>"


def as_workflow(obj: Any) -> CompatWorkflow:
    """What the engine accepts: a CompatWorkflow, one of our Workflows, a path or a dict."""
    if isinstance(obj, CompatWorkflow):
        return obj
    if isinstance(obj, Workflow):
        return CompatWorkflow(obj)
    if isinstance(obj, dict):
        return WorkflowParser.from_dict(obj)
    if not isinstance(obj, str | Path):
        raise TypeError(f"workflow: expected a loaded workflow (WorkflowParser.from_yaml), "
                        f"a path, YAML text or a dict, got {type(obj).__name__}")
    return WorkflowParser.from_yaml(obj)


class WorkflowParser:
    """Loads workflows; each method returns a `CompatWorkflow`."""

    @staticmethod
    def from_yaml(path_or_str: str | Path) -> CompatWorkflow:
        if not isinstance(path_or_str, str | Path):
            raise TypeError(f"from_yaml: expected a path or YAML text, got "
                            f"{type(path_or_str).__name__}")
        return CompatWorkflow(load_workflow(path_or_str))

    @staticmethod
    def from_dict(data: dict[str, Any], *, base_dir: str | Path | None = None) -> CompatWorkflow:
        import yaml

        # Through YAML text, so the checks (and their messages) are the loader's own.
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
        return CompatWorkflow(load_workflow_text(
            text, filename="<dict>", base_dir=Path(base_dir) if base_dir else None))
