"""Pieces the commands share: reading the workflow file and the `--state` values."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentloom.cli._exit import UsageError

if TYPE_CHECKING:
    from agentloom.workflow import Workflow


def existing_file(path: str, what: str = "workflow file") -> Path:
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{what} not found: {path}")
    return p


def load_or_report(path: str, config: dict[str, Any] | None = None) -> Workflow | None:
    """The workflow, or None after printing every problem to stderr. `config`: the
    command line's changes to its config (`--model`), which the load checks see."""
    from agentloom.errors import WorkflowError
    from agentloom.workflow import WorkflowProblems, load_workflow

    existing_file(path)
    try:
        return load_workflow(path, config=config)
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
            raise UsageError(f"--state {pair!r}: expected KEY=VALUE")
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
            raise UsageError(f"--state {pair!r}: {exc}") from None
    return state


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
    """The `config` changes the limit flags ask for; a bad value is a UsageError."""
    from decimal import Decimal, InvalidOperation

    out: dict[str, Any] = {}
    budget = getattr(args, "budget", None)
    if budget is not None:
        try:
            amount = Decimal(budget)
        except InvalidOperation:
            amount = Decimal("NaN")
        if not amount.is_finite() or amount < 0:
            raise UsageError(f"--budget {budget!r}: expected a number of USD >= 0, e.g. 0.50")
        out["budget_usd"] = float(amount)
    tokens = getattr(args, "max_tokens_per_run", None)
    if tokens is not None:
        if not tokens.isdigit() or int(tokens) < 1:
            raise UsageError(f"--max-tokens-per-run {tokens!r}: expected a whole number >= 1")
        out["max_tokens_per_run"] = int(tokens)
    limits = {p: dict(v) for p, v in (config.rate_limits or {}).items()}
    for flag, key in (("rpm", "rpm"), ("tpm", "tpm")):
        for pair in getattr(args, flag, None) or ():
            provider, sep, raw = pair.partition("=")
            try:
                value = float(raw)
            except ValueError:
                value = -1.0
            if not sep or not provider.strip() or not 0 < value < float("inf"):
                raise UsageError(f"--{flag} {pair!r}: expected PROVIDER=N with N > 0, "
                                 f"e.g. --{flag} openai=500")
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
