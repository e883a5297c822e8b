"""`agentloom validate FILE`: every problem of the file at once, or its plan."""

from __future__ import annotations

import argparse
import sys

from agentloom.cli._common import load_or_report
from agentloom.cli._exit import EXIT_FAILED, EXIT_OK


def command_validate(args: argparse.Namespace) -> int:
    wf = load_or_report(args.file)
    if wf is None:
        return EXIT_FAILED
    nodes = wf.nodes
    for warning in wf.warnings:
        sys.stderr.write(warning + "\n")
    config = wf.config
    print(f"{args.file}: valid workflow {wf.name!r}, {len(nodes)} "
          f"step{'s' if len(nodes) != 1 else ''}")
    print(f"model: {config.model or '(runtime default)'}; provider: "
          f"{config.provider or '(runtime default)'}; at most {config.max_concurrent_steps} "
          "steps at once")
    print("plan (a step starts as soon as its own dependencies finish):")
    for depth, layer in enumerate(wf.layers(), 1):
        parts = []
        for step_id in layer:
            node = nodes[step_id]
            deps = f" after {', '.join(node.deps)}" if node.deps else ""
            parts.append(f"{step_id} ({node.type}{deps})")
        print(f"  {depth}. " + "; ".join(parts))
    return EXIT_OK
