"""Every problem of a workflow file at once.

`validate` lists all of them, so a loader collects `WorkflowError`s instead of stopping at
the first. `WorkflowProblems` is itself a `WorkflowError` (the first problem's file, line
and field), so callers that catch one kind of error catch both.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentloom.errors import WorkflowError


class WorkflowProblems(WorkflowError):
    """Several problems in one workflow file; `.errors` lists them in file order."""

    def __init__(self, errors: Sequence[WorkflowError]) -> None:
        ordered = sorted(errors, key=lambda e: (e.file or "", e.line or 0))
        self.errors: list[WorkflowError] = list(ordered)
        first = ordered[0]
        super().__init__(first.message, file=first.file, line=first.line, field=first.field)

    def __str__(self) -> str:
        return "\n".join(str(e) for e in self.errors)
