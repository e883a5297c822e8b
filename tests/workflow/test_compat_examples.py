"""Every public AgentLoom example loads as written on our loader (each step's fields, its
dependencies, the initial state and the config as the file says); those made only of model steps
also run to success against an in-process model. Every example's run over HTTP to the
fake servers, tools and attachments included, is in tests/compat/test_examples.py."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from wf_helpers import Factory, echo_model

from agentloom.messages import Usage
from agentloom.testing.scripted import make_response
from agentloom.workflow import RunStatus, arun_workflow, load_workflow

EXAMPLES = Path("/work/shared/compat/agentloom-examples")
FILES = sorted(EXAMPLES.glob("*.yaml")) if EXAMPLES.is_dir() else []
RUNNABLE_TYPES = {"llm_call", "router", "subworkflow", "map"}
NOT_YET = ("attachments", "response_schema", "conversation")


@pytest.mark.skipif(not FILES, reason="compat examples not present")
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_example_loads_as_written(path: Path) -> None:
    raw = yaml.safe_load(path.read_text())
    wf = load_workflow(path)
    assert wf.name == raw["name"]
    assert list(wf.nodes) == [s["id"] for s in raw["steps"]]
    problems: list[str] = []
    for step in raw["steps"]:
        node = wf.nodes[step["id"]]
        assert node.type == step["type"]
        problems += _differences(node.step.model_dump(mode="json", by_alias=True), step,
                                 step["id"])
        assert set(node.deps) == set(step.get("depends_on", [])), step["id"]
    order = list(wf.topological_order())
    assert all(order.index(d) < order.index(i) for i, n in wf.nodes.items() for d in n.deps)
    definition = wf.definition.model_dump(mode="json", by_alias=True)
    problems += _differences(definition.get("state") or {}, raw.get("state") or {}, "state")
    problems += _differences(wf.config.model_dump(mode="json", by_alias=True),
                             raw.get("config") or {}, "config")
    assert problems == []


def _differences(got: Any, want: Any, where: str) -> list[str]:
    """Where `got` (the loaded model, dumped) says other than `want` (the file); keys the
    file leaves out are the loader's defaults and not compared."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return [f"{where}: {got!r} is not a mapping"]
        return [d for k, v in want.items()
                for d in (_differences(got[k], v, f"{where}.{k}") if k in got
                          else [f"{where}.{k}: not loaded"])]
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return [f"{where}: {got!r} != {want!r}"]
        return [d for i, (g, w) in enumerate(zip(got, want, strict=True))
                for d in _differences(g, w, f"{where}[{i}]")]
    return [] if got == want else [f"{where}: {got!r} != {want!r}"]


def _runnable(path: Path) -> bool:
    wf = load_workflow(path)
    return all(n.type in RUNNABLE_TYPES and not any(getattr(n.step, f, None) for f in NOT_YET)
               and not getattr(n.step, "tools", None) for n in wf.nodes.values())


@pytest.mark.skipif(not FILES, reason="compat examples not present")
@pytest.mark.parametrize("path", [p for p in FILES if _runnable(p)], ids=lambda p: p.name)
async def test_example_runs_offline(path: Path) -> None:
    wf = load_workflow(path)
    # Priced replies: several examples set budget_usd, which fails closed on unknown cost.
    reply = make_response("approve billing", usage=Usage(
        input_tokens=5, output_tokens=2, cost_usd=Decimal("0.0001")))
    result = await arun_workflow(wf, clients=Factory(echo_model(lambda r: reply)))
    assert result.status is RunStatus.SUCCESS, result.error


@pytest.mark.skipif(not FILES, reason="compat examples not present")
async def test_inline_base64_attachment_example_runs_offline() -> None:
    from agentloom.messages import ImagePart
    from agentloom.testing.scripted import ScriptedModel

    model = ScriptedModel(["four colours"])
    wf = load_workflow(EXAMPLES / "20_multimodal_base64.yaml")
    result = await arun_workflow(wf, clients=Factory(model))
    assert result.status is RunStatus.SUCCESS, result.error
    image = model.requests[0].messages[-1].parts[1]
    assert isinstance(image, ImagePart) and image.media_type == "image/png"
