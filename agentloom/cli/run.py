"""`agentloom run FILE`: run a workflow on the runtime built from the environment.

With `--json`, stdout carries only the result as JSON; anything else goes to stderr.
Without it, stdout gets the final outputs and a one-line summary (`_report`), and a
terminal gets a progress line on stderr while the run works (`_progress`). `--stream`
prints text as it arrives, one step at a time (`_stream`). A step naming a hosted model
whose provider has no key stops the run before any call (`_keys`). `--trace FILE` and
`--otel` report the run elsewhere (a JSONL file, OpenTelemetry spans), never on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import TYPE_CHECKING, Any

from agentloom.cli._common import (
    check_provider,
    check_seconds,
    existing_file,
    limit_overrides,
    load_or_report,
    parse_state,
    print_error_json,
    print_json,
)
from agentloom.cli._exit import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PAUSED,
    RunRefused,
)
from agentloom.cli._gc import loading, start_running
from agentloom.cli._report import print_human

if TYPE_CHECKING:

    from agentloom.recording import Recording
    from agentloom.redact import Redactor
    from agentloom.workflow import RunResult, Workflow
    from agentloom.workflow.durable.run import DurableRun


class _Session:
    """What one `agentloom run` sets up around the workflow, passed explicitly (the
    parsed arguments stay what the command line said)."""

    # A plain class: a generated dataclass costs its `exec`s on every start of the CLI.
    __slots__ = ("durable", "observers", "recording", "redactor", "resumed")

    def __init__(self, *, redactor: Redactor, resumed: DurableRun | None = None) -> None:
        self.redactor = redactor
        self.observers: Any = None
        """The run's RunObservers (trace file, OTel), or None."""
        self.recording: Recording | None = None
        """The loaded `--replay` file."""
        self.resumed = resumed
        """The durable run `agentloom resume` prepared."""
        self.durable: DurableRun | None = None


@loading
def command_run(args: argparse.Namespace, *, resumed: DurableRun | None = None) -> int:
    """Run `args.file`; `resumed` is the durable run `agentloom resume` continues."""
    check_seconds(args.timeout)
    state = parse_state(args.state, args.state_file)
    for path in args.tools:
        existing_file(path, "tools file")
    wf = load_or_report(args.file, {"model": args.model, "provider": args.provider},
                        as_json=args.json)
    if wf is None:
        return EXIT_FAILED
    check_provider(args.provider, wf)
    wf = wf.with_overrides(model=args.model, provider=args.provider, timeout=args.timeout,
                           stream=True if args.stream else None,
                           **limit_overrides(args, wf.config))
    from agentloom.cli._durable import check_recording, report_pause, report_retry
    from agentloom.errors import AgentLoomError
    from agentloom.workflow.engine.secrets import workflow_redactor

    session = _Session(redactor=workflow_redactor(wf, state, os.environ), resumed=resumed)
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
    except RunRefused as exc:
        return _refused(args, exc.message, exc.hint)
    except AgentLoomError as exc:
        return _refused(args, str(exc), None)
    except KeyboardInterrupt:
        _report_interrupt(args, session)
        return EXIT_INTERRUPTED
    finally:
        observers.close()
    if args.json:
        # Secrets of state_schema (and API keys) never reach --json output.
        print_json(session.redactor.redact_state(result.to_dict()))
    else:
        print_human(result, streamed=args.stream, redact=session.redactor.redact_text)
    if result.status.value in ("paused", "needs_decision"):
        report_pause(result, args, session.durable, session.redactor.redact_text)
        return EXIT_PAUSED
    if session.durable is not None:
        report_retry(result, args)
    return EXIT_OK if result.ok else EXIT_FAILED


def _refused(args: argparse.Namespace, message: str, hint: str | None) -> int:
    """A run that could not start or went wrong outside its steps: `error:` (and `hint:`)
    on stderr, and with --json the same as a JSON object on stdout."""
    from agentloom.cli._style import error_line, hint_line

    if args.json:
        print_error_json(message, hint)
    sys.stderr.write(error_line(sys.stderr, message))
    if hint:
        sys.stderr.write(hint_line(sys.stderr, hint))
    return EXIT_FAILED


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
    from agentloom.cli._keys import check_keys
    from agentloom.cli._progress import progress_for
    from agentloom.cli._stream import StreamPrinter
    from agentloom.workflow import arun_workflow
    from agentloom.workflow.engine.mock_clients import uses_mock

    runtime = build_runtime(args, session.redactor, recording=session.recording)
    durable = None
    resumed = session.resumed
    printer = None
    try:
        wf.add_providers_to(runtime)  # a refused entry: file:line, as at load
        served = session.recording is not None or getattr(args, "mock_responses", None)
        if not served and not uses_mock(wf):
            check_keys(wf, runtime)  # before the store records a run that can't start
        session.durable = durable = await open_durable(args, wf, state, session.redactor,
                                                       resumed=session.resumed)
        tools = _registry(args.tools, runtime, wf)
        on_event = None
        if args.stream and not args.json:
            on_event = printer = StreamPrinter(sys.stdout, session.redactor)
        clients: Any = runtime
        from agentloom.workflow.engine.mock_clients import mock_clients

        mock_file = getattr(args, "mock_responses", None)
        if mock_file is not None or uses_mock(wf):
            clients = mock_clients(wf, inner=None if mock_file else runtime,
                                   responses_file=mock_file)
        progress = progress_for(args)
        observers = session.observers
        if progress is not None:
            from agentloom.workflow.engine.observe import RunObservers

            observers = RunObservers(*(observers.observers if observers else ()), progress,
                                     redactor=observers.redactor if observers else None)
            progress.start()
        try:
            return await arun_workflow(wf, clients=clients, state=state, tools=tools,
                                       on_event=on_event, transport=_transport(wf, runtime),
                                       durable=durable, observers=observers)
        finally:
            if progress is not None:
                await progress.stop()
    except asyncio.CancelledError:  # Ctrl-C: asyncio.run cancels this task
        if durable is not None and (resumed is None or resumed.began):
            # Not `running` forever in `agentloom runs`: it stopped, and it can go on.
            await durable.store.set_status(durable.run_id, "interrupted")
        raise
    finally:
        if printer is not None:
            printer.close()
        await runtime.aclose()
        if resumed is not None and not resumed.began:
            await resumed.give_back()  # refused before its first step: the claim goes too
        elif durable is not None:
            await durable.store.close()


def _transport(wf: Workflow, runtime: Any) -> Any:
    # Attachments download and approval gates notify through the engine, in nested
    # scopes (map bodies, subworkflows) too, so the transport is always handed over.
    return runtime.transport


# Step types that can name no tool of their own and run no other file's steps.
_TOOLLESS_STEPS = frozenset({"llm_call", "router", "approval_gate", "ask"})


def _registry(paths: list[str], runtime: Any, wf: Workflow) -> Any:
    # Built-ins (http_request on the runtime's transport), each --tools file, and the
    # installed `agentloom.tools` entry points: importing those is the CLI's job only.
    # A file that can ask for no tool gets none: scanning the installed packages for
    # entry points costs more start-up than the rest of a one-step run's tool set-up.
    from agentloom.workflow.steps.tooling import base_registry, needs_tooling

    if (not paths and not needs_tooling(wf)
            and all(node.type in _TOOLLESS_STEPS for node in wf.nodes.values())):
        return None
    return base_registry(transport=runtime.transport, tool_modules=paths, entry_points=True)
