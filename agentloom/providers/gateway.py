"""Migration face: the public AgentLoom's `ProviderGateway`, on our Runtime (agentloom.compat)."""

from agentloom.compat.gateway import ProviderGateway as ProviderGateway
