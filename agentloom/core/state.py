"""Migration face: the public AgentLoom's `StateManager` (agentloom.compat)."""

from agentloom.compat.state import StateManager as StateManager
