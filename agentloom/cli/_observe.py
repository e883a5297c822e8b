"""`agentloom run --trace FILE`, `--trace-content` and `--otel`: the run's observers.

`--trace FILE` writes the JSONL trace of every step's loop plus the run's start and end,
metadata only; `--trace-content` adds messages, tool arguments and results, redacted by
the run's Redactor (the same one checkpoints, recordings and `--json` use). Lines go to
the file from a writer thread, so the event loop never waits on the disk.

`--otel` exports spans through the OpenTelemetry SDK (the `otel` extra), configured from
the standard `OTEL_*` variables, read here and passed in: `OTEL_TRACES_EXPORTER`
(`console`, to stderr so `--json` keeps stdout clean; `otlp`; `none`), the
`OTEL_EXPORTER_OTLP_*` endpoint, headers and protocol, `OTEL_SERVICE_NAME` and
`OTEL_RESOURCE_ATTRIBUTES`. With an OTLP endpoint set, OTLP is the default exporter.
"""

from __future__ import annotations

import argparse
import queue
import sys
import threading
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import unquote

from agentloom._files import open_private
from agentloom.cli._exit import UsageError

if TYPE_CHECKING:
    from agentloom.redact import Redactor
    from agentloom.workflow.engine.observe import RunObservers


def add_trace_flags(parser: Any) -> None:
    parser.add_argument("--trace", metavar="FILE",
                        help="write a JSONL event trace of the run to FILE (metadata only, "
                             "secrets redacted)")
    parser.add_argument("--trace-content", action="store_true",
                        help="include messages, tool arguments and results in the trace "
                             "and spans, redacted by the run's redactor")
    parser.add_argument("--otel", action="store_true",
                        help="export OpenTelemetry spans (OTEL_* variables choose the "
                             "exporter; console goes to stderr); needs agentloom-engine[otel]")


class TraceFile:
    """A JSONL file written by a thread: `write(line)` never blocks on the disk."""

    def __init__(self, path: str) -> None:
        try:
            self._file: IO[str] = open_private(path)
        except OSError as exc:
            raise UsageError(f"--trace {path}: can't write it: {exc.strerror or exc}") from None
        self._queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._drain, name="agentloom-trace",
                                        daemon=True)
        self._thread.start()

    def write(self, line: str) -> None:
        self._queue.put(line)

    def _drain(self) -> None:
        while (line := self._queue.get()) is not None:
            self._file.write(line)
            if self._queue.empty():  # a reader tailing the file sees whole lines
                self._file.flush()
        self._file.close()

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join()


class CliObservers:
    """What `agentloom run` observes a run with, and what to close after it."""

    # A plain class: a generated dataclass costs its `exec`s on every start of the CLI.
    __slots__ = ("_closers", "run")

    def __init__(self) -> None:
        self.run: RunObservers | None = None
        self._closers: list[Any] = []

    def close_later(self, close: Any) -> None:
        """Call `close()` when these observers close (last added, first closed)."""
        self._closers.append(close)

    def close(self) -> None:
        for close in reversed(self._closers):
            close()
        self._closers.clear()


def open_observers(args: argparse.Namespace, redactor: Redactor,
                   env: Mapping[str, str]) -> CliObservers:
    """The trace file and OTel providers the flags ask for (none: `run` is None)."""
    trace, content, otel = (getattr(args, "trace", None), getattr(args, "trace_content", False),
                            getattr(args, "otel", False))
    if content and not (trace or otel):
        raise UsageError("--trace-content needs --trace FILE or --otel")
    out = CliObservers()
    if not trace and not otel:
        return out
    from agentloom.workflow.engine.observe import RunObservers, WorkflowTraceObserver

    observers: list[object] = []
    try:
        if otel:
            observers.append(_otel_observer(env, redactor, content, out))
        if trace:
            file = TraceFile(trace)
            out.close_later(file.close)
            observers.append(WorkflowTraceObserver(file.write, redactor=redactor,
                                                   capture_content=content))
    except BaseException:
        out.close()
        raise
    out.run = RunObservers(*observers, redactor=redactor)
    return out


# --- OpenTelemetry from the OTEL_* variables ----------------------------------------------


def _otel_observer(env: Mapping[str, str], redactor: Redactor, content: bool,
                   out: CliObservers) -> object:
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise UsageError("--otel needs the OpenTelemetry SDK: pip install "
                         "'agentloom-engine[otel]'") from None
    from agentloom.workflow.engine.observe import WorkflowOTelObserver

    resource = Resource.create(_resource_attributes(env))
    tracer_provider = TracerProvider(resource=resource)
    meter_provider = None
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() != "true":
        otlp = bool(_first(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                           "OTEL_EXPORTER_OTLP_ENDPOINT"))
        for name in _exporters(env, "OTEL_TRACES_EXPORTER", "otlp" if otlp else "console"):
            tracer_provider.add_span_processor(BatchSpanProcessor(_span_exporter(name, env)))
        metric_names = _exporters(env, "OTEL_METRICS_EXPORTER", "otlp" if otlp else "none")
        if metric_names:
            meter_provider = _meter_provider(metric_names, env, resource)
    out.close_later(tracer_provider.shutdown)  # flushes what is batched
    if meter_provider is not None:
        out.close_later(meter_provider.shutdown)
    return WorkflowOTelObserver(tracer_provider, meter_provider, content, redactor=redactor,
                                metrics=meter_provider is not None)


def _exporters(env: Mapping[str, str], var: str, default: str) -> list[str]:
    names = [n.strip().lower() for n in env.get(var, default).split(",") if n.strip()]
    for name in names:
        if name not in ("console", "otlp", "none"):
            raise UsageError(f"{var}={name!r}: agentloom supports console, otlp or none")
    return [n for n in names if n != "none"]


def _span_exporter(name: str, env: Mapping[str, str]) -> Any:
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter(out=sys.stderr)  # stdout is the run's (and --json's)
    endpoint, headers = _otlp_target(env, "TRACES", "v1/traces")
    if _protocol(env, "TRACES") == "grpc":
        module = "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"
        package = "opentelemetry-exporter-otlp-proto-grpc"
    else:
        module = "opentelemetry.exporter.otlp.proto.http.trace_exporter"
        package = "opentelemetry-exporter-otlp-proto-http"
    exporter_cls = _import(module, "OTLPSpanExporter", package)
    return exporter_cls(endpoint=endpoint, headers=headers)


def _meter_provider(names: list[str], env: Mapping[str, str], resource: Any) -> Any:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import (
        ConsoleMetricExporter,
        PeriodicExportingMetricReader,
    )

    readers = []
    for name in names:
        if name == "console":
            exporter: Any = ConsoleMetricExporter(out=sys.stderr)
        else:
            endpoint, headers = _otlp_target(env, "METRICS", "v1/metrics")
            grpc = _protocol(env, "METRICS") == "grpc"
            exporter_cls = _import(
                f"opentelemetry.exporter.otlp.proto.{'grpc' if grpc else 'http'}"
                ".metric_exporter", "OTLPMetricExporter",
                f"opentelemetry-exporter-otlp-proto-{'grpc' if grpc else 'http'}")
            exporter = exporter_cls(endpoint=endpoint, headers=headers)
        readers.append(PeriodicExportingMetricReader(exporter))
    return MeterProvider(resource=resource, metric_readers=readers)


def _otlp_target(env: Mapping[str, str], signal: str, path: str
                 ) -> tuple[str | None, dict[str, str]]:
    endpoint = env.get(f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")
    if not endpoint:
        base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        if base and _protocol(env, signal) != "grpc":
            endpoint = base.rstrip("/") + "/" + path  # the spec's rule for the base URL
        else:
            endpoint = base or None
    raw = env.get(f"OTEL_EXPORTER_OTLP_{signal}_HEADERS") or env.get(
        "OTEL_EXPORTER_OTLP_HEADERS", "")
    return endpoint, _pairs(raw, f"OTEL_EXPORTER_OTLP_{signal}_HEADERS")


def _protocol(env: Mapping[str, str], signal: str) -> str:
    value = _first(env, f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL",
                   "OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf"
    if value not in ("http/protobuf", "grpc"):
        raise UsageError(f"OTEL_EXPORTER_OTLP_PROTOCOL={value!r}: agentloom supports "
                         "http/protobuf or grpc")
    return value


def _resource_attributes(env: Mapping[str, str]) -> dict[str, str]:
    attrs = _pairs(env.get("OTEL_RESOURCE_ATTRIBUTES", ""), "OTEL_RESOURCE_ATTRIBUTES")
    attrs["service.name"] = env.get("OTEL_SERVICE_NAME") or attrs.get("service.name",
                                                                       "agentloom")
    return attrs


def _pairs(raw: str, var: str) -> dict[str, str]:
    """`k=v,k2=v2` (values URL-encoded), as OTEL_* header and attribute lists are."""
    out: dict[str, str] = {}
    for item in raw.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            # The value may be a credential: name the variable, never echo the item.
            raise UsageError(f"{var}: expected key=value pairs separated by commas")
        out[unquote(key.strip())] = unquote(value.strip())
    return out


def _first(env: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        value = env.get(name)
        if value:
            return value.strip()
    return None


def _import(module: str, name: str, package: str) -> Any:
    import importlib

    try:
        return getattr(importlib.import_module(module), name)
    except ImportError:
        raise UsageError(f"--otel with OTLP export needs {package}: pip install "
                         f"{package}") from None
