"""Running a loaded workflow: the entry points and child runner (`start.py`), the ready-queue
scheduler (`run.py`, awaiting each step through `awaiting.py`), one step's task with its
attempts and outcome (`step_task.py`), the spending caps (`spending.py`), the run's
final status and outputs (`run_end.py`), the run context steps see (`context.py`, with
`run_child` for nested runs), step results, step retries and deadlines, `on_error`
blocks, nested-run limits, observers and summaries, the pause signal.

May import: `load/`, `schema/`, `lang/` and the layers below `agentloom.workflow`. Never
`steps/` (steps come through the workflow's `StepLibrary`) nor `durable/` (a durable run
plugs in through `engine.hooks.DurableHooks`).
"""
