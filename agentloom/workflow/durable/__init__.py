"""Durable runs: checkpoints after every step and tool-loop turn, pauses (`approval_gate`,
`ask`) and resume, on the store's protocol."""
