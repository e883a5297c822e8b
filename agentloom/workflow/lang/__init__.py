"""The workflow's small languages: `{...}` templates, router expressions and state paths,
and the frozen state a `map`'s items share (`frozen`: copied only where a path writes).

Pure and bounded, never `eval`. May import: the types layer (`agentloom.errors`, ...),
`agentloom.structured` (to read a structured output's fields); nothing else of
`agentloom.workflow`.
"""
