"""Migration face: the public AgentLoom's `WorkflowEngine`, on our engine (agentloom.compat)."""

from agentloom.compat.engine import WorkflowEngine as WorkflowEngine
