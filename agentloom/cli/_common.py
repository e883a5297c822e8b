"""Pieces the commands share: reading the workflow file and the `--state` values, and
the checks of flags several commands take."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentloom.cli._exit import UsageError

if TYPE_CHECKING:
    from agentloom.workflow import Workflow


MAX_LISTED = 100_000
"""The most runs one listing (`runs`, `history`) reads from the store."""


def check_limit(limit: int) -> None:
    """`--limit N` of a listing: 1 to `MAX_LISTED` (a larger one doesn't fit a store's
    integer, and a listing that size is not read by a person)."""
    if not 1 <= limit <= MAX_LISTED:
        raise UsageError(f"--limit must be 1 to {MAX_LISTED}")


def check_seconds(value: float | None, flag: str = "--timeout") -> None:
    """A duration flag: a positive, finite number of seconds (`nan` and `inf` parse as
    floats, and compare false with everything)."""
    if value is not None and not 0 < value < math.inf:
        raise UsageError(f"{flag} must be a positive number of seconds")


def usd(raw: str, flag: str) -> float:
    """A flag's amount of money: a finite number of USD, 0 or more. `nan` (which compares
    false with everything: as a cost filter it quietly matched nothing), `inf`, `-1` and
    `1e400` (past any float) are a UsageError."""
    from decimal import Decimal, InvalidOperation

    try:
        amount = float(Decimal(raw)) + 0.0  # -0 is 0
    except (InvalidOperation, ValueError):
        amount = math.nan
    if not 0 <= amount < math.inf:
        raise UsageError(f"{flag} {_shown(raw)}: expected a number of USD >= 0, e.g. 0.50")
    return amount


MAX_TOKENS_FLAG = 10**15
"""The largest `--max-tokens-per-run`: a quadrillion tokens is no cap a run reaches, and
a longer number is text `int()` refuses (past 4,300 digits) or no count at all."""


def existing_file(path: str, what: str = "workflow file") -> Path:
    p = Path(path)
    if p.is_dir():
        files = sorted(f.name for f in p.iterdir() if f.suffix in (".yaml", ".yml"))
        pick = next((f for f in files if f.startswith("hello.")), files[0] if files else "")
        suggestion = (f"; give a file in it, e.g. {p / pick}" if pick and what ==
                      "workflow file" else "")
        raise UsageError(f"{path} is a folder, not a {what}{suggestion}")
    if not p.is_file():
        if p.exists():  # a FIFO, a socket or a device: reading one may never end
            raise UsageError(f"{path} is not a regular file; give a {what}")
        raise UsageError(f"{what} not found: {path}")
    return p


_HINT_STARTS = ("did you mean", "write ", "use ", "set ", "add ", "pin ", "list ", "remove ",
                "rename ", "quote ", "give ", "expected ")


def diagnostic(err: Any) -> dict[str, Any]:
    """One problem as data: file, line, field, message and the hint it carries (the
    suggestion after its last `; `, when there is one)."""
    message = str(getattr(err, "message", None) or err)
    head, sep, tail = message.rpartition("; ")
    hint = tail if sep and tail.lower().startswith(_HINT_STARTS) else None
    return {"file": getattr(err, "file", None), "line": getattr(err, "line", None),
            "field": getattr(err, "field", None), "message": head if hint else message,
            "hint": hint}


def problems_of(exc: Exception) -> list[dict[str, Any]]:
    return [diagnostic(e) for e in (getattr(exc, "errors", None) or [exc])]


def load_or_report(path: str, config: dict[str, Any] | None = None, *,
                   as_json: bool = False) -> Workflow | None:
    """The workflow, or None after printing every problem to stderr (with `as_json`, as
    one JSON object on stdout: `{"status": "invalid", "error", "problems": [...]}`).
    `config`: the command line's changes to its config (`--model`), which the load
    checks see."""
    from agentloom.errors import WorkflowError
    from agentloom.workflow import load_workflow

    existing_file(path)
    try:
        return load_workflow(path, config=config)
    except WorkflowError as exc:
        problems = problems_of(exc)
        n = len(problems)
        total = f"{n} problem{'s' if n != 1 else ''} found in {path}"
        if as_json:
            print_json({"status": "invalid", "error": total, "problems": problems})
            return None
        for err in getattr(exc, "errors", None) or [exc]:
            sys.stderr.write(f"{err}\n")
        if getattr(exc, "errors", None):
            sys.stderr.write(total + "\n")
    return None


def print_json(data: Any) -> None:
    import json

    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def print_error_json(message: str, hint: str | None = None) -> None:
    """What `--json` prints on stdout when a command can't do its work (a run that can't
    start, a refused resume, a run not in the store): a script reads `status`."""
    print_json({"status": "error", "error": message, "hint": hint})


def check_provider(name: str | None, wf: Workflow | None = None) -> None:
    """`--provider NAME` must be one a run can use: a usage error with a did-you-mean
    otherwise, before anything starts."""
    if name is None:
        return
    from difflib import get_close_matches

    from agentloom.routing.runtime import DEFAULT_MODELS

    known = {*DEFAULT_MODELS, "google", "generic_openai", "mock"}
    if wf is not None:
        known |= set(wf.definition.providers)
    if name in known:
        return
    close = get_close_matches(name, sorted(known), n=1)
    guess = f"; did you mean {close[0]!r}?" if close else ""
    raise UsageError(f"--provider {name!r}: unknown provider{guess} "
                     f"(known: {', '.join(sorted(known))})")


def parse_state(pairs: list[str], state_file: str | None) -> dict[str, Any]:
    """`--state-file` first, then each `--state k=v` (values typed as YAML scalars)."""
    from agentloom.errors import WorkflowError
    from agentloom.workflow.lang.paths import PathError, assign, parse_path
    from agentloom.workflow.load.yaml_source import load_yaml, read_source

    state: dict[str, Any] = {}
    if state_file:
        path = existing_file(state_file, "state file")
        try:  # the workflow file's bounds: size, encoding, alias expansion, depth
            loaded, _ = load_yaml(read_source(path, "state file"), state_file)
        except WorkflowError as exc:
            raise UsageError(f"--state-file {' '.join(str(exc).splitlines()[0].split())}"
                             ) from None
        if loaded is not None and not isinstance(loaded, dict):
            raise UsageError(f"--state-file {state_file}: expected a mapping of keys to values")
        state.update(loaded or {})
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--state {_shown(pair)}: expected KEY=VALUE")
        try:
            value = load_yaml(raw, "--state")[0] if raw.strip() else ""
        except WorkflowError as exc:
            if not exc.message.startswith("invalid YAML"):
                raise UsageError(f"--state {key}: {exc.message}") from None
            value = raw
        if isinstance(value, dict | list) and not raw.lstrip().startswith(("{", "[")):
            value = raw  # `a: b` or `- x` typed on a command line mean the text
        try:
            assign(state, parse_path(key.strip().removeprefix("state.")), value)
        except PathError as exc:
            raise UsageError(f"--state {_shown(pair)}: {exc}") from None
    return state


def _shown(text: str, limit: int = 60) -> str:
    """`text` quoted for a one-line error, cut short if long (a usage error is one line)."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}..."


def add_limit_flags(parser: Any) -> None:
    """`--budget`, `--max-tokens-per-run`, `--rpm`, `--tpm`, `--prices`: the run's spending
    and pacing limits (each wins over the workflow's `config`)."""
    parser.add_argument("--budget", metavar="USD",
                        help="stop the run before its model calls could cost more (budget_usd)")
    parser.add_argument("--max-tokens-per-run", metavar="N",
                        help="stop the run before its model calls could use more tokens")
    parser.add_argument("--rpm", action="append", default=[], metavar="PROVIDER=N",
                        help="requests per minute to a provider; repeatable")
    parser.add_argument("--tpm", action="append", default=[], metavar="PROVIDER=N",
                        help="tokens per minute to a provider; repeatable")
    parser.add_argument("--prices", metavar="FILE",
                        help="a JSON/YAML price file (USD per 1M tokens) over the packaged one")


def limit_overrides(args: Any, config: Any) -> dict[str, Any]:
    """The `config` changes the limit flags ask for; a bad value is a UsageError. With
    `config` None, only the checks (`resume` makes them before it reads the store)."""
    out: dict[str, Any] = {}
    budget = getattr(args, "budget", None)
    if budget is not None:
        out["budget_usd"] = usd(budget, "--budget")
    tokens = getattr(args, "max_tokens_per_run", None)
    if tokens is not None:
        # ASCII digits only: '²' is a digit to str.isdigit(), and no number to int().
        if not (tokens.isascii() and tokens.isdigit() and len(tokens) <= 16
                and 1 <= int(tokens) <= MAX_TOKENS_FLAG):
            raise UsageError(f"--max-tokens-per-run {_shown(tokens)}: expected a whole "
                             f"number >= 1 (at most {MAX_TOKENS_FLAG})")
        out["max_tokens_per_run"] = int(tokens)
    limits = {p: dict(v) for p, v in (getattr(config, "rate_limits", None) or {}).items()}
    for flag, key in (("rpm", "rpm"), ("tpm", "tpm")):
        for pair in getattr(args, flag, None) or ():
            provider, sep, raw = pair.partition("=")
            try:
                value = float(raw)
            except ValueError:
                value = -1.0
            # At least one a minute, as `RateLimit` takes it (a bucket holding less than one
            # request never lets a call through).
            if not sep or not provider.strip() or not 1 <= value < float("inf"):
                raise UsageError(f"--{flag} {_shown(pair)}: expected PROVIDER=N with N >= 1 "
                                 f"per minute, e.g. --{flag} openai=500")
            limits.setdefault(provider.strip(), {})[key] = value
    if getattr(args, "rpm", None) or getattr(args, "tpm", None):
        out["rate_limits"] = limits
    prices = getattr(args, "prices", None)
    if prices is not None:
        from agentloom.errors import ConfigError
        from agentloom.pricing import PriceTable

        path = existing_file(prices, "price file")
        try:
            PriceTable.from_file(path)
        except ConfigError as exc:
            raise UsageError(f"--prices: {' '.join(str(exc).split())}") from None
        out["prices"] = str(path.resolve())
    return out
