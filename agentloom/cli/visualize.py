"""`agentloom visualize FILE [--format ascii|mermaid]`: the step graph, to read or paste.

Both formats come from the loaded workflow, so what is drawn is what runs: routers with
each condition on its branch (and the default), subworkflows and map bodies drawn
inside their step (children nested, for a file its path), `on_error` blocks beside the
step they guard. ASCII is for a terminal; Mermaid (`graph TD`) pastes into Markdown.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from agentloom.cli._exit import EXIT_FAILED, EXIT_OK

if TYPE_CHECKING:
    from agentloom.workflow import Workflow
    from agentloom.workflow.load.workflow import StepNode


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "visualize", help="draw a workflow's steps (ASCII or Mermaid)")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--format", "-f", choices=("ascii", "mermaid"), default="ascii")
    return p


def run(args: argparse.Namespace) -> int:
    from agentloom.cli._common import load_or_report

    wf = load_or_report(args.file)
    if wf is None:
        return EXIT_FAILED
    text = render_mermaid(wf) if args.format == "mermaid" else render_ascii(wf)
    sys.stdout.write(text)
    return EXIT_OK


# -- what each step holds ------------------------------------------------------------------


def _children(node: StepNode) -> list[tuple[str, Workflow]]:
    """(label, child workflow) of the blocks a step runs: subworkflow, map body, on_error."""
    out: list[tuple[str, Workflow]] = []
    prep = node.prepared
    if node.type == "subworkflow" and getattr(prep, "child", None) is not None:
        out.append((f"subworkflow {prep.child.name!r} ({prep.source})", prep.child))
    if node.type == "map" and getattr(prep, "body", None) is not None:
        step = node.step
        out.append((f"for each {getattr(step, 'as_', 'item')} in "
                    f"{getattr(step, 'over', '?')} (at most "
                    f"{getattr(step, 'concurrency', '?')} at once)", prep.body))
    if node.handler is not None:
        out.append(("on_error", node.handler))
    return out


def _branches(node: StepNode) -> list[tuple[str, str]]:
    """(condition text, target) of a router, the default last as ('else', target)."""
    prep = node.prepared
    if node.type != "router" or prep is None:
        return []
    out = [(expr.source, target) for expr, target in prep.conditions]
    if prep.default is not None:
        out.append(("else", prep.default))
    return out


# -- ASCII ---------------------------------------------------------------------------------


def render_ascii(wf: Workflow) -> str:
    lines = [f"workflow {wf.name!r}: {len(wf.nodes)} step{'s' if len(wf.nodes) != 1 else ''}"]
    _ascii_body(wf, lines, indent="")
    return "\n".join(lines) + "\n"


def _ascii_body(wf: Workflow, lines: list[str], indent: str) -> None:
    for depth, layer in enumerate(wf.layers(), 1):
        for step_id in layer:
            node = wf.nodes[step_id]
            after = f"  <- {', '.join(node.deps)}" if node.deps else ""
            out = f"  => {node.step.output}" if node.step.output else ""
            lines.append(f"{indent}[{depth}] {step_id} ({node.type}){after}{out}")
            for cond, target in _branches(node):
                label = "else" if cond == "else" else f"if {cond}"
                lines.append(f"{indent}      {label} -> {target}")
            for label, child in _children(node):
                lines.append(f"{indent}    +- {label}")
                _ascii_body(child, lines, indent + "    |  ")


# -- Mermaid -------------------------------------------------------------------------------


def render_mermaid(wf: Workflow) -> str:
    lines = ["graph TD"]
    _mermaid_body(wf, lines, prefix="", indent="  ")
    return "\n".join(lines) + "\n"


def _mid(prefix: str, step_id: str) -> str:
    # Mermaid ids allow letters, digits and _; step ids may hold '-'.
    return (prefix + step_id).replace("-", "_")


def _label(text: str) -> str:
    return text.replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")


def _mermaid_body(wf: Workflow, lines: list[str], prefix: str, indent: str) -> None:
    for node in wf.nodes.values():
        mid = _mid(prefix, node.id)
        shape = ('{"%s"}' if node.type == "router" else '["%s"]') % (
            f"{_label(node.id)}<br/>{node.type}")
        lines.append(f"{indent}{mid}{shape}")
        for n, (label, child) in enumerate(_children(node)):
            sub = f"{mid}__{n}"
            lines.append(f'{indent}subgraph {sub}["{_label(label)}"]')
            _mermaid_body(child, lines, prefix=f"{sub}__", indent=indent + "  ")
            lines.append(f"{indent}end")
            arrow = "-. on_error .->" if label == "on_error" else "-.->"
            lines.append(f"{indent}{mid} {arrow} {sub}")
    for node in wf.nodes.values():
        mid = _mid(prefix, node.id)
        branches = dict((t, c) for c, t in _branches(node))
        for dep_id in node.dependents:
            target = _mid(prefix, dep_id)
            if dep_id in branches:
                cond = branches[dep_id]
                arrow = "-. else .->" if cond == "else" else f'-- "{_label(cond)}" -->'
                lines.append(f"{indent}{mid} {arrow} {target}")
            else:
                lines.append(f"{indent}{mid} --> {target}")
