"""Gaps between the public AgentLoom's Python API / CLI and ours, each closed here.

1. `WorkflowEngine` on a `provider: mock` workflow replays its `responses_file` as
   `agentloom run` does (before: the step failed with "unknown provider 'mock'").
2. `ProviderGateway.register` refuses a provider class, a priority that is no number,
   an `is_fallback` that is no bool and `models` that are no list of names, when called
   (before: a class failed later in `runtime()`, `priority="high"` at the second
   `register`, `models="gpt-4o"` was taken).
3. The provider classes refuse an `api_key`/`base_url` that is no text (before:
   `AttributeError: 'int' object has no attribute 'rstrip'`).
4. `StateManager` refuses an `initial_state` that is no mapping and, as theirs, a key
   that is empty or has an empty segment; a key that is no text is a TypeError.
5. `agentloom history --since/--until` take an ISO 8601 time as theirs do (before: only
   YYYY-MM-DD); a time without an offset is UTC.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentloom.cli import main
from agentloom.compat import (
    AnthropicProvider,
    GoogleProvider,
    OllamaProvider,
    OpenAIProvider,
    ProviderGateway,
    StateManager,
    WorkflowEngine,
    WorkflowParser,
)
from agentloom.errors import ConfigError
from agentloom.testing import FakeOpenAIServer

# --- 1. provider: mock through WorkflowEngine --------------------------------------------

MOCK_WORKFLOW = """\
name: canned
config:
  provider: mock
  model: mock-model
  responses_file: replies.json
steps:
  - {id: ask, type: llm_call, prompt: "hi", output: answer}
"""


def _mock_files(tmp_path: Path, workflow: str = MOCK_WORKFLOW) -> Path:
    (tmp_path / "replies.json").write_text(json.dumps({"ask": {
        "content": "canned reply", "usage": {"prompt_tokens": 2, "completion_tokens": 3}}}))
    path = tmp_path / "wf.yaml"
    path.write_text(workflow)
    return path


async def test_engine_without_a_gateway_replays_a_mock_workflow(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path.parent)  # the file resolves beside the workflow
    wf = WorkflowParser.from_yaml(_mock_files(tmp_path))
    result = await WorkflowEngine(workflow=wf).run()
    assert result.status.value == "success", result.step_results["ask"].error
    assert result.final_state["answer"] == "canned reply"
    assert result.total_tokens == 5


async def test_engine_with_a_gateway_replays_mock_steps_and_routes_the_rest(
        tmp_path: Path) -> None:
    _mock_files(tmp_path)
    wf = WorkflowParser.from_dict({
        "name": "mixed", "config": {"provider": "openai", "model": "gpt-4o-mini",
                                    "responses_file": str(tmp_path / "replies.json")},
        "steps": [
            {"id": "ask", "type": "llm_call", "provider": "mock", "prompt": "hi",
             "output": "answer"},
            {"id": "live", "type": "llm_call", "prompt": "more", "output": "more",
             "depends_on": ["ask"]},
        ]})
    async with FakeOpenAIServer() as server:
        server.script("from the server")
        gateway = ProviderGateway()
        gateway.register(OpenAIProvider(api_key="sk-test", base_url=server.base_url))
        result = await WorkflowEngine(wf, provider_gateway=gateway).run()
        await gateway.close()
    errors = {k: v.error for k, v in result.step_results.items()}
    assert result.status.value == "success", errors
    assert result.final_state["answer"] == "canned reply"
    assert result.final_state["more"] == "from the server"
    assert len(server.requests) == 1  # the mock step never reached the server


async def test_engine_on_mock_without_a_responses_file_says_what_is_needed(
        tmp_path: Path) -> None:
    path = _mock_files(tmp_path, MOCK_WORKFLOW.replace("  responses_file: replies.json\n", ""))
    with pytest.raises(ConfigError, match=r"provider: mock needs config\.responses_file"):
        await WorkflowEngine(workflow=WorkflowParser.from_yaml(path)).run()


# --- 2. ProviderGateway.register ----------------------------------------------------------

@pytest.mark.parametrize(("kwargs", "message"), [
    ({"provider": OpenAIProvider},
     r"OpenAIProvider is a class; register a provider built from it, e\.g\. "
     r"gateway\.register\(OpenAIProvider\(\)\)"),
    ({"priority": "high"}, r"priority must be a number \(lower is tried first\), got text"),
    ({"priority": True}, "priority must be a number"),
    ({"priority": float("nan")}, "priority must be a number"),
    ({"models": "gpt-4o"}, r"models must be a list of model names \(e\.g\. \['gpt-4o'\]\), "
                           "got text 'gpt-4o'"),
    ({"models": ["gpt-4o", 5]}, "models must be a list of model names"),
    ({"is_fallback": "yes"}, "is_fallback must be True or False, got text"),
])
def test_register_refuses_what_it_cannot_use_when_called(
        kwargs: dict[str, Any], message: str) -> None:
    gateway = ProviderGateway()
    args = {"provider": OpenAIProvider(api_key="sk-test"), **kwargs}
    with pytest.raises(TypeError, match=message):
        gateway.register(**args)
    assert gateway.providers == []


def test_register_takes_what_theirs_takes() -> None:
    gateway = ProviderGateway()
    gateway.register(OllamaProvider(), priority=1.5, models=("llama3",), is_fallback=True,
                     max_rpm=10)
    gateway.register(OpenAIProvider(api_key="sk-test"), priority=0, models=["gpt-4o"])
    assert [type(p).__name__ for p in gateway.providers] == ["OpenAIProvider",
                                                             "OllamaProvider"]


# --- 3. provider constructors -------------------------------------------------------------

PROVIDERS = [OpenAIProvider, AnthropicProvider, GoogleProvider, OllamaProvider]


@pytest.mark.parametrize("cls", PROVIDERS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("arg", ["base_url", "api_key"])
def test_provider_refuses_an_argument_that_is_no_text(cls: type[Any], arg: str) -> None:
    with pytest.raises(TypeError, match=rf"^{cls.__name__}: {arg} must be text \(or None "
                                        r"for the default\), got a number$"):
        cls(**{arg: 5})


@pytest.mark.parametrize("cls", PROVIDERS, ids=lambda c: c.__name__)
def test_provider_takes_none_as_the_default(cls: type[Any],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI", "ANTHROPIC", "GOOGLE", "OLLAMA"):
        monkeypatch.delenv(f"{name}_BASE_URL", raising=False)
    assert cls(api_key=None, base_url=None).base_url == cls(api_key="", base_url="").base_url


# --- 4. StateManager ----------------------------------------------------------------------

@pytest.mark.parametrize("initial", [[1, 2], "ab", 5])
def test_state_manager_refuses_an_initial_state_that_is_no_mapping(initial: Any) -> None:
    with pytest.raises(TypeError, match=r"^initial_state must be a mapping of state keys "
                                        r"to values \(a dict\), got "):
        StateManager(initial_state=initial)


async def test_state_key_that_is_no_text_is_a_type_error() -> None:
    sm = StateManager(initial_state={"a": 1})
    key: Any = None
    for call in (lambda: sm.get(key), lambda: sm.set(key, 1),
                 lambda: sm.update(key, lambda v: v)):
        with pytest.raises(TypeError, match=r"state key must be text .*got NoneType"):
            await call()


@pytest.mark.parametrize(("key", "message"), [
    ("", "state path must not be empty"),
    ("a..b", "empty segment in state path 'a..b'"),
    (".a", "empty segment in state path '.a'"),
    ("a.", "empty segment in state path 'a.'"),
])
async def test_state_path_with_an_empty_segment_is_refused_as_theirs(
        key: str, message: str) -> None:
    sm = StateManager(initial_state={"a": {"b": 1}})
    with pytest.raises(ValueError, match=message):
        await sm.set(key, 1)
    with pytest.raises(ValueError, match=message):
        await sm.get(key)
    assert await sm.get_state_snapshot() == {"a": {"b": 1}}


# --- 5. history --since / --until ---------------------------------------------------------

RECORD = {"run_id": "r1", "timestamp": "2026-01-02T03:04:05+00:00", "workflow_name": "w",
          "status": "success", "providers_used": ["openai/gpt-4o-mini"],
          "total_cost_usd": 0.01, "total_tokens": 3, "duration_ms": 10}


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "agentloom_runs"
    folder.mkdir()
    (folder / "r1.json").write_text(json.dumps(RECORD))
    return folder


def _history(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["history", "--runs-dir", "agentloom_runs", "--store", "memory://", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("argv", "kept"), [
    (["--since", "2026-01-02T03:04:05Z"], True),
    (["--since", "2026-01-02T03:04:05"], True),  # no offset: UTC
    (["--since", "2026-01-02T03:04:06"], False),
    (["--since", "2026-01-02T04:04:05+01:00"], True),  # the same instant
    (["--since", "2026-01-02T04:04:06+01:00"], False),
    (["--since", "2026-01-02 03:04"], True),
    (["--until", "2026-01-02T03:04:05+00:00"], True),  # a time: at or before it
    (["--until", "2026-01-02T03:04:04.999999"], False),
    (["--until", "2026-01-02T04:04:04+01:00"], False),
    (["--until", "20260102"], True),  # a date in another ISO form: its whole day
    (["--since", "20260103"], False),
    (["--until", "9999-12-31T23:59:59.999999"], True),
    (["--since", "0001-01-01T00:00+01:00"], True),
    (["--since", "2026-01-02T03:00Z", "--until", "2026-01-02T03:05Z"], True),
])
def test_history_takes_iso_8601_times(runs: Path, capsys: pytest.CaptureFixture[str],
                                      argv: list[str], kept: bool) -> None:
    code, out, err = _history(capsys, *argv, "--json")
    assert (code, err) == (0, "")
    assert [r["run_id"] for r in json.loads(out)] == (["r1"] if kept else [])


@pytest.mark.parametrize("value", ["yesterday", "2026-W01-5", "2026-13-01", "2026-02-30",
                                   "2026-01-02T25:00", "2026-01-02T03:04+24:00", "",
                                   " 2026-01-02", "2026-01-02\n"])
@pytest.mark.parametrize("flag", ["--since", "--until"])
def test_history_refuses_the_rest_in_one_line(runs: Path, capsys: pytest.CaptureFixture[str],
                                              flag: str, value: str) -> None:
    code, out, err = _history(capsys, flag, value)
    assert (code, out) == (2, "")
    assert err == (f"agentloom: error: {flag} {value!r}: expected a date (YYYY-MM-DD) or an "
                   "ISO 8601 time (2026-05-01T10:00:00+02:00)\n")
