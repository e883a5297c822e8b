"""AgentLoom: run LLM work reliably.

Declarative YAML workflows of LLM steps and a Python agent loop, on one engine.

Importing this package does no I/O, reads no environment variable and imports no optional
dependency: public names are resolved on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentloom._lazy import lazy_getattr
from agentloom._version import __version__

if TYPE_CHECKING:
    from agentloom.loop.agent import Agent as Agent
    from agentloom.loop.observer import NullObserver as NullObserver
    from agentloom.loop.observer import Observer as Observer
    from agentloom.loop.result import ConversationResult as ConversationResult
    from agentloom.loop.summary import ConversationStatus as ConversationStatus
    from agentloom.loop.summary import ConversationSummary as ConversationSummary
    from agentloom.loop.summary import SummaryOptions as SummaryOptions
    from agentloom.loop.summary import TurnRecord as TurnRecord
    from agentloom.tools import tool as tool

_LAZY: dict[str, str] = {
    # agent API
    "Agent": "agentloom.loop.agent",
    "ConversationResult": "agentloom.loop.result",
    "ConversationSummary": "agentloom.loop.summary",
    "ConversationStatus": "agentloom.loop.summary",
    "SummaryOptions": "agentloom.loop.summary",
    "TurnRecord": "agentloom.loop.summary",
    "NullObserver": "agentloom.loop.observer",
    "Observer": "agentloom.loop.observer",
    "MultiObserver": "agentloom.loop.observer",
    "ListObserver": "agentloom.loop.observer",
    "ConsoleObserver": "agentloom.loop.observer",
    "SummaryCollector": "agentloom.loop.collector",
    "EventTraceObserver": "agentloom.observe.events",
    "OTelObserver": "agentloom.observe.otel",
    # tools
    "tool": "agentloom.tools",
    "Tool": "agentloom.tools",
    # workflows
    "load_workflow": "agentloom.workflow",
    "run_workflow": "agentloom.workflow",
    "Runtime": "agentloom.routing.runtime",
    "batch": "agentloom.scale",
    # errors
    "AgentLoomError": "agentloom.errors",
    "AgentLoopError": "agentloom.errors",
    "ConfigError": "agentloom.errors",
    "WorkflowError": "agentloom.errors",
    "TemplateError": "agentloom.errors",
    "ProviderError": "agentloom.errors",
    "ToolError": "agentloom.errors",
    "LoopBudgetExceeded": "agentloom.errors",
    "BudgetExceeded": "agentloom.errors",
    "DeadlineExceeded": "agentloom.errors",
    "StructuredOutputError": "agentloom.errors",
    "ReplayMismatch": "agentloom.errors",
    "ProviderCallError": "agentloom.errors",
    "AuthError": "agentloom.errors",
    "MissingKeyError": "agentloom.errors",
    "BadRequestError": "agentloom.errors",
    "ContextLengthExceeded": "agentloom.errors",
    "ModelNotFound": "agentloom.errors",
    "InsufficientCredits": "agentloom.errors",
    "UnexpectedRedirect": "agentloom.errors",
    "RateLimited": "agentloom.errors",
    "ProviderUnavailable": "agentloom.errors",
    "ProviderUnreachable": "agentloom.errors",
    "ProviderTimeout": "agentloom.errors",
    "ResponseInvalid": "agentloom.errors",
}

__all__ = ["__version__", *_LAZY]


__getattr__ = lazy_getattr(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted(__all__)
