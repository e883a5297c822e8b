"""The workflow file's schema: pydantic models of a workflow, its steps (one model per
type, discriminated on `type`, `extra="forbid"`), agents and tools, and their JSON Schema.

Pure data. May import: `agentloom.errors`, `routing`/`pricing` parsers (to check a
field's value), nothing else of `agentloom.workflow`.
"""
