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


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with `only`, just that command's part (each command's
    arguments cost imports and argparse work that a run of another command never uses)."""
    parser = _Parser(prog="agentloom",
                     description="Run LLM work reliably: YAML workflows and agents.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    if only is None or only == "run":
        _add_run(sub)
    if only is None or only == "validate":
        validate = sub.add_parser("validate", help="check a workflow file and show its plan")
        validate.add_argument("file", metavar="FILE")
        validate.add_argument("--tools", action="append", default=[], metavar="FILE.py",
                              help="the @tool files `run --tools` would get; repeatable")
    if only is None or only == "schema":
        sub.add_parser("schema", help="print the JSON Schema of the workflow format")
    for command, module_name in _COMMAND_MODULES.items():
        if only is None or only == command:
            command_module(module_name).add_parser(sub)
    return parser


def _add_run(sub: Any) -> None:
    run = sub.add_parser("run", help="run a workflow file")
    run.add_argument("file", metavar="FILE")
    run.add_argument("--state", "-s", action="append", default=[], metavar="KEY=VALUE",
                     help="set a state value (typed as YAML; dotted keys nest); repeatable")
    run.add_argument("--state-file", metavar="FILE", help="a YAML or JSON mapping of state")
    run.add_argument("--model", "-m", help="the model of steps that name none (config.model)")
    run.add_argument("--provider", "-p", help="the provider of steps that name none")
    run.add_argument("--json", action="store_true",
                     help="print only the run result as JSON on stdout")
    run.add_argument("--stream", action="store_true", help="print text as it arrives")
    run.add_argument("--tools", action="append", default=[], metavar="FILE.py",
                     help="register the @tool functions of a Python file; repeatable")
    run.add_argument("--timeout", type=float, metavar="SECONDS",
                     help="a deadline for the whole run (config.timeout)")
    run.add_argument("--mock-responses", metavar="FILE",
                     help="answer every model call from this mock responses file (the "
                          "public AgentLoom's format); an unmatched call fails its step")
    from agentloom.cli._common import add_limit_flags

    add_limit_flags(run)
    from agentloom.cli._durable import add_run_flags

    add_run_flags(run)
    from agentloom.cli._observe import add_trace_flags

    add_trace_flags(run)


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
