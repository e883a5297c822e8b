"""Schema migrations: numbered functions, applied once each, recorded in a table.

The simplest scheme that works: `m001_initial(dialect)` returns the statements for one
step; `@migration` appends it to `MIGRATIONS` in order; a backend runs those not yet in
`agentloom_migrations` inside one transaction per migration. Both SQL backends share the
functions, and `dialect` ("sqlite" or "postgres") picks the few types that differ.
"""

from __future__ import annotations

from collections.abc import Callable

Migration = Callable[[str], list[str]]
MIGRATIONS: list[Migration] = []

MIGRATIONS_TABLE_SQL = (
    "CREATE TABLE IF NOT EXISTS agentloom_migrations "
    "(name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
)


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append(fn)
    return fn


def _types(dialect: str) -> tuple[str, str]:
    """(json column type, timestamp column type)."""
    if dialect == "postgres":
        return "JSONB", "TIMESTAMPTZ"
    return "TEXT", "TEXT"  # ISO-8601 UTC text: sorts and compares as time


@migration
def m001_initial(dialect: str) -> list[str]:
    js, ts = _types(dialect)
    return [
        f"""CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            workflow_name TEXT NOT NULL,
            workflow_hash TEXT NOT NULL,
            status TEXT NOT NULL,
            meta {js} NOT NULL,
            started_at {ts} NOT NULL,
            updated_at {ts} NOT NULL,
            cost_usd TEXT,
            latest_seq INTEGER NOT NULL,
            claimed_by TEXT,
            lease_until {ts}
        )""",
        "CREATE INDEX runs_status_updated ON runs (status, updated_at)",
        "CREATE INDEX runs_updated ON runs (updated_at)",
        f"""CREATE TABLE checkpoints (
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            created_at {ts} NOT NULL,
            payload {js} NOT NULL,
            PRIMARY KEY (run_id, seq)
        )""",
        f"""CREATE TABLE tool_calls (
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            step_id TEXT NOT NULL,
            call_id TEXT NOT NULL,
            turn INTEGER NOT NULL,
            status TEXT NOT NULL,
            idempotent BOOLEAN NOT NULL,
            name TEXT,
            arguments {js},
            result {js},
            updated_at {ts} NOT NULL,
            PRIMARY KEY (run_id, step_id, call_id)
        )""",
        f"""CREATE TABLE model_exchanges (
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            step_id TEXT NOT NULL,
            turn INTEGER NOT NULL,
            request_hash TEXT NOT NULL,
            response {js} NOT NULL,
            created_at {ts} NOT NULL,
            PRIMARY KEY (run_id, step_id, turn, request_hash)
        )""",
    ]


@migration
def m002_checkpoint_deltas(dialect: str) -> list[str]:
    """One row per step or tool-loop turn: what it changed, not the whole run again.
    Stores made before it keep their whole checkpoints, which stay readable as they are:
    a run's newest whole checkpoint is the base its later deltas apply to."""
    js, ts = _types(dialect)
    return [
        f"""CREATE TABLE checkpoint_deltas (
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            created_at {ts} NOT NULL,
            payload {js} NOT NULL,
            PRIMARY KEY (run_id, seq)
        )""",
    ]


def migration_name(fn: Migration) -> str:
    return fn.__name__
