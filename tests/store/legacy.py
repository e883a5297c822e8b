"""A run store as today's main wrote it before checkpoint deltas (migration m001 only):
`fixtures/runs_before_deltas.sql` is the SQLite dump of a real one, made by `agentloom
run` on that tree: `legacy-done` (succeeded) and `legacy-gate` (paused at its approval
gate, GATE below, after its first step). `load_legacy_sqlite` makes a database of it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

FIXTURE = Path(__file__).parent / "fixtures" / "runs_before_deltas.sql"

GATE = """\
name: gate
config: {model: gpt-4o-mini, provider: openai}
steps:
  - {id: draft, type: llm_call, prompt: "draft about {state.topic}", output: draft}
  - id: approve
    type: approval_gate
    depends_on: [draft]
    message: "send it?"
    output: decision
  - {id: send, type: llm_call, depends_on: [approve], prompt: "decision {state.decision}",
     output: result}
state: {topic: tea}
"""


def load_legacy_sqlite(db: Path, workflow_dir: Path | None = None) -> None:
    """The fixture as a SQLite file at `db`; with `workflow_dir`, the runs' workflow paths
    point there (the fixture was made elsewhere) and GATE is written to it."""
    db.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(db) as conn:
        conn.executescript(FIXTURE.read_text())
        if workflow_dir is not None:
            (workflow_dir / "gate.yaml").write_text(GATE)
            for run_id, meta in conn.execute("SELECT run_id, meta FROM runs").fetchall():
                data = json.loads(meta)
                data["workflow_path"] = str(workflow_dir / Path(data["workflow_path"]).name)
                conn.execute("UPDATE runs SET meta = ? WHERE run_id = ?",
                             (json.dumps(data), run_id))
    conn.close()


def legacy_rows() -> dict[str, list[tuple[object, ...]]]:
    """The fixture's rows, table by table (for loading it into another database)."""
    conn = sqlite3.connect(":memory:")
    conn.executescript(FIXTURE.read_text())
    out = {t: conn.execute(f"SELECT * FROM {t}").fetchall()
           for t in ("runs", "checkpoints", "tool_calls", "model_exchanges")}
    conn.close()
    return out
