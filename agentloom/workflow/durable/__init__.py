"""Durable runs: checkpoints after every step and tool-loop turn, pauses (`approval_gate`,
`ask`) and resume, on the store's protocol.

Plugs into the engine through its hooks (`DurableRun` implements
`engine.hooks.DurableHooks`) and wraps the run's clients and tools to journal them. May
import: `engine/`, `lang/`, `agentloom.store` and the layers below; never `steps/`.
"""
