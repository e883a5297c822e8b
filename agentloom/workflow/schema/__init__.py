"""The workflow file's schema: pydantic models of a workflow, its steps, agents and tools,
and their JSON Schema export. Pure data: imports nothing else of `agentloom.workflow`."""
