"""Loading a workflow: bounded YAML with file:line positions, schema validation, the
dependency graph, static checks, and every problem at once (`WorkflowProblems`).

Each step type's own preparation comes from the `StepLibrary` the caller hands in
(`load.workflow.StepLibrary`), so loading imports no step module. May import: `schema/`,
`lang/`, and the layers below `agentloom.workflow`; never `engine/`, `steps/`, `durable/`.
"""
