"""Migration face: the public AgentLoom's `WorkflowParser`, on our loader (agentloom.compat)."""

from agentloom.compat.parser import WorkflowParser as WorkflowParser
