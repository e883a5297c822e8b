"""The loopback fakes of the spec-000 rule tests: OpenAI, Anthropic and Ollama in threads,
reached through the variables `agentloom run` reads, and the CLI called as a user calls it
(`main(["run", ...])`, the same code as `python -m agentloom.cli run`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentloom.cli import main
from agentloom.testing import FakeAnthropicServer, FakeOllamaServer, FakeOpenAIServer

_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
        "GEMINI_API_KEY", "GOOGLE_API_KEY", "OLLAMA_HOST", "AGENTLOOM_PROVIDER",
        "AGENTLOOM_MODEL", "AGENTLOOM_REDACT_STATE_KEYS")


@dataclass(slots=True)
class Fakes:
    openai: FakeOpenAIServer
    anthropic: FakeAnthropicServer
    ollama: FakeOllamaServer


def serve_fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Fakes]:
    """The body of each test module's `fakes` fixture: the servers, the variables, and
    `tmp_path` as the current directory."""
    servers = Fakes(FakeOpenAIServer(), FakeAnthropicServer(), FakeOllamaServer())
    for s in (servers.openai, servers.anthropic, servers.ollama):
        s.start_in_thread()
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key")
    monkeypatch.setenv("OPENAI_BASE_URL", servers.openai.openai_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", servers.anthropic.base_url)
    monkeypatch.setenv("OLLAMA_HOST", servers.ollama.base_url)
    monkeypatch.chdir(tmp_path)
    try:
        yield servers
    finally:
        for s in (servers.openai, servers.anthropic, servers.ollama):
            s.stop_thread()


def run_cli(capsys: pytest.CaptureFixture[str], flow: str, *args: str,
            name: str = "flow.yaml") -> tuple[int, Any, str]:
    """`agentloom run FLOW --json ARGS` in the current directory: exit code, the parsed
    JSON (None when stdout isn't JSON) and stderr."""
    Path(name).write_text(flow, encoding="utf-8")
    code = main(["run", name, "--json", "--no-checkpoint", *args])
    out = capsys.readouterr()
    try:
        data = json.loads(out.out)
    except ValueError:
        data = None
    return code, data, out.err
