"""A workflow's `providers:` entries (and a profile's own endpoint) refused by the file,
the line and the field, as every other workflow error: by `validate`, before `run` and
`batch` start, and by the Python API's load, not as a bare `providers.x.type: ...` once
the run has started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentloom.errors import ConfigError, WorkflowError
from agentloom.routing import endpoint_from_config
from agentloom.routing.runtime import Runtime
from agentloom.testing import FakeClock
from agentloom.testing.fake_openai import FakeOpenAIServer
from agentloom.workflow import arun_workflow, load_workflow

ROOT = Path(__file__).resolve().parents[2]
EXIT_BAD_FILE = 1  # what `validate` and `run` exit with for a bad workflow file


def agentloom(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_", "OLLAMA_",
                                "AGENTLOOM_"))}
    env["OPENAI_API_KEY"] = "test-key"  # no run is refused for a missing key first
    env["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"  # nothing is ever sent there
    env["AGENTLOOM_HOME"] = str(cwd / "home")
    return subprocess.run([sys.executable, "-m", "agentloom.cli", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=60)


def flow(tmp_path: Path, head: str) -> Path:
    path = tmp_path / "flow.yaml"
    path.write_text("name: p\n" + head + "steps:\n"
                    "  - {id: a, type: llm_call, model: gpt-4o-mini, prompt: hi}\n",
                    encoding="utf-8")
    return path


# (the file's head, the line and the field named, a piece of the message)
BAD = [
    pytest.param("providers:\n  myproxy:\n    base_url: http://127.0.0.1:9/v1\n"
                 "    type: bogus\n", 5, "providers.myproxy.type", "unknown protocol 'bogus'",
                 id="unknown-type"),
    pytest.param("providers:\n  myproxy:\n    base_url: http://127.0.0.1:9/v1\n"
                 "    protocol: grpc\n", 5, "providers.myproxy.protocol", "unknown protocol 'grpc'",
                 id="unknown-protocol"),
    pytest.param("providers:\n  myproxy:\n    base_url: http://127.0.0.1:9/v1\n"
                 "    api: nonsense\n", 5, "providers.myproxy.api",
                 "expected responses or chat_completions", id="bad-api"),
    pytest.param("providers:\n  openai:\n    api: {gpt-4o: fast}\n", 4,
                 "providers.openai.api", "expected responses or chat_completions",
                 id="bad-api-per-model"),
    pytest.param("providers:\n  myproxy:\n    base_url: http://127.0.0.1:9/v1\n"
                 "    api_key_env: ''\n", 5, "providers.myproxy.api_key_env",
                 "expected an environment variable name", id="empty-api-key-env"),
    pytest.param("providers:\n  myproxy:\n    type: openai\n    models: [m]\n", 3,
                 "providers.myproxy.base_url", "missing", id="no-base-url"),
    pytest.param("providers:\n  local: {models: [m]}\n", 3, "providers.local.base_url",
                 "missing", id="local-without-base-url"),
    pytest.param("providers:\n  myproxy:\n    base_url: localhost:8000/v1\n"
                 "    models: [m]\n", 4, "providers.myproxy.base_url",
                 "expected an http:// or https:// URL", id="base-url-without-scheme"),
    pytest.param("providers:\n  myproxy:\n    base_url: ftp://127.0.0.1/v1\n"
                 "    models: [m]\n", 4, "providers.myproxy.base_url",
                 "expected an http:// or https:// URL", id="base-url-not-http"),
    pytest.param("profiles:\n  fast:\n    provider: grpc\n    base_url: http://127.0.0.1:9/v1\n"
                 "    model: m\n", 4, "profiles.fast.provider", "unknown protocol 'grpc'",
                 id="profile-base-url-protocol"),
]


@pytest.mark.parametrize(("head", "line", "field", "detail"), BAD)
def test_validate_names_file_line_and_field(tmp_path: Path, head: str, line: int,
                                            field: str, detail: str) -> None:
    path = flow(tmp_path, head)
    out = agentloom("validate", str(path), cwd=tmp_path)
    assert out.returncode == EXIT_BAD_FILE, out.stdout + out.stderr
    assert f"{path}:{line}: {field}: " in out.stderr, out.stderr
    assert detail in out.stderr
    assert out.stderr.strip().splitlines()[-1] == f"1 problem found in {path}"


@pytest.mark.parametrize(("head", "line", "field", "detail"), BAD)
def test_validate_json_gives_the_line_and_field(tmp_path: Path, head: str, line: int,
                                                field: str, detail: str) -> None:
    path = flow(tmp_path, head)
    out = agentloom("validate", "--json", str(path), cwd=tmp_path)
    assert out.returncode == EXIT_BAD_FILE, out.stderr
    [problem] = json.loads(out.stdout)["problems"]
    assert (problem["file"], problem["line"], problem["field"]) == (str(path), line, field)
    assert detail in problem["message"]


@pytest.mark.parametrize(("head", "line", "field", "detail"), BAD)
def test_run_refuses_before_it_starts(tmp_path: Path, head: str, line: int, field: str,
                                      detail: str) -> None:
    path = flow(tmp_path, head)
    out = agentloom("run", str(path), "--no-checkpoint", cwd=tmp_path)
    assert out.returncode == EXIT_BAD_FILE, out.stdout + out.stderr
    assert f"{path}:{line}: {field}: " in out.stderr, out.stderr
    assert detail in out.stderr
    assert "step 'a'" not in out.stdout + out.stderr  # no step ran


@pytest.mark.parametrize(("head", "line", "field", "detail"), [BAD[0], BAD[5]])
def test_batch_refuses_before_any_run(tmp_path: Path, head: str, line: int, field: str,
                                      detail: str) -> None:
    path = flow(tmp_path, head)
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"x": 1}\n', encoding="utf-8")
    out = agentloom("batch", str(path), str(inputs), "-o", str(tmp_path / "out.jsonl"),
                    cwd=tmp_path)
    assert out.returncode == EXIT_BAD_FILE, out.stdout + out.stderr
    assert f"{path}:{line}: {field}: " in out.stderr, out.stderr
    assert detail in out.stderr


def test_a_map_body_may_name_the_files_provider(tmp_path: Path) -> None:
    # A body's profiles and fallback entries were checked without the file's providers:
    # "unknown provider 'myproxy'".
    path = tmp_path / "flow.yaml"
    path.write_text(
        "name: p\nproviders:\n  myproxy: {base_url: 'http://127.0.0.1:9/v1', models: [m]}\n"
        "profiles:\n  fast: {provider: myproxy, model: m}\nstate: {xs: [1]}\nsteps:\n"
        "  - id: each\n    type: map\n    over: '{state.xs}'\n    steps:\n"
        "      - {id: a, type: llm_call, profile: fast, prompt: hi}\n"
        "      - {id: b, type: llm_call, model: gpt-4o-mini, prompt: hi,\n"
        "         fallback: [{provider: myproxy, model: m}]}\n", encoding="utf-8")
    out = agentloom("validate", str(path), cwd=tmp_path)
    assert out.returncode == 0, out.stderr


def test_a_bad_entry_is_told_once_not_again_by_each_block(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(
        "name: p\nproviders:\n  myproxy: {base_url: 'http://127.0.0.1:9/v1', type: bogus}\n"
        "state: {xs: [1]}\nsteps:\n"
        "  - id: each\n    type: map\n    over: '{state.xs}'\n    steps:\n"
        "      - {id: a, type: llm_call, model: gpt-4o-mini, prompt: hi}\n", encoding="utf-8")
    out = agentloom("validate", str(path), cwd=tmp_path)
    assert out.returncode == EXIT_BAD_FILE
    assert out.stderr.count("unknown protocol 'bogus'") == 1, out.stderr
    assert f"{path}:3: providers.myproxy.type: " in out.stderr


def test_python_load_names_file_line_and_field(tmp_path: Path) -> None:
    path = flow(tmp_path, BAD[0].values[0])  # type: ignore[arg-type]
    with pytest.raises(WorkflowError) as caught:
        load_workflow(path)
    assert (caught.value.file, caught.value.line, caught.value.field) == (
        str(path), 5, "providers.myproxy.type")


def test_a_runtime_may_lend_a_named_entry_its_base_url(tmp_path: Path) -> None:
    # From Python the runtime may hold the endpoint an entry without base_url names: the
    # load can't refuse it; adding it to a runtime that holds none names file and line.
    path = flow(tmp_path, "providers:\n  primary: {type: openai, models: [m]}\n")
    wf = load_workflow(path)
    assert wf.provider_problems()[0].line == 3
    held = Runtime()
    held.add_provider("primary", {"base_url": "http://127.0.0.1:9/v1"})
    wf.add_providers_to(held)
    assert held.endpoints[0].base_url == "http://127.0.0.1:9/v1"
    assert held.endpoints[0].models == ("m",)
    with pytest.raises(WorkflowError) as caught:
        wf.add_providers_to(Runtime())
    assert (caught.value.file, caught.value.line, caught.value.field) == (
        str(path), 3, "providers.primary.base_url")


async def test_arun_workflow_names_file_line_and_field(tmp_path: Path) -> None:
    # The Python API's run adds the file's providers as `agentloom run` does: an entry
    # only a runtime can refuse (no base_url of its own, none lent) names its line too.
    path = flow(tmp_path, "providers:\n  primary: {type: openai, models: [m]}\n")
    wf = load_workflow(path)
    async with Runtime(clock=FakeClock()) as runtime:
        with pytest.raises(WorkflowError) as caught:
            await arun_workflow(wf, clients=runtime)
    assert (caught.value.file, caught.value.line, caught.value.field) == (
        str(path), 3, "providers.primary.base_url")


def test_endpoint_from_config_keeps_its_plain_message() -> None:
    with pytest.raises(ConfigError) as caught:
        endpoint_from_config("p", {"type": "grpc", "base_url": "http://x"}, env={})
    assert not isinstance(caught.value, WorkflowError)
    assert str(caught.value).startswith("providers.p.type: unknown protocol 'grpc'")


async def test_a_map_body_runs_on_the_files_provider(tmp_path: Path) -> None:
    async with FakeOpenAIServer() as server, Runtime(clock=FakeClock()) as runtime:
        path = tmp_path / "flow.yaml"
        path.write_text(
            f"name: p\nproviders:\n  myproxy: {{base_url: '{server.openai_base_url}', "
            "api_key: k, models: [m]}\nprofiles:\n  fast: {provider: myproxy, model: m}\n"
            "state: {xs: [1, 2]}\nsteps:\n"
            "  - id: each\n    type: map\n    over: '{state.xs}'\n    steps:\n"
            "      - {id: a, type: llm_call, profile: fast, prompt: 'item {item}'}\n",
            encoding="utf-8")
        result = await arun_workflow(load_workflow(path), clients=runtime)
    assert result.ok, result.error
    assert [e.name for e in runtime.endpoints] == ["myproxy"]
