"""Pieces the commands share: reading the workflow file and the `--state` values."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentloom.cli import UsageError

if TYPE_CHECKING:
    from agentloom.workflow import Workflow


def existing_file(path: str, what: str = "workflow file") -> Path:
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{what} not found: {path}")
    return p


def load_or_report(path: str) -> Workflow | None:
    """The workflow, or None after printing every problem to stderr."""
    from agentloom.errors import WorkflowError
    from agentloom.workflow import WorkflowProblems, load_workflow

    existing_file(path)
    try:
        return load_workflow(path)
    except WorkflowProblems as exc:
        for err in exc.errors:
            sys.stderr.write(f"{err}\n")
        n = len(exc.errors)
        sys.stderr.write(f"{n} problem{'s' if n != 1 else ''} found in {path}\n")
    except WorkflowError as exc:
        sys.stderr.write(f"{exc}\n")
    return None


def parse_state(pairs: list[str], state_file: str | None) -> dict[str, Any]:
    """`--state-file` first, then each `--state k=v` (values typed as YAML scalars)."""
    import yaml

    from agentloom.workflow._paths import PathError, assign, parse_path

    state: dict[str, Any] = {}
    if state_file:
        text = existing_file(state_file, "state file").read_text(encoding="utf-8")
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise UsageError(f"--state-file {state_file}: invalid YAML/JSON: "
                             f"{' '.join(str(exc).split())}") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise UsageError(f"--state-file {state_file}: expected a mapping of keys to values")
        state.update(loaded or {})
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--state {pair!r}: expected KEY=VALUE")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        if isinstance(value, dict | list) and not raw.lstrip().startswith(("{", "[")):
            value = raw  # `a: b` or `- x` typed on a command line mean the text
        try:
            assign(state, parse_path(key.strip().removeprefix("state.")), value)
        except PathError as exc:
            raise UsageError(f"--state {pair!r}: {exc}") from None
    return state
