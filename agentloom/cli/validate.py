"""`agentloom validate FILE`: every problem of the file at once, or its plan."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from agentloom.cli._common import (
    diagnostic,
    existing_file,
    load_or_report,
    print_json,
    problems_of,
)
from agentloom.cli._exit import EXIT_FAILED, EXIT_OK


def command_validate(args: argparse.Namespace) -> int:
    as_json = bool(getattr(args, "json", False))
    for path in getattr(args, "tools", None) or []:
        existing_file(path, "tools file")
    if as_json:
        return _validate_json(args)
    wf = load_or_report(args.file)
    if wf is None:
        return EXIT_FAILED
    problems = _problems(wf, getattr(args, "tools", None) or [])
    if problems is not None:
        for err in problems:
            sys.stderr.write(f"{err}\n")
        if len(problems) > 1 or getattr(problems[0], "file", None):
            n = len(problems)
            sys.stderr.write(f"{n} problem{'s' if n != 1 else ''} found in {wf.file}\n")
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


def _validate_json(args: argparse.Namespace) -> int:
    """One JSON object on stdout: `valid`, every problem as data (file, line, field,
    message, hint), warnings, and for a valid file its steps and plan."""
    from agentloom.errors import WorkflowError
    from agentloom.workflow import load_workflow

    existing_file(args.file)
    out: dict[str, Any] = {"file": args.file, "valid": False, "problems": [], "warnings": []}
    try:
        wf = load_workflow(args.file)
    except WorkflowError as exc:
        out["problems"] = problems_of(exc)
        print_json(out)
        return EXIT_FAILED
    problems = _problems(wf, getattr(args, "tools", None) or [])
    out["warnings"] = list(wf.warnings)
    if problems is not None:
        out["problems"] = [diagnostic(e) for e in problems]
        print_json(out)
        return EXIT_FAILED
    nodes = wf.nodes
    out.update(valid=True, workflow=wf.name, model=wf.config.model,
               provider=wf.config.provider,
               steps=[{"id": i, "type": n.type, "depends_on": list(n.deps)}
                      for i, n in nodes.items()],
               plan=[list(layer) for layer in wf.layers()])
    print_json(out)
    return EXIT_OK


def _problems(wf: Any, tool_files: list[str]) -> list[Any] | None:
    """What `run` would refuse of a loaded file before its first step: a `providers:`
    entry without the base_url only a run's runtime could supply (`agentloom run`'s
    can't), and tool names that resolve to no tool; None when there is nothing."""
    problems = [*wf.provider_problems(), *(_tool_problems(wf, tool_files) or [])]
    return problems or None


def _tool_problems(wf: Any, tool_files: list[str]) -> list[Any] | None:
    """The tool names steps declare, checked as `run` checks them (built-ins, `--tools`
    files, installed entry points, the file's own functions): the same problems either
    way, or None when they all resolve. Tools of MCP servers are known only once they run,
    so their names are not checked."""
    if not wf.tool_refs:
        return None
    import dataclasses

    from agentloom.errors import AgentLoomError
    from agentloom.tools import BaseTool
    from agentloom.workflow import WorkflowProblems
    from agentloom.workflow.steps.tooling import base_registry, check_tool_refs

    try:
        registry = base_registry(tool_modules=tool_files, entry_points=True)
        servers = list(wf.definition.mcp_servers)
        for name in [*wf.functions, *servers]:
            if name not in registry:
                stand_in = BaseTool()
                stand_in.name = name
                registry.register(stand_in, name=name)
        if servers:
            wf = dataclasses.replace(wf, tool_refs=[
                r for r in wf.tool_refs if r.name.split(".", 1)[0] not in servers])
        check_tool_refs(wf, registry)
    except WorkflowProblems as exc:
        return list(exc.errors)
    except AgentLoomError as exc:
        return [exc]
    return None
