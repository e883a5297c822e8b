"""Migration face: the public AgentLoom's Python DSL, building our workflows (agentloom.compat)."""

from agentloom.compat.dsl import WorkflowBuilder as WorkflowBuilder
from agentloom.compat.dsl import workflow as workflow
