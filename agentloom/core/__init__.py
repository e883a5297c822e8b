"""The public AgentLoom's `agentloom.core` import paths, kept for scripts moving over.

Each module here only re-exports the adapters of `agentloom.compat` (the migration path,
docs/compat-examples.md); our own engine lives in `agentloom.workflow`. It shares
`compat`'s layer and imports nothing else (tests/test_layers.py holds the rule).
"""
