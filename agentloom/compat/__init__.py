"""The public AgentLoom's Python API, as thin adapters onto our engine: the migration path.

A script written for the public AgentLoom (`agentloom` 0.4.0 / its GitHub `main`) imports
`agentloom.core.engine.WorkflowEngine`, `agentloom.core.parser.WorkflowParser`,
`agentloom.core.state.StateManager`, `agentloom.providers.gateway.ProviderGateway`, the
provider classes and `agentloom.core.dsl.workflow`. Those import paths are one-line
modules that re-export from here; every name below runs on our loader, engine, runtime
and tools, so nothing about workflows is implemented twice. New code should use
`agentloom.workflow` and `agentloom.Agent` directly (docs/compat-examples.md).

Job: the public AgentLoom's Python API as thin adapters. May import: the layers up to
`ui` (tests/test_layers.py holds the rule).

Nothing here is imported by `import agentloom`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentloom._lazy import lazy_getattr

if TYPE_CHECKING:
    from agentloom.compat.dsl import WorkflowBuilder as WorkflowBuilder
    from agentloom.compat.dsl import workflow as workflow
    from agentloom.compat.engine import WorkflowEngine as WorkflowEngine
    from agentloom.compat.gateway import AnthropicProvider as AnthropicProvider
    from agentloom.compat.gateway import GoogleProvider as GoogleProvider
    from agentloom.compat.gateway import OllamaProvider as OllamaProvider
    from agentloom.compat.gateway import OpenAIProvider as OpenAIProvider
    from agentloom.compat.gateway import ProviderGateway as ProviderGateway
    from agentloom.compat.parser import CompatWorkflow as CompatWorkflow
    from agentloom.compat.parser import WorkflowParser as WorkflowParser
    from agentloom.compat.results import StepResult as StepResult
    from agentloom.compat.results import StepStatus as StepStatus
    from agentloom.compat.results import TokenUsage as TokenUsage
    from agentloom.compat.results import WorkflowResult as WorkflowResult
    from agentloom.compat.results import WorkflowStatus as WorkflowStatus
    from agentloom.compat.state import StateManager as StateManager

_LAZY: dict[str, str] = {
    "WorkflowBuilder": "agentloom.compat.dsl",
    "workflow": "agentloom.compat.dsl",
    "WorkflowEngine": "agentloom.compat.engine",
    "ProviderGateway": "agentloom.compat.gateway",
    "OpenAIProvider": "agentloom.compat.gateway",
    "AnthropicProvider": "agentloom.compat.gateway",
    "GoogleProvider": "agentloom.compat.gateway",
    "OllamaProvider": "agentloom.compat.gateway",
    "WorkflowParser": "agentloom.compat.parser",
    "CompatWorkflow": "agentloom.compat.parser",
    "StepResult": "agentloom.compat.results",
    "StepStatus": "agentloom.compat.results",
    "TokenUsage": "agentloom.compat.results",
    "WorkflowResult": "agentloom.compat.results",
    "WorkflowStatus": "agentloom.compat.results",
    "StateManager": "agentloom.compat.state",
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
