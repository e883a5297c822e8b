"""A `map` over a long list keeps what its output needs per item, not each item's state.

Each item runs on a copy of the whole state, the mapped list included. Holding every
finished item's final state until the map ends held the list once per item: 3,000 small
objects (a model's reply, well under `max_items`) took 1.8 GB.
"""

from __future__ import annotations

import tracemalloc

from wf_helpers import Factory, echo_model

from agentloom.workflow import RunStatus, arun_workflow, load_workflow_text

MAP = """\
name: m
steps:
  - id: each
    type: map
    over: state.items
    concurrency: 4
    step: {id: one, type: llm_call, prompt: "{state.index}", output: said}
    output: results
"""

ITEMS = 500


async def test_finished_items_do_not_keep_their_copy_of_the_state() -> None:
    wf = load_workflow_text(MAP)
    items = [{"k": i, "tag": "t"} for i in range(ITEMS)]
    tracemalloc.start()
    try:
        result = await arun_workflow(wf, clients=Factory(echo_model()), state={"items": items})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.status is RunStatus.SUCCESS, result.error
    assert [e["output"] for e in result.state["results"]] == [
        f"echo: {i}" for i in range(ITEMS)]
    # One copy of the list is ~0.1 MB; one kept per item peaked at ~47 MiB. The map's
    # own work (its entries, the items in flight, the step results) is ~1 MiB.
    assert peak < 16 * 1024 * 1024, f"peak {peak / 2**20:.0f} MiB"


async def test_usage_and_failures_still_roll_up_per_item() -> None:
    wf = load_workflow_text(MAP.replace("    output: results\n",
                                        "    on_item_error: continue\n    output: results\n"))

    def answer(request: object) -> str:
        text = request.messages[-1].text  # type: ignore[attr-defined]
        if text == "1":
            raise ValueError("no")
        return "ok " + text

    result = await arun_workflow(wf, clients=Factory(echo_model(answer)),
                                 state={"items": ["a", "b", "c"]})
    assert result.status is RunStatus.SUCCESS, result.error
    entries = result.state["results"]
    assert [e["status"] for e in entries] == ["success", "failed", "success"]
    assert "no" in entries[1]["error"]
    assert result.steps["each"].usage is not None
