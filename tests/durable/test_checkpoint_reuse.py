"""A finished step's stored form is made once and reused by later checkpoints; that
reuse must never change what a checkpoint holds: a secret learned later still redacts
earlier results, and the reused form reads back as a plain dict from every store."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentloom.messages import ModelRequest
from agentloom.redact import REDACTED, Redactor
from agentloom.store import MemoryStore, SqliteStore
from agentloom.store._serde import EncodeOnce, JsonSerializer
from agentloom.testing.scripted import FunctionModel
from agentloom.workflow import arun_workflow, load_workflow_text
from agentloom.workflow.durable.run import DurableRun

CHAIN = """\
name: chain
steps:
  - {id: a, type: llm_call, prompt: a, output: oa}
  - {id: b, type: llm_call, prompt: b, depends_on: [a], output: ob}
  - {id: c, type: llm_call, prompt: c, depends_on: [b], output: oc}
"""


class _Factory:
    default_model = "m"

    def __init__(self, model: Any) -> None:
        self.model = model

    def client(self, **_: Any) -> Any:
        return self.model


async def test_a_secret_learned_later_redacts_earlier_results(tmp_path: Path) -> None:
    redactor = Redactor(patterns=False)
    store = SqliteStore(tmp_path / "runs.db")
    durable = DurableRun(store=store, run_id="r1", workflow_hash="h", redactor=redactor)

    def answer(request: ModelRequest) -> str:
        prompt = request.messages[-1].text
        if prompt == "c":  # by now a and b are finished and were checkpointed
            redactor.add_secrets(["secret-of-a"])
        return {"a": "secret-of-a", "b": "plain b", "c": "plain c"}[prompt]

    result = await arun_workflow(load_workflow_text(CHAIN),
                                 clients=_Factory(FunctionModel(answer)), durable=durable)
    assert result.ok
    cp = await store.load_latest("r1")
    await store.close()
    assert cp is not None
    assert cp.step_results["a"]["text"] == REDACTED
    assert cp.step_results["b"]["text"] == "plain b"
    assert "secret-of-a" not in json.dumps(cp.step_results, default=str)


async def test_every_step_is_in_the_last_checkpoint_as_a_plain_dict() -> None:
    store = MemoryStore()
    durable = DurableRun(store=store, run_id="r2", workflow_hash="h")
    model = FunctionModel(lambda request: "ok " + request.messages[-1].text)
    result = await arun_workflow(load_workflow_text(CHAIN), clients=_Factory(model),
                                 durable=durable)
    assert result.ok
    cp = await store.load_latest("r2")
    assert cp is not None
    assert {k: (type(v), v["text"], v["status"]) for k, v in cp.step_results.items()} == {
        "a": (dict, "ok a", "success"), "b": (dict, "ok b", "success"),
        "c": (dict, "ok c", "success")}


def test_encode_once_writes_what_a_plain_dict_writes_and_only_encodes_once() -> None:
    serde = JsonSerializer()
    value = {"cost": Decimal("0.5"), "items": [1, "x", None], "nested": {"k": b"\x00"}}
    once = EncodeOnce(value)
    assert serde.dumps({"r": once}) == serde.dumps({"r": value})
    first = once.encoded
    assert first is not None
    assert serde.dumps([once, once]) == serde.dumps([value, value])
    assert once.encoded is first  # reused, not made again
    assert serde.loads(serde.dumps(once)) == value
