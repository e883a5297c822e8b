"""The workflow's small languages: `{...}` templates, router expressions and state paths.
Pure and bounded, never `eval`. Imports nothing else of `agentloom.workflow`."""
