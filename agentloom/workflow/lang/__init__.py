"""The workflow's small languages: `{...}` templates, router expressions and state paths.

Pure and bounded, never `eval`. May import: the types layer (`agentloom.errors`, ...),
`agentloom.structured` (to read a structured output's fields); nothing else of
`agentloom.workflow`.
"""
