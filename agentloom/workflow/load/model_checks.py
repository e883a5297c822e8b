"""Load-time checks that span more than one step: the `agents:` map and conversations.

An agent is prepared once (its instructions compiled, its output schema built), and its
problems are reported at the agent's own lines, not at every step that runs it. Two
steps that could run at the same time on one conversation are refused: each would write
its own copy back, and one turn would be lost. Branches of one router are exempt,
because only one of them runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentloom.conversation import concurrency_predicate, conflicting_conversation_steps
from agentloom.errors import ConfigError, TemplateError
from agentloom.workflow.lang.templates import compile_template
from agentloom.workflow.schema.agents import AGENT_NAME, AgentDef

if TYPE_CHECKING:
    from agentloom.workflow.load.workflow import StepNode
    from agentloom.workflow.steps.agent import AgentPlan


def prepare_agents(checker: Any) -> dict[str, AgentPlan]:
    """Each valid agent of the file, ready to run; problems go to `checker.err`."""
    agents: dict[str, AgentDef] = getattr(checker, "agents", {}) or {}
    if not agents:
        return {}  # and the agent step's module is not imported for nothing
    from agentloom.workflow.steps._structured_step import load_protocol, prepare_structured
    from agentloom.workflow.steps.agent import AgentPlan

    data = checker.data if isinstance(checker.data, dict) else {}
    found_agents = data.get("agents")
    raw_agents: dict[str, Any] = found_agents if isinstance(found_agents, dict) else {}
    config = checker.definition_config
    providers = data.get("providers") if isinstance(data.get("providers"), dict) else None
    plans: dict[str, AgentPlan] = {}

    def line(name: str, *path: str) -> int | None:
        found = checker.marks.line_of(raw_agents, name)
        node: Any = raw_agents.get(name)
        for part in path:
            if not isinstance(node, dict):
                break
            found = checker.marks.line_of(node, part) or found
            node = node.get(part)
        return found  # type: ignore[no-any-return]

    for name, d in agents.items():
        where = f"agents.{name}"
        if not AGENT_NAME.match(name):
            checker.err(f"agent name {name!r} takes letters, digits, _ and -, up to 64 "
                        "characters (it is the agent's speaker name)", line(name), where)
            continue
        profiles = data.get("profiles")
        if d.profile is not None and not (isinstance(profiles, dict) and d.profile in profiles):
            checker.err(f"{where}.profile: unknown profile {d.profile!r}", line(name, "profile"),
                        f"{where}.profile")
        instructions = None
        if d.instructions is not None:
            try:
                instructions = compile_template(d.instructions)
            except TemplateError as exc:
                checker.problems.append(TemplateError(
                    f"{where}.instructions: {exc.message}", file=checker.filename,
                    line=line(name, "instructions"), field=f"{where}.instructions"))
        structured = None
        if d.output_schema is not None:
            model = d.model or (config.model if config is not None else None)
            provider = d.provider or (config.provider if config is not None else None)
            try:
                structured = prepare_structured(
                    d.output_schema, name, protocol=load_protocol(provider, model, providers),
                    model=model, with_tools=bool(d.tools))
            except ConfigError as exc:
                checker.err(f"{where}.output_schema: {exc}", line(name, "output_schema"),
                            f"{where}.output_schema")
        plans[name] = AgentPlan(name=name, definition=d, instructions=instructions,
                                structured=structured)
    return plans


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

    can_overlap = concurrency_predicate({n.id: n.deps for n in nodes.values()},
                                        exclusive=exclusive)
    try:
        conflicts = conflicting_conversation_steps(keys, can_overlap)
    except ConfigError:
        return  # a malformed key is reported by the step itself
    for c in conflicts:
        index = checker._raw_index[c.second]
        checker.err(c.message, checker.line_in_step(index, ("conversation",)),
                    f"steps[{index}].conversation")
