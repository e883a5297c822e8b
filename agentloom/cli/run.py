"""`agentloom run FILE`: run a workflow on the runtime built from the environment.

With `--json`, stdout carries only the result as JSON; anything else goes to stderr.
Without it, stdout gets the final outputs and a one-line summary. `--stream` prints text
as it arrives (parallel steps interleave). `--trace FILE` and `--otel` report the run
elsewhere (a JSONL file, OpenTelemetry spans), never on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentloom.cli._common import (
    existing_file,
    limit_overrides,
    load_or_report,
    parse_state,
)
from agentloom.cli._exit import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_PAUSED, UsageError
from agentloom.cli._gc import loading, start_running

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentloom.messages import StreamEvent
    from agentloom.recording import Recording
    from agentloom.redact import Redactor
    from agentloom.workflow import RunResult, Workflow
    from agentloom.workflow.durable.run import DurableRun


@dataclass(slots=True, kw_only=True)
class _Session:
    """What one `agentloom run` sets up around the workflow, passed explicitly (the
    parsed arguments stay what the command line said)."""

    redactor: Redactor
    observers: Any = None
    """The run's RunObservers (trace file, OTel), or None."""
    recording: Recording | None = None
    """The loaded `--replay` file."""
    resumed: DurableRun | None = None
    """The durable run `agentloom resume` prepared."""
    durable: DurableRun | None = None


@loading
def command_run(args: argparse.Namespace, *, resumed: DurableRun | None = None) -> int:
    """Run `args.file`; `resumed` is the durable run `agentloom resume` continues."""
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    state = parse_state(args.state, args.state_file)
    for path in args.tools:
        existing_file(path, "tools file")
    wf = load_or_report(args.file, {"model": args.model, "provider": args.provider})
    if wf is None:
        return EXIT_FAILED
    wf = wf.with_overrides(model=args.model, provider=args.provider, timeout=args.timeout,
                           stream=True if args.stream else None,
                           **limit_overrides(args, wf.config))
    from agentloom.cli._durable import check_recording, redactor_for, report_pause
    from agentloom.errors import AgentLoomError

    session = _Session(redactor=redactor_for(wf, state), resumed=resumed)
    if wf.config.capture_prompts and (getattr(args, "trace", None) or getattr(args, "otel", False)):
        args.trace_content = True  # their `capture_prompts`: content in traces and spans
    from agentloom.cli._observe import open_observers

    # Traces and spans: a file or exporter that can't be set up stops the run before it
    # starts; what they buffered is flushed after it, whatever its outcome.
    observers = open_observers(args, session.redactor, os.environ)
    session.observers = observers.run
    try:
        session.recording = check_recording(args)
        # Every run sends its calls through aiohttp: load it while the collector is still
        # paused, as the rest of the load path was.
        from agentloom.http import AiohttpTransport  # noqa: F401

        start_running()
        result = asyncio.run(_run(wf, state, args, session))
    except AgentLoomError as exc:
        sys.stderr.write(f"agentloom: {exc}\n")
        return EXIT_FAILED
    except KeyboardInterrupt:
        _report_interrupt(args, session)
        return EXIT_INTERRUPTED
    finally:
        observers.close()
    if args.json:
        # Secrets of state_schema (and API keys) never reach --json output.
        data = session.redactor.redact_state(result.to_dict())
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
    else:
        _print_human(result, streamed=args.stream, redact=session.redactor.redact_text)
    if result.status.value in ("paused", "needs_decision"):
        report_pause(result, args, session.durable)
        return EXIT_PAUSED
    return EXIT_OK if result.ok else EXIT_FAILED


def _report_interrupt(args: argparse.Namespace, session: _Session) -> None:
    """Ctrl-C: say which run stopped and how to go on with it (on stderr)."""
    from agentloom.cli._durable import store_hint

    durable = session.durable
    if durable is None:
        sys.stderr.write("agentloom: interrupted (checkpoints were off: nothing to resume)\n")
        return
    sys.stderr.write(f"agentloom: interrupted; run {durable.run_id} is saved up to its last "
                     f"finished step\nresume with: agentloom resume {durable.run_id}"
                     f"{store_hint(args)}\n")


async def _run(wf: Workflow, state: dict[str, Any], args: argparse.Namespace,
               session: _Session) -> RunResult:
    from agentloom.cli._durable import build_runtime, open_durable
    from agentloom.workflow import arun_workflow

    runtime = build_runtime(args, session.redactor, recording=session.recording)
    durable = None
    try:
        session.durable = durable = await open_durable(args, wf, state, session.redactor,
                                                       resumed=session.resumed)
        runtime.add_providers({
            name: p.model_dump(exclude_none=True, exclude_defaults=True, by_alias=True)
            for name, p in wf.definition.providers.items()
        })
        tools = _registry(args.tools, runtime)
        served = session.recording is not None or getattr(args, "mock_responses", None)
        notice = None if served else _embedded_notice(wf, runtime)
        if notice is not None:
            sys.stderr.write(notice + "\n")
        on_event = None
        if args.stream and not args.json:
            on_event = _print_delta
        clients: Any = runtime
        from agentloom.workflow.engine.mock_clients import mock_clients, uses_mock

        mock_file = getattr(args, "mock_responses", None)
        if mock_file is not None or uses_mock(wf):
            clients = mock_clients(wf, inner=None if mock_file else runtime,
                                   responses_file=mock_file)
        return await arun_workflow(wf, clients=clients, state=state, tools=tools,
                                   on_event=on_event, transport=_transport(wf, runtime),
                                   durable=durable, observers=session.observers)
    except asyncio.CancelledError:  # Ctrl-C: asyncio.run cancels this task
        if durable is not None:
            # Not `running` forever in `agentloom runs`: it stopped, and it can go on.
            await durable.store.set_status(durable.run_id, "interrupted")
        raise
    finally:
        await runtime.aclose()
        if durable is not None:
            await durable.store.close()


def _embedded_notice(wf: Workflow, runtime: Any) -> str | None:
    """One line when the embedded model will answer steps that name another model because
    no provider is configured: a mistyped key must not pass for the model it was meant for."""
    from agentloom.routing.runtime import LOCAL_MODEL
    from agentloom.workflow.engine.mock_clients import uses_mock

    if not runtime.answers_locally_unasked or wf.config.provider is not None or uses_mock(wf):
        return None
    asked = sorted({model for node_id, model in wf.models.items()
                    if model and model != LOCAL_MODEL
                    and getattr(wf.nodes[node_id].step, "provider", None) is None})
    if not asked:
        return None
    return (f"agentloom: no provider is configured, so the embedded model {LOCAL_MODEL} "
            f"answers for {', '.join(asked)} (set OPENAI_API_KEY, ANTHROPIC_API_KEY, "
            "GEMINI_API_KEY or OLLAMA_HOST; --provider local says you meant it)")


def _transport(wf: Workflow, runtime: Any) -> Any:
    # Attachments download and approval gates notify through the engine, in nested
    # scopes (map bodies, subworkflows) too, so the transport is always handed over.
    return runtime.transport


def _registry(paths: list[str], runtime: Any) -> Any:
    # Built-ins (http_request on the runtime's transport), each --tools file, and the
    # installed `agentloom.tools` entry points: importing those is the CLI's job only.
    from agentloom.workflow.steps.tooling import base_registry

    return base_registry(transport=runtime.transport, tool_modules=paths, entry_points=True)


def _print_delta(step_id: str, event: StreamEvent) -> None:
    if event.kind == "text_delta":
        sys.stdout.write(event.text)
        sys.stdout.flush()


def _print_human(result: RunResult, *, streamed: bool, redact: Callable[[str], str]) -> None:
    from agentloom.workflow import StepStatus
    from agentloom.workflow.lang.templates import to_text

    out = sys.stdout
    if streamed:
        out.write("\n")
    else:
        outputs = result.final_outputs
        for key, value in outputs.items():
            if len(outputs) > 1:
                out.write(f"── {key}\n")
            out.write(to_text(value).rstrip() + "\n")
    told: set[str] = set()
    for r in result.steps.values():
        if r.status is StepStatus.FAILED:
            told.add(f"step {r.id!r} failed: {r.error}")
            sys.stderr.write(redact(f"step {r.id!r} failed: {r.error}\n"))
    counts: dict[str, int] = {}
    for r in result.steps.values():
        counts[r.status.value] = counts.get(r.status.value, 0) + 1
    steps = ", ".join(f"{n} {s}" for s, n in counts.items())
    tokens = result.tokens
    cost = result.cost_usd
    bits = [
        result.status.value,
        f"{len(result.steps)} step{'' if len(result.steps) == 1 else 's'} ({steps})",
        f"{tokens if tokens is not None else '?'} tokens",
        f"${cost:.6f}" if cost is not None else "cost unknown",
        f"{result.duration_seconds:.2f}s",
    ]
    out.write(" · ".join(bits) + "\n")
    if result.error and not result.ok and result.error not in told:  # said once, not twice
        sys.stderr.write(redact(f"run {result.status.value}: {result.error}\n"))
