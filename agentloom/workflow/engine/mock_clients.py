"""`provider: mock`: the public AgentLoom's YAML mock, served strictly.

A workflow whose `config.provider` (or a step's `provider`) is `mock` gets its replies
from `config.responses_file`, a file in the public project's format, resolved against the
workflow file's directory, else the current directory. `latency_model` (constant,
normal, replay) and `latency_ms` shape the delays, through the run's clock. Replies are
matched by step id (and loop turn) or prompt hash; a call the file does not cover fails
the step with `ReplayMismatch`, never a made-up "Mock response". A missing file is a
`RecordingError` naming it, raised before the run starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentloom.errors import ConfigError

if TYPE_CHECKING:
    from agentloom.workflow.engine.context import ClientFactory
    from agentloom.workflow.load.workflow import Workflow

MOCK = "mock"


class MockClients:
    """A ClientFactory: `mock` requests get the recording's model, the rest go to `inner`
    (None: any non-mock request is a ConfigError naming the provider). A request without
    a provider is `mock` when `mock_by_default` (the workflow's `config.provider`)."""

    def __init__(self, model: Any, *, inner: ClientFactory | None = None,
                 default_model: str | None = None, mock_by_default: bool = True,
                 only_mock: bool = False) -> None:
        self.model = model
        self.inner = inner
        self.mock_by_default = mock_by_default
        self.only_mock = only_mock
        """Every call gets the recording, whatever provider it names (`--mock-responses`)."""
        self.default_model = default_model or getattr(inner, "default_model", None) or MOCK

    @property
    def env(self) -> Mapping[str, str]:
        """The inner factory's variables (a webhook's secret still signs with mocks)."""
        return getattr(self.inner, "env", None) or {}

    def client(self, *, model: str | None, provider: str | None = None,
               fallback: Sequence[Any] = (), retry: Any = None, budget: Any = None) -> Any:
        wants_mock = self.only_mock or provider == MOCK or (
            provider is None and self.mock_by_default)
        if wants_mock or self.inner is None:
            if not wants_mock:
                raise ConfigError(f"provider {provider or '(default)'!r} is not configured; "
                                  "this run only has the mock responses file")
            return self.model
        return self.inner.client(model=model, provider=provider, fallback=fallback,
                                 retry=retry, budget=budget)


def uses_mock(wf: Workflow) -> bool:
    if wf.config.provider == MOCK:
        return True
    return any(getattr(n.step, "provider", None) == MOCK for n in wf.nodes.values())


def _config_path(wf: Workflow, path: Path) -> Path:
    """A relative `config.responses_file`: beside the workflow file, else (as the public
    AgentLoom resolves it, and its example 35 is run from its repository root) against
    the current directory. Neither existing is reported naming the workflow's one."""
    if path.is_absolute():
        return path
    beside = wf.base_dir / path
    if not beside.exists() and path.exists():
        return path.resolve()
    return beside


def mock_clients(wf: Workflow, *, inner: ClientFactory | None = None,
                 responses_file: str | Path | None = None, clock: Any = None) -> MockClients:
    """The client factory for a workflow that uses `provider: mock`. `responses_file`
    (a CLI flag) wins over `config.responses_file`; a relative config path resolves
    against the workflow file's directory, then the current one; a flag's against the
    current one."""
    from agentloom.recording.mock_responses import (
        MockResponsesModel,
        load_agentloom_mock_responses,
    )

    config = wf.config
    if responses_file is not None:
        path = Path(responses_file)
    elif config.responses_file:
        path = _config_path(wf, Path(config.responses_file))
    else:
        raise ConfigError(f"{wf.file or wf.name}: provider: mock needs config.responses_file "
                          "(a recording of replies keyed by step id)")
    responses = load_agentloom_mock_responses(path)
    model = MockResponsesModel(
        responses, latency_model=config.latency_model or "constant",
        latency_ms=config.latency_ms or 0.0, clock=clock)
    # A file given as a flag answers every call; the config's only the mock provider's.
    return MockClients(model, inner=inner, default_model=config.model,
                       mock_by_default=responses_file is not None or config.provider == MOCK,
                       only_mock=responses_file is not None and inner is None)
