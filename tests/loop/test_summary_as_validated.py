"""A run's summary is built without pydantic's validation when every value is already of
its field's exact type (the usual run), and is then the very model validation would give:
equal, same fields set, same field order, same value types, same JSON. Anything else
(an int from a caller's clock, an error) goes through validation as before."""

from __future__ import annotations

import copy
import pickle
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import pytest
from loop_doubles import RetryingModel, Tools, echo, provider_error, response

from agentloom.loop import ConversationSummary, LoopOptions, SummaryOptions, run_loop
from agentloom.messages import Message, ModelRequest, Usage
from agentloom.testing.clock import FakeClock
from agentloom.testing.scripted import ScriptedModel, tool_call


def req() -> ModelRequest:
    return ModelRequest(model="m", messages=(Message.user("hi"),))


@contextmanager
def validations() -> Iterator[list[object]]:
    """The validators whose `validate_python` ran inside the block (a timeline's turn
    records are validated as they are made; the summary's own is what counts)."""
    seen: list[object] = []

    def hook(frame: Any, event: str, arg: Any) -> None:
        if event == "c_call" and getattr(arg, "__name__", "") == "validate_python":
            seen.append(arg.__self__)

    sys.setprofile(hook)
    try:
        yield seen
    finally:
        sys.setprofile(None)


def summary_validations(seen: list[object]) -> int:
    return sum(1 for v in seen if v is ConversationSummary.__pydantic_validator__)


def validated_twin(summary: ConversationSummary) -> ConversationSummary:
    """What validating the summary's given fields gives."""
    given = {name: getattr(summary, name) for name in summary.model_fields_set}
    given["usage"] = {name: getattr(summary.usage, name)
                      for name in summary.usage.model_fields_set}
    return ConversationSummary.model_validate(given)


def assert_same_model(built: ConversationSummary, twin: ConversationSummary) -> None:
    assert built == twin
    assert list(built.__dict__) == list(twin.__dict__) == list(ConversationSummary.model_fields)
    assert built.model_fields_set == twin.model_fields_set
    assert [type(v) for v in built.__dict__.values()] == [type(v) for v in twin.__dict__.values()]
    assert built.usage.model_fields_set == twin.usage.model_fields_set
    assert list(built.usage.__dict__) == list(twin.usage.__dict__)
    assert built.model_dump_json() == twin.model_dump_json()
    assert built.model_dump_json(exclude_unset=True) == twin.model_dump_json(exclude_unset=True)
    assert repr(built) == repr(twin)


async def plain() -> Any:
    return await run_loop(ScriptedModel(["ok"]), req())


async def with_tools_and_a_timeline() -> Any:
    async def broken(arguments: str) -> str:
        raise RuntimeError("no")

    model = ScriptedModel([[tool_call("echo", id="1"), tool_call("broken", id="2")], "done"])
    opts = LoopOptions(summary_options=SummaryOptions(timeline=True, stall_threshold=2),
                       agent_name="helper", correlation_id="req-1", parent_id="p-1",
                       conversation_id="c-1", deadline_seconds=30.0, max_iterations=4)
    return await run_loop(model, req(), tools=Tools(echo=echo, broken=broken), options=opts)


async def with_retries_and_cost() -> Any:
    priced = response("ok", usage=Usage(input_tokens=5, output_tokens=2,
                                        cost_usd=Decimal("0.0003")))
    return await run_loop(RetryingModel([[provider_error(503), priced]]), req())


@pytest.mark.parametrize("run", [plain, with_tools_and_a_timeline, with_retries_and_cost])
async def test_the_usual_run_is_built_as_validation_would_build_it(run: Any) -> None:
    result = await run()
    with validations() as seen:
        summary = result.summary
    assert summary_validations(seen) == 0
    assert_same_model(summary, validated_twin(summary))


async def test_the_built_summary_behaves_as_a_model() -> None:
    result = await with_tools_and_a_timeline()
    summary = result.summary
    assert summary.tool_calls == {"echo": 1, "broken": 1} and summary.tool_errors == {"broken": 1}
    assert summary.timeline is not None and summary.timeline[0].tools == ("echo", "broken")
    with pytest.raises(ValueError, match="frozen"):
        summary.iterations = 9  # type: ignore[misc]
    changed = summary.model_copy(update={"iterations": 9})
    assert changed.iterations == 9 and "iterations" in changed.model_fields_set
    assert pickle.loads(pickle.dumps(summary)) == summary == copy.deepcopy(summary)
    assert ConversationSummary.model_validate_json(summary.model_dump_json()) == summary


async def test_an_int_from_the_callers_clock_is_validated_to_a_float() -> None:
    clock = FakeClock(start=0, wall_start=1_767_225_600)  # ints: elapsed stays an int
    result = await run_loop(ScriptedModel(["ok"]), req(), options=LoopOptions(clock=clock))
    with validations() as seen:
        summary = result.summary
    assert summary_validations(seen) == 1
    assert type(summary.elapsed_seconds) is float and summary.elapsed_seconds == 0.0


async def test_a_deadline_given_as_an_int_is_validated_to_a_float() -> None:
    opts = LoopOptions(deadline_seconds=30)
    summary = (await run_loop(ScriptedModel(["ok"]), req(), options=opts)).summary
    assert summary is not None
    assert type(summary.deadline_seconds) is float and summary.deadline_seconds == 30.0


async def test_an_odd_value_from_a_caller_still_fails_validation() -> None:
    opts = LoopOptions(agent_name=5)  # type: ignore[arg-type]
    result = await run_loop(ScriptedModel(["ok"]), req(), options=opts)
    with pytest.raises(ValueError, match="agent_name"):
        result.summary  # noqa: B018


async def test_a_failed_run_is_validated_with_its_error_fields() -> None:
    with pytest.raises(Exception) as caught:
        await run_loop(RetryingModel([[provider_error(503), provider_error(503)]]), req(),
                       options=LoopOptions(wrap_errors=True))
    summary = caught.value.summary  # type: ignore[attr-defined]
    assert summary.error_type is not None and summary.provider_status_code == 503
    assert {"error_type", "provider_status_code"} <= summary.model_fields_set
    assert_same_model(summary, validated_twin(summary))


async def test_a_run_without_an_error_leaves_the_error_fields_unset() -> None:
    summary = (await plain()).summary
    assert summary is not None
    assert not {"error_type", "provider_status_code", "error_phase", "error_request_sent",
                "error_request_id", "error_attempts_sent"} & summary.model_fields_set
    assert summary.error_type is None and summary.error_attempts_sent is None
