"""The `agentloom` command, run as a real subprocess: usage errors, validate, run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def agentloom(*args: str, env: dict[str, str] | None = None,
              cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_", "AGENTLOOM_"))}
    base.update(env or {})
    return subprocess.run([sys.executable, "-m", "agentloom.cli", *args], capture_output=True,
                          text=True, env=base, cwd=cwd or ROOT, timeout=60)


def test_help_is_light() -> None:
    code = ("import sys\nfrom agentloom.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('pydantic', 'aiohttp', 'yaml', 'rich') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=60)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_python_dash_m_agentloom_is_the_command() -> None:
    # `python -m agentloom` (as `python -m pip`) is the same command, usage errors included.
    def both(*args: str) -> list[tuple[int, str, str]]:
        return [(p.returncode, p.stdout, p.stderr) for p in (
            subprocess.run([sys.executable, "-m", module, *args], capture_output=True,
                           text=True, cwd=ROOT, timeout=60)
            for module in ("agentloom", "agentloom.cli"))]

    (code, out, _), again = both("--version")
    assert code == 0 and out.startswith("agentloom ") and again[:2] == (code, out)
    (code, _, err), again = both("run", "examples/hello.yaml", "--bogus")
    assert code == 2 and "--bogus" in err and again == (code, "", err)


@pytest.mark.parametrize("args", [
    ["run", "examples/hello.yaml", "--state", "k"],
    ["run", "examples/hello.yaml", "--state", "=v"],
    ["run", "examples/hello.yaml", "--bogus"],
    ["run", "examples/hello.yaml", "--timeout", "soon"],
    ["run", "examples/hello.yaml", "--timeout", "-1"],
    ["run", "no/such/file.yaml"],
    ["validate"],
    ["frobnicate"],
])
def test_usage_errors_are_one_line_exit_2(args: list[str]) -> None:
    out = agentloom(*args)
    assert out.returncode == 2, out.stderr
    assert out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1
    assert "error" in out.stderr


def test_bad_state_message() -> None:
    out = agentloom("run", "examples/hello.yaml", "--state", "k")
    assert out.stderr.strip() == "agentloom: error: --state 'k': expected KEY=VALUE"
    deep = agentloom("run", "examples/hello.yaml", "--state", ".".join(["a"] * 5000) + "=1")
    assert deep.returncode == 2  # the state every walk overflowed the stack on is refused
    assert len(deep.stderr.strip().splitlines()) == 1 and len(deep.stderr) < 300
    assert deep.stderr.strip().endswith("...: more than 64 parts")


def test_validate_ok_prints_plan() -> None:
    out = agentloom("validate", "examples/fan_out.yaml")
    assert out.returncode == 0, out.stderr
    assert "valid workflow 'fan-out', 4 steps" in out.stdout
    assert "2. for_beginners (llm_call after outline); for_experts (llm_call after outline)" \
        in out.stdout


def test_validate_lists_every_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nsteps:\n"
                   "  - {id: a, type: llm_call, prompt: '{state.x', temprature: 1}\n"
                   "  - {id: b, type: llm_call, prompt: p, depends_on: [c]}\n"
                   "  - {id: c, type: llm_call, prompt: p, depends_on: [b]}\n")
    out = agentloom("validate", str(bad))
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert lines[-1] == f"3 problems found in {bad}"
    assert f"{bad}:3: Prompt template error: step 'a', prompt" in out.stderr
    assert f"{bad}:3: unknown field 'temprature' in step 'a' (llm_call); " \
           "did you mean 'temperature'?" in out.stderr
    assert "dependency cycle: " in out.stderr


@pytest.fixture
def fake_openai() -> Iterator[object]:
    from agentloom.testing.fake_openai import FakeOpenAIServer

    server = FakeOpenAIServer(responder=lambda body: _reply(body))
    server.start_in_thread()
    try:
        yield server
    finally:
        server.stop_thread()


def _reply(body: dict) -> object:  # type: ignore[type-arg]
    from agentloom.testing._server import FakeReply

    return FakeReply(text="reply to: " + body["messages"][-1]["content"][:20])


def _env(server: object) -> dict[str, str]:
    return {"OPENAI_API_KEY": "test-key",
            "OPENAI_BASE_URL": server.openai_base_url}  # type: ignore[attr-defined]


def test_run_json_is_only_json(fake_openai: object, tmp_path: Path) -> None:
    state_file = tmp_path / "state.json"
    state_file.write_text(json.dumps({"topic": "from file"}))
    out = agentloom("run", "examples/fan_out.yaml", "--json", "--model", "gpt-4o-mini",
                    "--state-file", str(state_file), "--state", "topic=cli wins",
                    env=_env(fake_openai))
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["status"] == "success"
    assert set(data["steps"]) == {"outline", "for_beginners", "for_experts", "merge"}
    step = data["steps"]["outline"]
    assert step["model"] == "gpt-4o-mini" and step["provider"] == "openai"
    assert step["finish_reason"] == "stop"
    assert step["tokens"]["total"] == 19
    assert data["state"]["topic"] == "cli wins"
    assert data["outputs"]["summary"].startswith("reply to:")


def test_run_human_output_and_stream(fake_openai: object) -> None:
    out = agentloom("run", "examples/hello.yaml", "--model", "gpt-4o-mini", "--stream",
                    "--state", "name=Ada", env=_env(fake_openai))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "reply to: Write a one-sentence"
    assert lines[-1].startswith("success · 1 step (1 success) · gpt-4o-mini via openai · "
                                "19 tokens · ")


def test_run_failure_exits_1(fake_openai: object, tmp_path: Path) -> None:
    from agentloom.testing._server import FakeError

    fake_openai.script(FakeError(status=401, body="bad key"))  # type: ignore[attr-defined]
    out = agentloom("run", "examples/hello.yaml", "--model", "gpt-4o-mini", "--json",
                    env=_env(fake_openai))
    assert out.returncode == 1
    data = json.loads(out.stdout)
    assert data["status"] == "failed"
    assert data["steps"]["greet"]["attempts"] == 1
    assert "401" in data["steps"]["greet"]["error"]


def test_run_invalid_file_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nsteps:\n  - {id: a, type: llm_call, prompt: p, ouptut: x}\n")
    out = agentloom("run", str(bad))
    assert out.returncode == 1
    assert "did you mean 'output'?" in out.stderr


def test_tools_flag_registers_python_tools(tmp_path: Path) -> None:
    tools = tmp_path / "my_tools.py"
    tools.write_text(
        "from agentloom.tools import tool\n\n"
        "@tool\n"
        "def shout(text: str) -> str:\n"
        "    \"\"\"Upper-case a text.\"\"\"\n"
        "    return text.upper()\n")
    flow = tmp_path / "flow.yaml"
    flow.write_text("name: t\nstate: {word: hello}\nsteps:\n"
                    "  - id: s\n    type: tool\n    tool_name: shout\n"
                    "    tool_args: {text: '{state.word} there'}\n    output: loud\n")
    out = agentloom("run", str(flow), "--tools", str(tools), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["state"]["loud"] == "HELLO THERE"


def test_console_script_exists_and_validates() -> None:
    script = Path(sys.executable).parent / "agentloom"
    if not script.exists():
        pytest.skip("console script not installed")
    out = subprocess.run([str(script), "validate", "examples/hello.yaml"], capture_output=True,
                         text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0 and "valid workflow 'hello'" in out.stdout


def test_schema_validates_every_compat_example() -> None:
    import jsonschema
    import yaml

    out = agentloom("schema")
    assert out.returncode == 0
    schema = json.loads(out.stdout)
    validator = jsonschema.Draft202012Validator(schema)
    files = sorted(Path("/work/shared/compat/agentloom-examples").glob("*.yaml"))
    files += sorted(EXAMPLES.glob("*.yaml"))
    for path in files:
        errors = list(validator.iter_errors(yaml.safe_load(path.read_text())))
        assert not errors, (path.name, errors[0].message)
    typo = {"name": "x", "steps": [{"id": "a", "type": "llm_call", "prompt": "p",
                                    "temprature": 1}]}
    assert list(validator.iter_errors(typo))


def test_timeout_flag_is_a_run_deadline() -> None:
    from agentloom.testing.fake_openai import FakeOpenAIServer

    server = FakeOpenAIServer(latency=5.0)
    server.start_in_thread()
    try:
        out = agentloom("run", "examples/hello.yaml", "--model", "gpt-4o-mini", "--json",
                        "--timeout", "0.2", env=_env(server))
    finally:
        server.stop_thread()
    assert out.returncode == 1
    data = json.loads(out.stdout)
    assert data["status"] == "deadline_exceeded"
    assert data["steps"]["greet"]["status"] == "cancelled"
    assert data["duration_seconds"] < 2


def test_library_imports_stay_light() -> None:
    code = ("import sys, agentloom, agentloom.workflow\n"
            "assert callable(agentloom.load_workflow)\n"
            "print(sorted(m for m in ('pydantic', 'aiohttp') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code.replace(
        "assert callable(agentloom.load_workflow)\n", "")], capture_output=True, text=True,
        cwd=ROOT, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
