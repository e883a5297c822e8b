"""Observers that report a run elsewhere: JSONL event traces, OpenTelemetry spans and
metrics. Each is an `agentloom.loop.Observer`, so a reporting failure never changes a run.
Nothing here is imported by `import agentloom`; OpenTelemetry is imported only by the
modules that need it.

Job: reporting a run elsewhere: JSONL traces, OpenTelemetry, metrics. May import: the
layers up to `store` (tests/test_layers.py holds the rule).
"""
