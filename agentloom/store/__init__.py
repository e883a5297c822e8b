"""Durable runs: the checkpoint store protocol and its backends.

Job: the checkpoint store protocol; SQLite (default), PostgreSQL and in-memory backends.
May import: the layers up to `loop` (tests/test_layers.py holds the rule).

`open_store(target)` picks a backend from a URL or path and does no I/O: the store opens
(and migrates its schema) on first use, or on `async with store:`.

    open_store(None)                          # .agentloom/runs.db (SQLite)
    open_store("runs.db")                     # a plain path: SQLite
    open_store("sqlite:////var/lib/al/runs.db")  # four slashes: an absolute path
    open_store("postgresql://user:pw@db:5432/agentloom")
    open_store("memory://")                   # in-process, not durable
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentloom._lazy import lazy_getattr
from agentloom.store._base import (
    CheckpointStore,
    ResumeAction,
    RunExists,
    RunNotFound,
    StoreConfigError,
    StoreCorrupt,
    StoreError,
    lease_holds,
    tool_call_resume_action,
)
from agentloom.store._claims import holder_is_gone, new_worker_id, take_claim
from agentloom.store._records import (
    FINISHED_STATUSES,
    RETRYABLE_STATUSES,
    RUN_STATUSES,
    Checkpoint,
    CheckpointDelta,
    ModelExchangeRecord,
    PauseInfo,
    RunPage,
    RunQuery,
    RunRecord,
    RunStatus,
    StepFacts,
    StoredWrite,
    ToolCallRecord,
    ToolLoopProgress,
    apply_delta,
    query_matches,
)
from agentloom.store._urls import shown_url

__all__ = [
    "FINISHED_STATUSES",
    "RETRYABLE_STATUSES",
    "RUN_STATUSES",
    "Checkpoint",
    "CheckpointDelta",
    "CheckpointStore",
    "DeltaBuilder",
    "EncodeOnce",
    "JsonSerializer",
    "MemoryBackend",
    "MemoryStore",
    "ModelExchangeRecord",
    "PauseInfo",
    "PostgresStore",
    "ResumeAction",
    "RunExists",
    "RunNotFound",
    "RunPage",
    "RunQuery",
    "RunRecord",
    "RunStatus",
    "Serializer",
    "SqliteStore",
    "StepFacts",
    "StoreConfigError",
    "StoreCorrupt",
    "StoreError",
    "StoredWrite",
    "ToolCallRecord",
    "ToolLoopProgress",
    "apply_delta",
    "holder_is_gone",
    "lease_holds",
    "new_worker_id",
    "open_store",
    "query_matches",
    "shown_url",
    "take_claim",
    "tool_call_resume_action",
]

if TYPE_CHECKING:
    from agentloom.store._delta import DeltaBuilder as DeltaBuilder
    from agentloom.store._memory import MemoryBackend as MemoryBackend
    from agentloom.store._memory import MemoryStore as MemoryStore
    from agentloom.store._postgres import PostgresStore as PostgresStore
    from agentloom.store._serde import EncodeOnce as EncodeOnce
    from agentloom.store._serde import JsonSerializer as JsonSerializer
    from agentloom.store._serde import Serializer as Serializer
    from agentloom.store._sqlite import SqliteStore as SqliteStore

_LAZY = {
    "DeltaBuilder": "agentloom.store._delta",
    "MemoryStore": "agentloom.store._memory",
    "MemoryBackend": "agentloom.store._memory",
    "SqliteStore": "agentloom.store._sqlite",
    "PostgresStore": "agentloom.store._postgres",
    "EncodeOnce": "agentloom.store._serde",
    "JsonSerializer": "agentloom.store._serde",
    "Serializer": "agentloom.store._serde",
}


__getattr__ = lazy_getattr(__name__, _LAZY, globals())


def open_store(target: str | Path | None = None, *, run_dir: str | Path | None = None,
               **options: Any) -> CheckpointStore:
    """A store for `target` (see the module docstring). `run_dir` is where the default
    SQLite file goes (`<run_dir>/.agentloom/runs.db`); it defaults to the working directory.

    Raises:
        StoreConfigError: an unknown URL scheme (an unwritable path fails on first use,
            naming the path).
    """
    if target is None or str(target) == "":
        from agentloom.store._sqlite import DEFAULT_PATH, SqliteStore

        base = Path(run_dir) if run_dir is not None else Path()
        # The working directory may be somebody else's checkout: its links aren't followed.
        return SqliteStore(base / DEFAULT_PATH, follow_links=False, **options)
    text = str(target)
    if text.startswith(("postgresql://", "postgres://")):
        from agentloom.store._postgres import PostgresStore

        return PostgresStore(text, **options)
    if text.startswith("sqlite://"):
        from agentloom.store._sqlite import SqliteStore

        path = text[len("sqlite://"):]
        if path.startswith("/"):  # SQLAlchemy's rule: sqlite:///rel.db, sqlite:////abs.db
            path = path[1:]
        if not path:
            raise StoreConfigError(f"no file path in store URL {text!r}; "
                                   "use sqlite:///relative.db or sqlite:////abs/path.db")
        return SqliteStore(path, **options)
    if text.startswith("memory:"):
        from agentloom.store._memory import MemoryStore

        return MemoryStore(**options)
    if "://" in text:
        scheme = text.split("://", 1)[0]
        raise StoreConfigError(
            f"unknown store URL scheme {scheme!r} in {text!r}; "
            "expected sqlite:///path, postgresql://..., memory:// or a file path"
        )
    from agentloom.store._sqlite import SqliteStore

    return SqliteStore(text, **options)

