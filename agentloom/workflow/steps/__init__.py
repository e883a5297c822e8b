"""One module per step type, each a thin adapter with two functions:

- `prepare(step, pc)` at load: compile templates and expressions, report problems with
  their line (`pc.report`, `pc.template`); returns what `execute` needs.
- `execute(node, ctx)` at run time: returns a `StepOutcome`, or raises; the engine
  handles retries, timeouts, state writes and skips.
"""

from __future__ import annotations

from types import ModuleType

from agentloom.workflow.steps import agent as agent_step
from agentloom.workflow.steps import approval_gate, ask, llm_call, router, subworkflow, tool
from agentloom.workflow.steps import map as map_step

STEP_KINDS: dict[str, ModuleType] = {
    "llm_call": llm_call,
    "tool": tool,
    "router": router,
    "subworkflow": subworkflow,
    "map": map_step,
    "approval_gate": approval_gate,
    "ask": ask,
    "agent": agent_step,
}
