"""The workflow package's entry points, wired with this package's step types: the loader
and the engine take a `StepLibrary` instead of importing the steps, and these hand them
`steps.library.LIBRARY`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentloom.workflow.engine.start import arun_workflow, run_workflow
from agentloom.workflow.load import loader
from agentloom.workflow.load.workflow import Workflow
from agentloom.workflow.steps.library import LIBRARY

__all__ = ["arun_workflow", "load_workflow", "load_workflow_data", "load_workflow_text",
           "run_workflow"]


def load_workflow(source: str | os.PathLike[str], *, filename: str | None = None,
                  config: Mapping[str, Any] | None = None) -> Workflow:
    """Load and check a workflow from a file path, or from YAML text (any string with a
    newline). Raises `WorkflowProblems` (a `WorkflowError`) listing every problem.
    `config`: changes to the file's `config` (as `--model` makes), seen by the checks."""
    return loader.load_workflow(source, library=LIBRARY, filename=filename, config=config)


def load_workflow_text(text: str, *, filename: str = "<string>",
                       base_dir: Path | None = None,
                       config: Mapping[str, Any] | None = None) -> Workflow:
    """Load and check a workflow from YAML text; relative paths resolve in `base_dir`;
    `config` as for `load_workflow`."""
    return loader.load_workflow_text(text, library=LIBRARY, filename=filename,
                                     base_dir=base_dir, config=config)


def load_workflow_data(data: dict[str, Any], *, filename: str = "<inline>",
                       base_dir: Path | None = None) -> Workflow:
    """Check an already-parsed mapping (no line numbers)."""
    return loader.load_workflow_data(data, library=LIBRARY, filename=filename,
                                     base_dir=base_dir)
