"""`agentloom runs show RUN_ID`: the facts of the run page (`agentloom ui`), as text.

Both read the same view (`agentloom.ui.run_detail`), so the terminal and the browser
agree: summary, what the run waits for, each step with its dependencies, attempts,
model and provider, tokens, cost, duration, finish reason and error, the timeline's
start, end and lane of every step, what each step changed in the state (the page shows
the whole state after it), and the state. `--json` prints the view itself, each step's
details included (`details`: output, model exchanges, tool calls, the state after it).
"""

from __future__ import annotations

from typing import Any


def _cost(text: Any) -> str:
    return "?" if text is None else f"${text}"


def _secs(value: Any) -> str:
    return "-" if value is None else f"{float(value):.3f}s"


def _state_after(after: dict[str, Any] | None) -> list[str]:
    """What the write that recorded a step changed in the state: the keys it set, with
    their values, and those it removed (the state after the step is the one before it
    with these changes; the page shows it whole)."""
    import json

    if after is None:
        return []
    lines = [f"  state after (write {after['seq']}): "
             + ("; ".join(filter(None, [
                 f"set {', '.join(after['changed'])}" if after["changed"] else "",
                 f"removed {', '.join(after['removed'])}" if after["removed"] else ""]))
                or "unchanged")]
    for key in after["changed"]:
        value = json.dumps(after["state"].get(key), ensure_ascii=False, default=str)
        lines.append(f"    {key} = {value}")
    return lines


def render(detail: dict[str, Any]) -> str:
    import json

    run, summary = detail["run"], detail["summary"]
    out = [f"run {run['run_id']}  {run['status']}  workflow {run['workflow']}",
           f"started {run['started_at']}  duration {_secs(summary['duration_seconds'])}  "
           f"tokens {summary['tokens'] if summary['tokens'] is not None else '-'}  "
           f"cost {_cost(summary['cost_usd'])}"]
    counts = ", ".join(f"{n} {s}" for s, n in summary["steps"].items()) or "none"
    out.append(f"steps: {counts}")
    if run.get("batch_id"):
        out.append(f"batch {run['batch_id']} (input {run.get('input_id')})")
    if run.get("claimed_by"):
        out.append(f"held by {run['claimed_by']}")
    paused = detail["paused"]
    if paused is not None and run["status"] in ("paused", "needs_decision"):
        where = paused["step_id"] + (f" (tool call {paused['call_id']})"
                                     if paused["call_id"] else "")
        out.append(f"waiting for {paused['waiting_for']} at {where}: "
                   f"{paused['prompt'] or ''}".rstrip())
        if paused.get("choices"):
            out.append(f"  choices: {', '.join(map(str, paused['choices']))}")
    bars = {(b["id"], b["kind"]): b for b in detail["timeline"]["bars"]}
    header = ("STEP", "STATUS", "ATTEMPTS", "MODEL", "PROVIDER", "TOKENS", "COST",
              "DURATION", "FINISH", "START", "LANE", "AFTER")
    rows = []
    for s in detail["steps"]:
        bar = bars.get((s["id"], "step"))
        rows.append((
            ("  " if s["parent"] else "") + s["id"], s["status"], s["attempts"] or "-",
            s["model"] or "-", s["provider"] or "-",
            s["tokens"] if s["tokens"] is not None else "-",
            _cost(s["cost_usd"]) if s["usage"] is not None else "-",
            _secs(s["duration_seconds"]), s["finish_reason"] or "-",
            _secs(bar["start"]) if bar else "-", bar["lane"] if bar else "-",
            ",".join(s["depends_on"]) or "-"))
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    out.append("")
    for line in (header, *rows):
        out.append("  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True))
                   .rstrip())
    for (sid, kind), bar in bars.items():
        if kind == "wait":
            out.append(f"waited for a person before {sid}: {_secs(bar['end'] - bar['start'])}"
                       f" (from {_secs(bar['start'])})")
    for s in detail["steps"]:
        extra = []
        if s["error"]:
            extra.append(f"  error: {s['error_type'] or 'error'}: {s['error']}")
        more = s.get("details") or {}
        if more.get("exchanges") or more.get("tool_calls"):
            extra.append(f"  stored: {len(more['exchanges'])} model exchange(s), "
                         f"{len(more['tool_calls'])} tool call(s)")
        extra += _state_after(more.get("state_after"))
        if extra:
            out.append(f"{s['id']}:")
            out.extend(extra)
    out.append("")
    out.append("state:")
    out.append(json.dumps(detail["state"], indent=2, ensure_ascii=False, default=str))
    return _printable("\n".join(out)) + "\n"


def _printable(text: str) -> str:
    """Control characters shown escaped: stored text (a model's output, a provider's
    model name) must not drive the terminal."""
    return "".join(c if c == "\n" or c.isprintable() else repr(c)[1:-1] for c in text)
