"""The loop's summary record: a reporter that keeps summaries (a workflow step) gets a
record whose ConversationSummary is built when read, and every other observer still gets
a real ConversationSummary in `on_conversation_end`, equal to the record's."""

from __future__ import annotations

import copy
import pickle
from typing import Any

from agentloom.loop import (
    ConversationSummary,
    LoopOptions,
    MultiObserver,
    NullObserver,
    run_loop,
)
from agentloom.loop.collector import SummaryRecord
from agentloom.messages import Message, ModelRequest
from agentloom.testing.scripted import ScriptedModel
from agentloom.workflow.engine.result import StepResult


def req() -> ModelRequest:
    return ModelRequest(model="m", messages=(Message.user("hi"),))


class Keeper(NullObserver):
    def __init__(self) -> None:
        self.records: list[Any] = []
        self.ended: list[Any] = []

    def on_summary_record(self, record: Any) -> None:
        self.records.append(record)

    def on_conversation_end(self, summary: Any) -> None:
        self.ended.append(summary)


class Ender(NullObserver):
    def __init__(self) -> None:
        self.ended: list[Any] = []

    def on_conversation_end(self, summary: Any) -> None:
        self.ended.append(summary)


async def test_a_keeper_gets_the_record_and_not_the_summary() -> None:
    keeper = Keeper()
    result = await run_loop(ScriptedModel(["ok"]), req(), options=LoopOptions(observer=keeper))
    assert keeper.ended == []
    (record,) = keeper.records
    assert isinstance(record, SummaryRecord)
    summary = record.summary
    assert isinstance(summary, ConversationSummary)
    assert record.summary is summary  # built once
    assert result.summary is summary
    assert summary.status == "completed" and summary.iterations == 1
    assert summary.usage.input_tokens == 10 and summary.model == "m"


async def test_beside_a_keeper_other_observers_get_a_real_summary() -> None:
    keeper, ender = Keeper(), Ender()
    await run_loop(ScriptedModel(["ok"]), req(),
                   options=LoopOptions(observer=MultiObserver(keeper, ender)))
    (record,) = keeper.records
    assert keeper.ended == []
    (summary,) = ender.ended
    assert isinstance(summary, ConversationSummary) and summary is record.summary


async def test_a_failed_run_reports_a_real_summary_too() -> None:
    ender = Ender()
    try:
        await run_loop(ScriptedModel([RuntimeError("boom")]), req(),
                       options=LoopOptions(observer=ender))
    except RuntimeError:
        pass
    (summary,) = ender.ended
    assert isinstance(summary, ConversationSummary)
    assert summary.status == "error" and summary.error_type == "RuntimeError"


async def test_step_result_builds_the_summary_when_read_and_pickles_it() -> None:
    keeper = Keeper()
    await run_loop(ScriptedModel(["ok"]), req(), options=LoopOptions(observer=keeper))
    record = keeper.records[0]
    step = StepResult(id="s", type="llm_call")
    step.summary = record
    copied = pickle.loads(pickle.dumps(step))
    assert isinstance(copied.summary, ConversationSummary)
    assert copied.summary == record.summary
    assert isinstance(step.summary, ConversationSummary) and step.summary is record.summary
    assert copy.deepcopy(record) == record.summary


async def test_an_on_summary_sink_gets_the_record_on_success_and_failure() -> None:
    kept: list[Any] = []
    result = await run_loop(ScriptedModel(["ok"]), req(),
                            options=LoopOptions(on_summary=kept.append))
    (record,) = kept
    assert isinstance(record, SummaryRecord)
    assert result.summary is record.summary and record.summary.status == "completed"
    try:
        await run_loop(ScriptedModel([RuntimeError("boom")]), req(),
                       options=LoopOptions(on_summary=kept.append))
    except RuntimeError:
        pass
    assert len(kept) == 2 and kept[1].summary.status == "error"
