"""The engine: the ready-queue scheduler over a loaded workflow, the run context, step
results, retries and error handling, nested runs (functions, subworkflows, maps)."""
