"""The argument parser: the whole command line, or only one command's part.

Each command's module is named in `_COMMAND_MODULES` and loaded when its parser is built,
so `agentloom --help` and a parser for one command import only what they use.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from typing import Any

from agentloom.cli._exit import _Parser
from agentloom.cli._style import COLOR_CHOICES

_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Workflows", ("run", "validate", "visualize", "schema")),
    ("Durable runs", ("resume", "runs", "replay", "ui")),
    ("Many runs", ("batch",)),
    ("Setup", ("info",)),
    ("The public AgentLoom's commands", ("history", "callback-server")),
)

_EXAMPLES: dict[str | None, tuple[str, ...]] = {
    None: ("agentloom run examples/hello.yaml          # no key: the embedded model",
           "agentloom run flow.yaml --json             # only the result, as JSON",
           "agentloom validate flow.yaml               # every problem, with file:line",
           "agentloom runs                             # the runs in .agentloom/runs.db",
           "agentloom run --help                       # one command's flags"),
    "run": ("agentloom run examples/hello.yaml --state name=Ada",
            "agentloom run flow.yaml --model gpt-4o-mini --stream",
            "agentloom run flow.yaml --provider local     # on the embedded model",
            "agentloom run flow.yaml --json --budget 0.50 > result.json",
            "agentloom run flow.yaml --record rec.json    # then: agentloom replay rec.json "
            "flow.yaml"),
    "validate": ("agentloom validate flow.yaml",
                 "agentloom validate flow.yaml --json          # diagnostics as data",
                 "agentloom validate flow.yaml --tools my_tools.py"),
    "resume": ("agentloom resume RUN_ID                      # after a crash or Ctrl-C",
               "agentloom resume RUN_ID --approve            # an approval_gate",
               "agentloom resume RUN_ID --answer production  # an ask step"),
    "runs": ("agentloom runs --status paused",
             "agentloom runs show RUN_ID --json",
             "agentloom runs --prune --older-than 7d"),
    "replay": ("agentloom replay rec.json flow.yaml",
               "agentloom replay rec.json flow.yaml --replay-mode lenient"),
    "batch": ("agentloom batch flow.yaml inputs.jsonl -c 8",
              "agentloom batch flow.yaml inputs.jsonl --resume"),
    "visualize": ("agentloom visualize flow.yaml --format mermaid",),
    "info": ("agentloom info --json",),
}


def _epilog(command: str | None) -> str | None:
    lines = _EXAMPLES.get(command)
    if not lines:
        return None
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with `only`, just that command's part (each command's
    arguments cost imports and argparse work that a run of another command never uses)."""
    parser = _Parser(prog="agentloom",
                     usage="agentloom [--version] [--color WHEN] COMMAND [ARGS]",
                     description="Run LLM work reliably: YAML workflows and agents.",
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument("--color", metavar="WHEN", choices=COLOR_CHOICES,
                        help="auto (a terminal, unless NO_COLOR is set and not empty), "
                             "always or never; accepted anywhere on the line")
    sub = _Commands(parser.add_subparsers(dest="command", metavar="COMMAND",
                                          parser_class=_Parser, prog="agentloom"))
    if only is None or only == "run":
        _add_run(sub)
    if only is None or only == "validate":
        validate = sub.add_parser("validate", help="check a workflow file and show its plan")
        validate.add_argument("file", metavar="FILE")
        validate.add_argument("--tools", action="append", default=[], metavar="FILE.py",
                              help="the @tool files `run --tools` would get; repeatable")
        validate.add_argument("--json", action="store_true",
                              help="print the result as JSON on stdout: valid, problems "
                                   "(file, line, field, message, hint), warnings, plan")
    if only is None or only == "schema":
        sub.add_parser("schema", help="print the JSON Schema of the workflow format")
    for command, module_name in _COMMAND_MODULES.items():
        if only is None or only == command:
            command_module(module_name).add_parser(sub)
    for name, command_parser in sub.action.choices.items():
        epilog = _epilog(name)
        if epilog is not None:
            command_parser.epilog = epilog
            command_parser.formatter_class = argparse.RawDescriptionHelpFormatter
    if only is None:
        _group_commands(parser, sub)
    return parser


class _Commands:
    """The subparsers action, keeping each command's help line for the grouped list."""

    def __init__(self, action: Any) -> None:
        self.action = action
        self.helps: dict[str, str] = {}

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        self.helps[name] = str(kwargs.get("help") or "")
        parser: argparse.ArgumentParser = self.action.add_parser(name, **kwargs)
        return parser


def _group_commands(parser: argparse.ArgumentParser, sub: _Commands) -> None:
    """The commands by what they are for, instead of argparse's one flat list."""
    helps = sub.helps
    width = max(map(len, helps)) + 2
    lines: list[str] = []
    for title, names in _GROUPS:
        present = [n for n in names if n in helps]
        if present:
            lines.append(f"{title}:")
            lines.extend(f"  {n.ljust(width)}{helps[n]}" for n in present)
            lines.append("")
    parser.epilog = "\n".join(lines) + (_epilog(None) or "")
    sub.action.help = argparse.SUPPRESS


def _add_run(sub: _Commands) -> None:
    run = sub.add_parser("run", help="run a workflow file")
    run.add_argument("file", metavar="FILE")
    inputs = run.add_argument_group("inputs")
    inputs.add_argument("--state", "-s", action="append", default=[], metavar="KEY=VALUE",
                        help="set a state value (typed as YAML; dotted keys nest); repeatable")
    inputs.add_argument("--state-file", metavar="FILE", help="a YAML or JSON mapping of state")
    inputs.add_argument("--tools", action="append", default=[], metavar="FILE.py",
                        help="register the @tool functions of a Python file; repeatable")
    models = run.add_argument_group("models")
    models.add_argument("--model", "-m", help="the model of steps that name none (config.model)")
    models.add_argument("--provider", "-p",
                        help="the provider of steps that name none; `local` is the embedded "
                             "model")
    models.add_argument("--mock-responses", metavar="FILE",
                        help="answer every model call from this mock responses file (the "
                             "public AgentLoom's format); an unmatched call fails its step")
    output = run.add_argument_group("output")
    output.add_argument("--json", action="store_true",
                        help="print only the run result as JSON on stdout")
    output.add_argument("--stream", action="store_true",
                        help="print text as it arrives, one step at a time")
    from agentloom.cli._common import add_limit_flags

    limits = run.add_argument_group("limits")
    limits.add_argument("--timeout", type=float, metavar="SECONDS",
                        help="a deadline for the whole run (config.timeout)")
    add_limit_flags(limits)
    from agentloom.cli._durable import add_run_flags

    add_run_flags(run.add_argument_group("checkpoints, recording and replay"))
    from agentloom.cli._observe import add_trace_flags

    add_trace_flags(run.add_argument_group("traces"))


_COMMAND_MODULES: dict[str, str] = {"batch": "agentloom.cli.batch",
                                    "resume": "agentloom.cli.resume",
                                    "runs": "agentloom.cli.runs",
                                    "replay": "agentloom.cli.replay",
                                    "visualize": "agentloom.cli.visualize",
                                    "info": "agentloom.cli.info",
                                    "history": "agentloom.cli.history",
                                    "callback-server": "agentloom.cli.callback_server",
                                    "ui": "agentloom.cli.ui"}
"""Commands that live in their own module with `add_parser(subparsers)` and `run(args)`.
Their modules import only what building the parser needs; the rest loads in `run`."""


_COMMANDS = frozenset({"run", "validate", "schema", *_COMMAND_MODULES})


def command_of(argv: Sequence[str]) -> str | None:
    """The command named on the line, when it is a known one. Before it there can only be
    the top-level flags (`--version`, `-h`), none of which takes a value; anything else
    (no command, a misspelt one) gets the whole parser, for its usage and choices."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in _COMMANDS else None
    return None


def command_module(name: str) -> Any:
    return importlib.import_module(name)
