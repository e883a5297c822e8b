"""Load-time checks that span more than one step: the `agents:` map and conversations.

Agents that fail validation alone are set aside so one bad agent doesn't hide the rest
(each valid one is prepared by the step library, at its own lines). Two
steps that could run at the same time on one conversation are refused: each would write
its own copy back, and one turn would be lost. Branches of one router are exempt,
because only one of them runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentloom import conversation
from agentloom.errors import ConfigError
from agentloom.workflow.schema.agents import AgentDef

if TYPE_CHECKING:
    from agentloom.workflow.load.workflow import StepNode


def valid_agents(raw: Any) -> dict[str, AgentDef]:
    """The agents of a raw `agents:` map that validate on their own (the others are
    reported by the file's validation), so one bad agent doesn't hide the rest."""
    out: dict[str, AgentDef] = {}
    if not isinstance(raw, dict):
        return out
    for name, body in raw.items():
        try:
            out[str(name)] = AgentDef.model_validate(body)
        except Exception:
            continue
    return out


def check_conversations(checker: Any, nodes: dict[str, StepNode]) -> None:
    """Refuse two steps that may run at once on one conversation (file:line of the
    second one's `conversation`)."""
    keys = {n.id: getattr(n.step, "conversation", None) for n in nodes.values()}
    if sum(1 for k in keys.values() if k) < 2:
        return
    branch_of: dict[str, str] = {}
    for node in nodes.values():
        for target in getattr(node.prepared, "targets", ()) or ():
            branch_of[target] = node.id

    def exclusive(a: str, b: str) -> bool:
        return a in branch_of and branch_of.get(a) == branch_of.get(b)

    can_overlap = conversation.concurrency_predicate({n.id: n.deps for n in nodes.values()},
                                        exclusive=exclusive)
    try:
        conflicts = conversation.conflicting_conversation_steps(keys, can_overlap)
    except ConfigError:
        return  # a malformed key is reported by the step itself
    for c in conflicts:
        index = checker.raw_index[c.second]
        checker.err(c.message, checker.line_in_step(index, ("conversation",)),
                    f"steps[{index}].conversation")
