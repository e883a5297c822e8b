"""The public AgentLoom's Python DSL (`workflow(...).add_llm_step(...).build()`), building
our workflows.

The builder collects the same mapping a YAML file holds and `build()` loads it with our
loader, so a built workflow is checked exactly as a file is (cycles, missing steps,
unknown fields) and runs on `WorkflowEngine` or `agentloom.workflow.arun_workflow`
(`built.loaded` is our `Workflow`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentloom.compat.parser import CompatWorkflow, WorkflowParser


def _plain(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(exclude_none=True)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


class WorkflowBuilder:
    """Every method returns the builder, for chaining; `build()` returns the workflow."""

    def __init__(self, name: str, description: str = "", **config_kwargs: Any) -> None:
        self._data: dict[str, Any] = {"name": name, "steps": []}
        if description:
            self._data["description"] = description
        if config_kwargs:
            self._data["config"] = _plain(config_kwargs)
        self._state: dict[str, Any] = {}

    def set_state(self, **kwargs: Any) -> WorkflowBuilder:
        self._state.update(kwargs)
        return self

    def _step(self, step_id: str, step_type: str, fields: dict[str, Any]) -> WorkflowBuilder:
        step: dict[str, Any] = {"id": step_id, "type": step_type}
        step.update({k: _plain(v) for k, v in fields.items() if v is not None})
        self._data["steps"].append(step)
        return self

    def add_llm_step(self, step_id: str, prompt: str, system_prompt: str | None = None,
                     model: str | None = None, output: str | None = None,
                     depends_on: list[str] | None = None, attachments: list[Any] | None = None,
                     stream: bool | None = None, **kwargs: Any) -> WorkflowBuilder:
        return self._step(step_id, "llm_call", {
            "prompt": prompt, "system_prompt": system_prompt, "model": model,
            "output": output, "depends_on": depends_on, "attachments": attachments,
            "stream": stream, **kwargs})

    def add_tool_step(self, step_id: str, tool_name: str, tool_args: dict[str, Any] | None = None,
                      output: str | None = None, depends_on: list[str] | None = None,
                      **kwargs: Any) -> WorkflowBuilder:
        return self._step(step_id, "tool", {
            "tool_name": tool_name, "tool_args": tool_args, "output": output,
            "depends_on": depends_on, **kwargs})

    def add_router_step(self, step_id: str, conditions: list[tuple[str, str]],
                        default: str | None = None, depends_on: list[str] | None = None,
                        **kwargs: Any) -> WorkflowBuilder:
        if not isinstance(conditions, list | tuple) or not all(
                isinstance(c, list | tuple) and len(c) == 2 for c in conditions):
            raise TypeError(f"step {step_id!r}: conditions must be a list of (expression, "
                            f"target) pairs, got {conditions!r:.200}")
        rules = [{"expression": expr, "target": target} for expr, target in conditions]
        return self._step(step_id, "router", {
            "conditions": rules, "default": default, "depends_on": depends_on, **kwargs})

    def add_subworkflow_step(self, step_id: str, workflow_path: str | None = None,
                             workflow_inline: dict[str, Any] | None = None,
                             output: str | None = None, depends_on: list[str] | None = None,
                             **kwargs: Any) -> WorkflowBuilder:
        return self._step(step_id, "subworkflow", {
            "workflow_path": workflow_path, "workflow_inline": workflow_inline,
            "output": output, "depends_on": depends_on, **kwargs})

    def to_dict(self) -> dict[str, Any]:
        """The mapping a YAML file of this workflow would hold."""
        data = dict(self._data)
        if self._state:
            data["state"] = dict(self._state)
        return data

    def build(self, *, base_dir: str | Path | None = None) -> CompatWorkflow:
        """Check and load the workflow; problems raise `WorkflowProblems`. Relative
        subworkflow paths resolve against `base_dir` (default: the current directory)."""
        return WorkflowParser.from_dict(self.to_dict(), base_dir=base_dir)


def workflow(name: str, description: str = "", **config_kwargs: Any) -> WorkflowBuilder:
    """A new builder; keyword arguments are `config:` fields (provider, model, budget_usd...)."""
    return WorkflowBuilder(name, description, **config_kwargs)
