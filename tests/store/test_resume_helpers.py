"""Small pure helpers the engine uses on resume."""

from __future__ import annotations

from agentloom.messages import Message, ModelRequest, ToolSpec
from agentloom.recording import model_request_hash
from agentloom.store import ToolCallRecord, tool_call_resume_action


def _rec(status: str, idempotent: bool) -> ToolCallRecord:
    return ToolCallRecord(run_id="r", step_id="s", turn=1, call_id="c", status=status,  # type: ignore[arg-type]
                          idempotent=idempotent)


def test_tool_call_resume_action() -> None:
    assert tool_call_resume_action(None) == "run"
    assert tool_call_resume_action(_rec("done", False)) == "reuse"
    assert tool_call_resume_action(_rec("in_flight", True)) == "rerun"
    assert tool_call_resume_action(_rec("in_flight", False)) == "needs_decision"


def test_model_request_hash_is_stable_and_sensitive() -> None:
    base = ModelRequest(model="m", messages=(Message.user("hi"),),
                        tools=(ToolSpec(name="t"),), headers={"authorization": "Bearer a"})
    same = base.replace(headers={"authorization": "Bearer b"}, stream=True)
    assert model_request_hash(base) == model_request_hash(same)
    assert model_request_hash(base) != model_request_hash(base.replace(temperature=0.5))
    assert model_request_hash(base) != model_request_hash(
        base.replace(messages=(Message.user("hi!"),)))
    assert model_request_hash(base).startswith("sha256:")
