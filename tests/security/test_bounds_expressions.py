"""Expression CPU bombs: an operation's cost is bounded before it runs, so a router can't
hold the event loop (and the run's deadline) hostage, whether the bomb is in the file or
arrives through `--state`."""

from __future__ import annotations

from pathlib import Path

import pytest
from bounds_helpers import one_line, run_cli

from agentloom.workflow import ExpressionError, compile_expression

ROUTER = """\
name: bomb
config:
  timeout: 5
state:
  n: 2
steps:
  - id: pick
    type: router
    conditions:
      - expression: "{expression}"
        target: done
    default: done
  - id: done
    type: tool
    depends_on: [pick]
    tool_name: file_read
    tool_args: {{path: "nowhere"}}
"""


@pytest.mark.parametrize("source", [
    "round(1, -10**9) == 0",
    "round(10**60, -10**6) == 0",
    "round(1, state.n) == 1",
])
def test_round_digits_are_bounded_before_the_work(source: str) -> None:
    expression = compile_expression(source)
    with pytest.raises(ExpressionError, match="round"):
        expression.evaluate({"n": -(10**9)})


def test_round_within_bounds_still_rounds() -> None:
    assert compile_expression("round(1234, -2)").evaluate({}) == 1200
    assert compile_expression("round(2.675, 2)").evaluate({}) == round(2.675, 2)


def test_state_nested_too_deep_to_compare_is_a_clear_error() -> None:
    def nest() -> list[object]:
        deep: list[object] = []
        for _ in range(100_000):
            deep = [deep]
        return deep

    with pytest.raises(ExpressionError, match="nested too deeply"):
        compile_expression("state.a == state.b").evaluate({"a": nest(), "b": nest()})


def _router(tmp_path: Path, expression: str) -> Path:
    path = tmp_path / "bomb.yaml"
    path.write_text(ROUTER.format(expression=expression))
    return path


def test_a_round_bomb_through_state_fails_the_step_at_once(tmp_path: Path) -> None:
    flow = _router(tmp_path, "round(1, state.n) == 1")
    child = run_cli(["run", str(flow), "--no-checkpoint", "--state", "n=-1000000000"],
                    tmp_path)
    assert not child.killed, "the run hung"
    assert child.returncode == 1
    assert "step 'pick' failed" in child.stderr
    assert "round() digits beyond" in one_line(child.stderr)
