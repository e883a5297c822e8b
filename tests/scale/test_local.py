"""The local executor and `batch()`: concurrency, exactly-once output, cancel and resume."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from scale_helpers import EchoFactory, Probe, read_lines, write_jsonl

from agentloom.errors import ConfigError
from agentloom.scale import batch, read_finished


async def test_thousand_inputs_run_concurrently_and_each_is_written_once(
        tmp_path: Path) -> None:
    inputs = write_jsonl(tmp_path / "in.jsonl", 1000, extra=["oops"])
    probe = Probe()
    out = tmp_path / "out.jsonl"
    b = batch(None, inputs, runner_factory=EchoFactory(delay=0.002, probe=probe),
              concurrency=25, output=out)
    results = await b.results()
    assert probe.opened == probe.closed == 1  # one shared runner for the whole batch
    assert 1 < probe.max_in_flight <= 25
    lines = read_lines(out)
    assert len(lines) == len(results) == 1001
    ids = [line["id"] for line in lines]
    assert len(set(ids)) == 1001
    ok = {line["id"]: line for line in lines if line["status"] == "success"}
    assert len(ok) == 1000
    assert ok["in-0042"]["outputs"] == {"echo": '{"ID": "IN-0042", "N": 42}'}
    bad = [line for line in lines if line["status"] == "invalid_input"]
    assert bad[0]["id"] == "1001" and bad[0]["source"] == f"{inputs}:1001"
    assert b.stats.succeeded == 1000 and b.stats.invalid == 1
    assert b.stats.tokens == sum(line["tokens"] for line in ok.values())
    assert [f.id for f in b.stats.failures] == ["1001"]


async def test_failures_and_runner_errors_are_results(tmp_path: Path) -> None:
    inputs = write_jsonl(tmp_path / "in.jsonl", 5)
    factory = EchoFactory(fail_ids=("in-0001",), raise_ids=("in-0003",))
    results = {r.id: r async for r in batch(None, inputs, runner_factory=factory)}
    assert results["in-0001"].status == "failed"
    assert results["in-0003"].status == "error"
    assert results["in-0003"].error == "ValueError: boom on in-0003"
    assert sum(r.ok for r in results.values()) == 3


async def test_existing_output_needs_resume_or_overwrite(tmp_path: Path) -> None:
    inputs = write_jsonl(tmp_path / "in.jsonl", 3)
    out = tmp_path / "out.jsonl"
    out.write_text("", encoding="utf-8")
    with pytest.raises(ConfigError, match="already exists"):
        await batch(None, inputs, runner_factory=EchoFactory(), output=out).results()
    done = await batch(None, inputs, runner_factory=EchoFactory(), output=out,
                       overwrite=True).results()
    assert len(done) == 3


async def _cancel_after(b: Any, n: int) -> int:
    seen = 0
    task = asyncio.current_task()
    assert task is not None
    async for _ in b:
        seen += 1
        if seen == n:
            task.cancel()
    return seen


async def test_cancel_leaves_a_consistent_file_and_resume_runs_only_the_rest(
        tmp_path: Path) -> None:
    inputs = write_jsonl(tmp_path / "in.jsonl", 300)
    out = tmp_path / "out.jsonl"
    probe = Probe()
    first = batch(None, inputs, runner_factory=EchoFactory(delay=0.005, probe=probe),
                  concurrency=20, output=out)
    with pytest.raises(asyncio.CancelledError):
        await _cancel_after(first, 120)
    assert first.stats.interrupted
    assert probe.cancelled > 0 and probe.in_flight == 0 and probe.closed == 1
    text = out.read_text(encoding="utf-8")
    assert text.endswith("\n")
    done_first = [json.loads(line)["id"] for line in text.splitlines()]
    assert len(done_first) == first.stats.done >= 120

    probe2 = Probe()
    second = batch(None, inputs, runner_factory=EchoFactory(probe=probe2), output=out,
                   resume=True)
    rest = await second.results()
    assert second.stats.skipped == len(done_first)
    assert sorted(probe2.calls) == sorted({f"in-{i:04d}" for i in range(300)}
                                          - set(done_first))
    assert len(rest) == 300 - len(done_first)
    ids = [line["id"] for line in read_lines(out)]
    assert sorted(ids) == [f"in-{i:04d}" for i in range(300)]  # each exactly once


async def test_resume_skips_failures_unless_retry_failed(tmp_path: Path) -> None:
    inputs = write_jsonl(tmp_path / "in.jsonl", 4)
    out = tmp_path / "out.jsonl"
    await batch(None, inputs, runner_factory=EchoFactory(fail_ids=("in-0002",)),
                output=out).results()
    with out.open("a", encoding="utf-8") as f:
        f.write('{"id": "in-0003", "status": "succ')  # a line torn by a kill
    state = read_finished(out)
    assert state.unreadable_lines == [5]
    assert set(state.finished) == {"in-0000", "in-0001", "in-0002", "in-0003"}

    again = await batch(None, inputs, runner_factory=EchoFactory(), output=out,
                        resume=True).results()
    assert again == []
    retried = await batch(None, inputs, runner_factory=EchoFactory(), output=out,
                          resume=True, retry_failed=True).results()
    assert [(r.id, r.status) for r in retried] == [("in-0002", "success")]
    assert read_finished(out).finished["in-0002"].status == "success"
    # The torn line got its newline before the append: every later line parses.
    assert [line["id"] for line in read_lines_skipping_torn(out)][-1] == "in-0002"


def read_lines_skipping_torn(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


async def test_workflow_runs_against_the_fake_server(tmp_path: Path, flow: Path,
                                                    fake_env: dict[str, str]) -> None:
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"id": "a", "text": "apples"}\n{"id": "b", "text": "bees"}\n',
                      encoding="utf-8")
    results = {r.id: r async for r in batch(flow, inputs, env=fake_env, concurrency=4)}
    assert results["a"].outputs == {"title": "echo:Title for: echo:Summarize: apples"}
    assert results["a"].tokens == 38 and results["a"].cost_usd is not None
    assert results["b"].status == "success"


async def test_missing_state_key_fails_that_input_with_a_reason(
        tmp_path: Path, fake_env: dict[str, str]) -> None:
    flow = tmp_path / "f.yaml"
    flow.write_text("name: f\nsteps:\n  - id: s\n    type: llm_call\n    model: gpt-4o-mini\n"
                    "    prompt: 'About {state.topic}'\n", encoding="utf-8")
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"id": "ok", "topic": "x"}\n{"id": "no-topic"}\n', encoding="utf-8")
    b = batch(flow, inputs, env=fake_env)
    results = {r.id: r async for r in b}
    assert results["ok"].ok
    assert results["no-topic"].status == "failed"
    assert "the state has no 'topic'" in (results["no-topic"].error or "")
    assert [f.id for f in b.stats.failures] == ["no-topic"]


async def test_closing_the_iterator_early_stops_the_runs_in_flight(tmp_path: Path) -> None:
    from contextlib import aclosing

    inputs = write_jsonl(tmp_path / "in.jsonl", 100)
    probe = Probe()
    b = batch(None, inputs, runner_factory=EchoFactory(delay=0.01, spread=7, probe=probe),
              concurrency=10, output=tmp_path / "out.jsonl")
    async with aclosing(aiter(b)) as results:
        async for _ in results:
            if b.stats.done == 5:
                break
    assert probe.in_flight == 0 and probe.closed == 1 and probe.cancelled > 0
    assert b.stats.interrupted
    assert len(read_lines(tmp_path / "out.jsonl")) == 5


def test_a_task_group_error_is_reported_by_its_cause() -> None:
    from agentloom.scale import BatchInput
    from agentloom.scale._types import error_result

    exc = ExceptionGroup("unhandled errors in a TaskGroup", [KeyError("topic")])
    item = error_result(BatchInput(id="a", state={}, source="in.jsonl:1"), exc)
    assert (item.status, item.error, item.source) == ("error", "KeyError: 'topic'",
                                                      "in.jsonl:1")


async def test_a_deferred_input_asked_again_keeps_its_attempt_count(tmp_path: Path) -> None:
    # A worker died under d01 (attempt 2 started), and that attempt found the dead worker's
    # claim still held, so it deferred. Asked again (waiting), the input must still be on
    # attempt 2: a result's `attempts` says how many workers it took.
    from agentloom.scale._types import BatchInput, BatchItemResult

    seen: list[tuple[str, int, bool]] = []

    class DeferOnce:
        name = "test"

        async def run(self, inputs: Any, started: Any = None) -> Any:
            async for inp in inputs:
                if started is not None:
                    started(inp)
                assert isinstance(inp, BatchInput)
                seen.append((inp.id, inp.attempt, inp.wait))
                if inp.id == "in-0001" and not inp.wait:
                    yield BatchItemResult(id=inp.id, status="deferred", attempts=2)
                else:
                    yield BatchItemResult(id=inp.id, status="success",
                                          attempts=inp.attempt)

    inputs = write_jsonl(tmp_path / "in.jsonl", 2)
    results = {r.id: r for r in await batch(None, inputs, executor=DeferOnce(),
                                            output=tmp_path / "out.jsonl",
                                            store=tmp_path / "runs.db").results()}
    ids = sorted(results)
    assert seen == [(ids[0], 1, False), (ids[1], 1, False), (ids[1], 2, True)]
    assert results[ids[1]].attempts == 2 and results[ids[0]].attempts == 1
