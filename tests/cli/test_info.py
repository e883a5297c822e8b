"""`agentloom info`: versions, providers by name (never keys), extras."""

from __future__ import annotations

import json

import pytest

from agentloom.cli import main

SECRET = "sk-test-DO-NOT-PRINT-4242"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
                 "OLLAMA_HOST", "OPENAI_BASE_URL", "AGENTLOOM_MODEL", "AGENTLOOM_PROVIDER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OLLAMA_HOST", f"http://user:{SECRET}@127.0.0.1:11434")
    monkeypatch.setenv("AGENTLOOM_MODEL", "gpt-4o-mini")


def test_json_names_providers_and_extras_without_secrets(
        env: None, capsys: pytest.CaptureFixture[str]) -> None:
    from agentloom._version import __version__

    assert main(["info", "--json"]) == 0
    out = capsys.readouterr().out
    assert SECRET not in out
    facts = json.loads(out)
    assert facts["agentloom"] == __version__
    names = {p["name"]: p for p in facts["providers"]}
    assert names["openai"]["key"] == "set"
    assert names["ollama"]["base_url"].startswith("http://127.0.0.1:11434")
    assert facts["settings"] == {"AGENTLOOM_MODEL": "gpt-4o-mini"}
    assert set(facts["extras"]) == {"local", "mcp", "postgres", "otel", "ray"}
    import importlib.metadata

    assert facts["extras"]["mcp"] == importlib.metadata.version("mcp")


def test_text_output_has_no_secret(env: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert SECRET not in out
    assert "openai" in out and "(key set)" in out and "extras:" in out
    assert "local model:" in out


def test_no_providers_says_how_to_add_one(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
                 "OLLAMA_HOST"):
        monkeypatch.delenv(name, raising=False)
    assert main(["info"]) == 0
    assert "none (set OPENAI_API_KEY" in capsys.readouterr().out
