"""A missing optional extra fails at load, with the `pip install` line that fixes it, in
`validate` as in `run`: never a hang, never a traceback. The extra is made missing by a
`sitecustomize` that blocks its import in the child (nothing is uninstalled)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from bounds_helpers import one_line, run_cli

from agentloom.cli import main
from agentloom.errors import ConfigError
from agentloom.tools import MCPServerConfig, MCPToolSource

FLOW = """\
name: m
mcp_servers:
  calc:
    command: [{python}, -m, agentloom.testing.mcp_server]
    timeout: 5
steps:
  - id: add
    type: tool
    tool_name: calc.add
    tool_args: {{a: 1, b: 2}}
    output: sum
"""
HINT = "pip install 'agentloom-engine[mcp]'"


def _without(tmp_path: Path, module: str) -> dict[str, str]:
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        f"import sys\nsys.modules[{module!r}] = None  # `import {module}` now fails\n")
    return {"PYTHONPATH": str(blocker)}


def test_mcp_servers_without_the_extra_fail_at_load_in_run(tmp_path: Path) -> None:
    flow = tmp_path / "flow.yaml"
    flow.write_text(FLOW.format(python=sys.executable))
    child = run_cli(["run", str(flow), "--no-checkpoint"], tmp_path,
                    env=_without(tmp_path, "mcp"))
    assert not child.killed, "hung"
    assert child.returncode == 1
    first = child.stderr.strip().splitlines()[0]
    assert first == (f"{flow}:2: MCP servers need the optional 'mcp' package, which is "
                     f"not installed: {HINT}")
    assert one_line(child.stderr) == f"1 problem found in {flow}"


def test_validate_says_so_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)
    flow = tmp_path / "flow.yaml"
    flow.write_text(FLOW.format(python=sys.executable))
    assert main(["validate", str(flow)]) == 1
    assert f"{flow}:2: MCP servers need the optional 'mcp' package" in capsys.readouterr().err


async def test_an_mcp_source_without_the_extra_raises_instead_of_waiting(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)
    source = MCPToolSource([MCPServerConfig(name="calc", command=sys.executable,
                                            args=("-m", "agentloom.testing.mcp_server"))])
    with pytest.raises(ConfigError, match=r"pip install 'agentloom-engine\[mcp\]'"):
        await asyncio.wait_for(source.start(), 60)  # the timeout is only a safety net
