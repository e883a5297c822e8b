"""Loading a workflow: bounded YAML with file:line positions, schema validation, static and
model checks, and the problems a person can act on. Imports schema/ and lang/."""
