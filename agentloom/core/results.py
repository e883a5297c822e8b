"""Migration face: the public AgentLoom's result types (agentloom.compat)."""

from agentloom.compat.results import StepResult as StepResult
from agentloom.compat.results import StepStatus as StepStatus
from agentloom.compat.results import TokenUsage as TokenUsage
from agentloom.compat.results import WorkflowResult as WorkflowResult
from agentloom.compat.results import WorkflowStatus as WorkflowStatus
