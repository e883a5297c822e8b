"""`agentloom replay FILE WORKFLOW`: run a workflow with every model call served from a
recording made by `agentloom run --record FILE`; nothing goes to the network.

It is `agentloom run WORKFLOW --replay FILE --no-checkpoint` with the same provider
wiring: strict by default (a call that matches no record fails with the step, the turn and
a diff against the nearest record); `--replay-mode lenient` matches the request alone.
"""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("replay", help="re-run a workflow from a recording, offline")
    p.add_argument("recording", metavar="FILE", help="a recording from run --record")
    p.add_argument("workflow", metavar="WORKFLOW", help="the workflow file it recorded")
    p.add_argument("--replay-mode", choices=("strict", "lenient"), default="strict")
    p.add_argument("--state", "-s", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--state-file", metavar="FILE")
    p.add_argument("--tools", action="append", default=[], metavar="FILE.py")
    p.add_argument("--json", action="store_true")
    p.add_argument("--stream", action="store_true")
    from agentloom.cli._observe import add_trace_flags

    add_trace_flags(p)


def run(args: argparse.Namespace) -> int:
    from agentloom.cli._parser import build_parser
    from agentloom.cli.run import command_run

    argv = ["run", args.workflow, "--replay", args.recording, "--replay-mode",
            args.replay_mode, "--no-checkpoint"]
    for pair in args.state:
        argv += ["--state", pair]
    if args.state_file:
        argv += ["--state-file", args.state_file]
    for path in args.tools:
        argv += ["--tools", path]
    if args.json:
        argv.append("--json")
    if args.stream:
        argv.append("--stream")
    if args.trace:
        argv += ["--trace", args.trace]
    if args.trace_content:
        argv.append("--trace-content")
    if args.otel:
        argv.append("--otel")
    return command_run(build_parser().parse_args(argv))
