"""Migration face: the public AgentLoom's `GoogleProvider` (agentloom.compat); our Gemini
wire protocol is `agentloom.providers.gemini`."""

from agentloom.compat.gateway import GoogleProvider as GoogleProvider
