"""The workflow file's schema: pydantic models of a workflow, its steps (one model per
type, discriminated on `type`, `extra="forbid"`), agents and tools, and their JSON Schema.
`steps` holds what every step shares and `llm_call`; `other_steps` the other types, whose
classes are created when a file first uses one; `step_types` finds a type's model by name.

Pure data. May import: `agentloom.errors`, `routing`/`pricing` parsers and
`tools.SandboxPolicy` (to check a field's value), nothing else of `agentloom.workflow`.
"""
