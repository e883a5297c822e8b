"""A few facts of each stored step result (who answered, how many tokens), read in the
database without decoding the runs: what `agentloom history` lists.

`load_latest` decodes a run's newest whole checkpoint and every later delta, state,
conversations and tool loops included, to hand back its step results; a history of
1,000 runs did that 1,000 times to show a provider and a token count. Here the SQL
store asks the database's JSON functions (SQLite's `json_each`, PostgreSQL's
`jsonb_each`) for those four fields of each step result of the same rows `load_latest`
folds, and folds them the same way (a delta's results replace the base's, then its
`step_results_removed` drop). A row whose shape those fields depend on is not what the
store writes (no JSON object, step results that are no object, removals that are no
list of keys; on SQLite also a value past the store's `max_stored_bytes`, which bounds
what its JSON parser holds) is flagged, and the store reads that run with `load_latest`,
which raises the `StoreCorrupt` naming it. Damage elsewhere in a row (a `state` that is a list) is
not looked for here: `runs show` and `resume`, which decode the row, report it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentloom import _jsontext
from agentloom.store._base import MAX_STORED_BYTES
from agentloom.store._records import StepFacts

MAX_NAME_CHARS = 256
"""A stored provider or model name past this is no name a run wrote: unknown (None)."""

_MAX_COUNT = 10**18
"""A token count past this is no count a reply reported: unknown."""

CHUNK = 500
"""Run ids per query: SQLite takes at most 32,766 parameters, and each id is sent
twice."""

# --- SQLite -------------------------------------------------------------------------------

_SQLITE_OK = (  # a CASE, whose tests run in order: json_type() of no JSON is an error
    "CASE WHEN {t}.payload IS NULL THEN 0 "
    "WHEN length(CAST({t}.payload AS BLOB)) > {limit} THEN 0 "
    "WHEN NOT json_valid({t}.payload) THEN 0 WHEN json_type({t}.payload) <> 'object' THEN 0 "
    "WHEN COALESCE(json_type({t}.payload, '$.step_results'), 'null') NOT IN "
    "('object', 'null') THEN 0{more} ELSE 1 END")
_SQLITE_DELTA_MORE = (" WHEN COALESCE(json_type({t}.payload, '$.step_results_removed'), "
                      "'null') NOT IN ('array', 'null') THEN 0")

# One json_extract of each result (one parse of it), as a JSON array: a string stays a
# string there, so a provider that is an object is not taken for its text. json_each's
# `value` is JSON text only for an object or array (a string is its bare text), hence
# `j.type` first.
_SQLITE_FACTS = ("CASE WHEN j.type = 'object' THEN json_extract(j.value, '$.provider', "
                 "'$.model', '$.usage.v.input_tokens', '$.usage.v.output_tokens', "
                 "'$.usage.input_tokens', '$.usage.output_tokens') END")


def _sqlite_sql(marks: str, limit: int) -> str:
    newest = "(SELECT MAX(seq) FROM checkpoints m WHERE m.run_id = {t}.run_id)"
    # The rows, then their removals (asked only of a row that is JSON), are subqueries
    # that `OFFSET 0` keeps whole: SQLite would otherwise fold them into the join and
    # check each payload again at each use of `ok`.
    return (
        f"SELECT r.run_id, r.seq, r.ok, r.removed, j.key, {_SQLITE_FACTS} FROM ("
        "SELECT w.run_id, w.seq, w.ok, CASE WHEN w.ok AND w.delta THEN json_extract("
        "w.payload, '$.step_results_removed') END AS removed, w.payload FROM ("
        f"SELECT c.run_id, c.seq, {_SQLITE_OK.format(t='c', more='', limit=limit)} AS ok, "
        "0 AS delta, "
        f"c.payload FROM checkpoints c WHERE c.run_id IN ({marks}) AND c.seq = "
        f"{newest.format(t='c')} UNION ALL SELECT d.run_id, d.seq, "
        f"{_SQLITE_OK.format(t='d', more=_SQLITE_DELTA_MORE.format(t='d'), limit=limit)}, "
        "1, d.payload "
        f"FROM checkpoint_deltas d WHERE d.run_id IN ({marks}) AND d.seq > "
        f"{newest.format(t='d')} LIMIT -1 OFFSET 0) w LIMIT -1 OFFSET 0) r "
        "LEFT JOIN json_each(CASE WHEN r.ok THEN r.payload ELSE '{}' END, "
        "'$.step_results') j ORDER BY 1, 2, j.id")


# --- PostgreSQL ---------------------------------------------------------------------------

# JSONB is stored parsed: these read the few fields without rendering the payload (and
# PostgreSQL keeps no JSONB value past about 256 MiB).
_PG_OK = (
    "(jsonb_typeof({t}.payload) = 'object' AND "
    "COALESCE(jsonb_typeof({t}.payload -> 'step_results'), 'null') IN ('object', 'null')"
    "{more})")
_PG_DELTA_MORE = (" AND COALESCE(jsonb_typeof({t}.payload -> 'step_results_removed'), "
                  "'null') IN ('array', 'null')")
_PG_FACTS = ("jsonb_build_array(j.value -> 'provider', j.value -> 'model', "
             "j.value #> '{usage,v,input_tokens}', j.value #> '{usage,v,output_tokens}', "
             "j.value #> '{usage,input_tokens}', j.value #> '{usage,output_tokens}')::text")


def _pg_sql(marks: str) -> str:
    newest = "(SELECT MAX(seq) FROM checkpoints m WHERE m.run_id = {t}.run_id)"
    return (
        f"SELECT r.run_id, r.seq, r.ok, r.removed, j.key, CASE WHEN jsonb_typeof(j.value) "
        f"= 'object' THEN {_PG_FACTS} END FROM ("
        f"SELECT c.run_id, c.seq, {_PG_OK.format(t='c', more='')} AS ok, NULL::text AS "
        f"removed, c.payload FROM checkpoints c WHERE c.run_id IN ({marks}) AND c.seq = "
        f"{newest.format(t='c')} UNION ALL SELECT d.run_id, d.seq, "
        f"{_PG_OK.format(t='d', more=_PG_DELTA_MORE.format(t='d'))}, "
        "(d.payload -> 'step_results_removed')::text, d.payload FROM checkpoint_deltas d "
        f"WHERE d.run_id IN ({marks}) AND d.seq > {newest.format(t='d')}) r "
        "LEFT JOIN LATERAL jsonb_each(CASE WHEN r.ok AND jsonb_typeof(r.payload -> "
        "'step_results') = 'object' THEN r.payload -> 'step_results' ELSE '{}'::jsonb END) "
        "WITH ORDINALITY AS j(key, value, n) ON true ORDER BY 1, 2, j.n")


def facts_sql(dialect: str, count: int, limit: int = MAX_STORED_BYTES) -> str:
    """The query of `fold`'s rows for `count` run ids (each id given twice); on SQLite a
    payload past `limit` bytes (the store's `max_stored_bytes`) is flagged unread."""
    marks = ", ".join("?" for _ in range(count))
    return _pg_sql(marks) if dialect == "postgres" else _sqlite_sql(marks, limit)


# --- both ---------------------------------------------------------------------------------

def _name(value: Any) -> str | None:
    return value if isinstance(value, str) and len(value) <= MAX_NAME_CHARS else None


def _count(value: Any) -> int | None:
    """A token count; anything else (text, a fraction, a negative, true, a huge one) is
    unknown."""
    return value if type(value) is int and 0 <= value < _MAX_COUNT else None


def _removed(text: Any) -> list[str] | None:
    """A delta's `step_results_removed` as the query hands it (JSON text, or None when
    it has none); None when it is not a list of keys (damaged)."""
    if text is None:
        return []
    try:
        names = _jsontext.loads(text)
    except ValueError:
        return None
    if names is None:
        return []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return None
    return names


def _facts(text: Any) -> StepFacts:
    """One result's facts from the query's JSON array (provider, model, then the
    tokens of a stored `Usage` and of a plain usage dict); None (no object): none."""
    try:
        values = _jsontext.loads(text) if isinstance(text, str) else None
    except ValueError:
        values = None
    if not isinstance(values, list) or len(values) != 6:
        return StepFacts()
    provider, model, tagged_in, tagged_out, plain_in, plain_out = values
    return StepFacts(provider=_name(provider), model=_name(model),
                     input_tokens=_count(tagged_in if tagged_in is not None else plain_in),
                     output_tokens=_count(tagged_out if tagged_out is not None else plain_out))


def fold(rows: Iterable[Sequence[Any]]) -> tuple[dict[str, dict[str, StepFacts]], set[str]]:
    """`facts_sql`'s rows (run, seq, ok, removed, key, facts; ordered by run, seq and
    the results' order) as each run's step facts, and the runs with a damaged row."""
    out: dict[str, dict[str, StepFacts]] = {}
    damaged: set[str] = set()
    write: tuple[Any, Any] | None = None
    dropped: list[str] = []
    facts: dict[str, StepFacts] = {}
    for run_id, seq, ok, removed, key, found in rows:
        if (run_id, seq) != write:  # a new write: the last one's removals come last
            for name in dropped:
                facts.pop(name, None)
            write, facts = (run_id, seq), out.setdefault(run_id, {})
            names = _removed(removed) if ok else None
            if names is None:
                damaged.add(run_id)
            dropped = names or []
        if ok and isinstance(key, str):  # not the LEFT JOIN's row of a write without any
            facts[key] = _facts(found)
    for name in dropped:
        facts.pop(name, None)
    return out, damaged


def facts_of(step_results: Mapping[str, Any]) -> dict[str, StepFacts]:
    """The same facts of decoded step results (`load_latest`'s), for a store whose rows
    are not in SQL: a result's `usage` is a `Usage` (as the store revives it) or a dict."""
    out: dict[str, StepFacts] = {}
    for key, raw in step_results.items():
        if not isinstance(raw, Mapping):
            out[key] = StepFacts()
            continue
        usage = raw.get("usage")
        if isinstance(usage, Mapping):
            tokens_in, tokens_out = usage.get("input_tokens"), usage.get("output_tokens")
        else:
            tokens_in = getattr(usage, "input_tokens", None)
            tokens_out = getattr(usage, "output_tokens", None)
        out[key] = StepFacts(provider=_name(raw.get("provider")), model=_name(raw.get("model")),
                             input_tokens=_count(tokens_in), output_tokens=_count(tokens_out))
    return out
