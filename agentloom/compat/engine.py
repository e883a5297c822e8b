"""`WorkflowEngine`: the public AgentLoom's engine face; the run is ours.

    engine = WorkflowEngine(workflow=wf, state_manager=state, provider_gateway=gateway,
                            tool_registry=tools)
    result = await engine.run()      # their WorkflowResult shape

The workflow runs on `agentloom.workflow.arun_workflow`: our scheduler, steps, templates,
retries and tools. Models come from the gateway's providers (our Runtime over them, each
call sent to the registrations their gateway would pick for its model); with no gateway,
from the environment-free default Runtime (the embedded model when nothing else is
configured). A workflow on `provider: mock` replays its `config.responses_file`
as `agentloom run` does, with or without a gateway (the gateway's providers serve the
steps that name another provider). Tools come from the registry
(`agentloom.tools.ToolRegistry`, which takes their `@tool` functions and `BaseTool`
subclasses); with none, the built-ins.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentloom.compat.parser import as_workflow
from agentloom.compat.results import WorkflowResult, from_run
from agentloom.compat.state import StateManager
from agentloom.routing.runtime import Runtime
from agentloom.tools import default_registry
from agentloom.workflow import arun_workflow
from agentloom.workflow.engine.mock_clients import mock_clients, uses_mock


class WorkflowEngine:
    def __init__(
        self,
        workflow: Any,
        state_manager: StateManager | None = None,
        provider_gateway: Any | None = None,
        tool_registry: Any | None = None,
        step_registry: Any | None = None,
        observer: Any | None = None,
        on_stream_chunk: Callable[[str, str], None] | None = None,
        checkpointer: Any | None = None,
        run_id: str | None = None,
    ) -> None:
        if step_registry is not None:
            raise TypeError("step_registry: custom step types are not supported; write a "
                            "tool or a workflow function instead (docs/compat-examples.md)")
        self.workflow = as_workflow(workflow)
        if state_manager is not None and not isinstance(state_manager, StateManager):
            raise TypeError(f"state_manager: expected a StateManager (StateManager("
                            f"initial_state=...)), got {type(state_manager).__name__}")
        if provider_gateway is not None and not hasattr(provider_gateway, "runtime"):
            raise TypeError(f"provider_gateway: expected a ProviderGateway, got "
                            f"{type(provider_gateway).__name__}")
        if tool_registry is not None and not hasattr(tool_registry, "toolbox"):
            raise TypeError(f"tool_registry: expected a ToolRegistry "
                            f"(agentloom.tools.ToolRegistry), got {type(tool_registry).__name__}")
        self.state = state_manager or StateManager(initial_state=dict(self.workflow.state))
        self.provider_gateway = provider_gateway
        self.tool_registry = tool_registry
        self.observer = observer
        """Kept for their scripts; their OTel/Prometheus observers have no role here
        (our traces: `agentloom run --trace`, `--otel`)."""
        self._stream_callback = on_stream_chunk
        self.run_id = run_id

    async def run(self) -> WorkflowResult:
        wf = self.workflow.resolved()
        gateway = self.provider_gateway
        own_runtime = gateway is None
        if gateway is None:
            runtime: Any = Runtime(default_provider=wf.config.provider)
            routed: Any = runtime
        else:
            runtime = gateway.runtime(default_provider=wf.config.provider)
            # Each call goes to the registrations their gateway would pick for its model.
            clients_of = getattr(gateway, "clients", None)
            routed = clients_of(runtime) if callable(clients_of) else runtime
        try:
            tools = self.tool_registry
            if tools is None:
                tools = default_registry(transport=runtime.transport)
            on_event = None
            if self._stream_callback is not None:
                callback = self._stream_callback

                def on_event(step_id: str, event: Any) -> None:
                    if event.kind == "text_delta":
                        callback(step_id, event.text)

            clients: Any = routed
            if uses_mock(wf):  # as `agentloom run`: the mock serves `mock`, the rest go on
                clients = mock_clients(wf, inner=routed)
            result = await arun_workflow(
                wf, clients=clients, state=await self.state.get_state_snapshot(),
                tools=tools, on_event=on_event, run_id=self.run_id,
                transport=runtime.transport)
        finally:
            if own_runtime:
                await runtime.aclose()
        self.state.replace(result.state)
        return from_run(result)

