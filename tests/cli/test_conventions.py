"""The command line's conventions, through the CLI: JSON diagnostics, colour only where it
belongs, grouped help with examples, usage errors with a did-you-mean, read-only commands
that create nothing, and messages that say what is so."""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from pathlib import Path

import pytest

from agentloom.cli import main as cli_main
from tests.cli.test_commands import ROOT, agentloom
from tests.pty_run import run_on_a_pty

BAD = ("name: bad\nsteps:\n  - id: a\n    type: llm_call\n    prompt: 'Hi'\n"
       "    temprature: 0.2\n  - {id: b, type: llm_call, depends_on: [c], prompt: Bye}\n")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _bad(tmp_path: Path) -> str:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD, encoding="utf-8")
    return str(path)


def test_validate_json_gives_each_problem_as_data(tmp_path: Path) -> None:
    bad = _bad(tmp_path)
    out = agentloom("validate", bad, "--json")
    assert out.returncode == 1
    data = json.loads(out.stdout)
    assert data["valid"] is False
    assert data["problems"] == [
        {"file": bad, "line": 6, "field": "steps[0].temprature",
         "message": "unknown field 'temprature' in step 'a' (llm_call)",
         "hint": "did you mean 'temperature'?"},
        {"file": bad, "line": 7, "field": "steps[1].depends_on",
         "message": "step 'b' depends on unknown step 'c'", "hint": None}]
    ok = agentloom("validate", "examples/fan_out.yaml", "--json")
    assert ok.returncode == 0, ok.stderr
    plan = json.loads(ok.stdout)
    assert plan["valid"] is True and plan["problems"] == []
    assert plan["plan"][1] == ["for_beginners", "for_experts"]


def test_run_json_on_an_invalid_workflow_prints_json(tmp_path: Path) -> None:
    out = agentloom("run", _bad(tmp_path), "--json")
    assert out.returncode == 1
    data = json.loads(out.stdout)
    assert data["status"] == "invalid"
    assert data["error"].startswith("2 problems found in ")
    assert [p["line"] for p in data["problems"]] == [6, 7]


def _on_a_terminal(*args: str, env: dict[str, str] | None = None) -> str:
    """stderr of the command when it is a terminal (a pty), as read from the pty."""
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("OPENAI_", "ANTHROPIC_", "GEMINI_", "NO_COLOR", "AGENTLOOM_"))}
    base.update(env or {})
    base["TERM"] = "xterm"
    code, shown = run_on_a_pty([sys.executable, "-m", "agentloom.cli", *args], cwd=ROOT,
                               env=base, stdout=False)
    assert code == 2
    return shown.decode()


def test_colour_only_on_a_terminal_and_never_with_no_color() -> None:
    args = ("run", "examples/hello.yaml", "--state", "k")
    coloured = _on_a_terminal(*args)
    assert ANSI.search(coloured), coloured
    assert ANSI.sub("", coloured).strip() == "agentloom: error: --state 'k': expected KEY=VALUE"
    assert not ANSI.search(_on_a_terminal(*args, env={"NO_COLOR": "1"}))
    assert not ANSI.search(_on_a_terminal(*args, "--color", "never"))
    piped = agentloom(*args)
    assert not ANSI.search(piped.stderr)
    forced = agentloom("--color", "always", *args)
    assert ANSI.search(forced.stderr)
    bad = agentloom("--color=sometimes", *args)
    assert bad.returncode == 2
    assert bad.stderr.strip() == ("agentloom: error: --color 'sometimes': expected one of "
                                  "auto, always, never")


def test_help_is_grouped_with_examples() -> None:
    top = agentloom("--help").stdout
    for heading in ("Workflows:", "Durable runs:", "Many runs:", "examples:"):
        assert heading in top
    assert re.search(r"^  run +run a workflow file$", top, re.M)
    run = agentloom("run", "--help").stdout
    assert run.startswith("usage: agentloom run ")
    for heading in ("inputs:", "models:", "output:", "limits:", "traces:", "examples:"):
        assert heading in run, heading
    assert "agentloom run flow.yaml --provider local" in run
    assert "examples:\n  agentloom validate flow.yaml" in agentloom("validate", "--help").stdout


@pytest.mark.parametrize(("args", "expected"), [
    (["run", "examples/hello.yaml", "--provider", "opneai"],
     "agentloom: error: --provider 'opneai': unknown provider; did you mean 'openai'? "),
    (["rnu", "examples/hello.yaml"], "did you mean 'run'?"),
    (["run", "examples"], "agentloom: error: examples is a folder, not a workflow file; "
                          "give a file in it, e.g. examples/hello.yaml"),
])
def test_usage_errors_say_what_was_meant(args: list[str], expected: str) -> None:
    out = agentloom(*args)
    assert out.returncode == 2
    assert out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1
    assert expected in out.stderr


@pytest.mark.parametrize("special", ["fifo", "/dev/null"])
def test_a_workflow_path_that_is_no_regular_file_is_named_so(tmp_path: Path,
                                                               special: str) -> None:
    path = special
    if special == "fifo":
        path = str(tmp_path / "flow.yaml")
        os.mkfifo(path)  # no writer: opening it to read would block for ever
    for command in ("run", "validate"):
        out = agentloom(command, path, cwd=tmp_path)
        assert out.returncode == 2
        assert out.stderr.strip() == (
            f"agentloom: error: {path} is not a regular file; give a workflow file")
    assert agentloom("run", str(tmp_path / "gone.yaml")).stderr.strip().endswith(
        "workflow file not found: " + str(tmp_path / "gone.yaml"))


def test_runs_and_resume_create_no_store_where_you_stand(tmp_path: Path) -> None:
    assert agentloom("runs", cwd=tmp_path).stdout == \
        "no runs (no run store at .agentloom/runs.db)\n"
    assert agentloom("runs", "--json", cwd=tmp_path).stdout == "[]\n"
    resume = agentloom("resume", "nope", cwd=tmp_path)
    assert resume.returncode == 1
    assert "no run 'nope' in the store .agentloom/runs.db: there is no such file" \
        in resume.stderr
    assert agentloom("runs", "show", "nope", cwd=tmp_path).returncode == 1
    assert agentloom("runs", "--prune", cwd=tmp_path).returncode == 0
    assert list(tmp_path.iterdir()) == []
    from agentloom.cli._durable import DEFAULT_STORE
    from agentloom.store._sqlite import DEFAULT_PATH

    assert str(DEFAULT_PATH) == DEFAULT_STORE  # the file the store would have created


def test_prune_says_the_age_as_a_person_would(tmp_path: Path) -> None:
    from agentloom.testing.fake_openai import FakeOpenAIServer

    store = tmp_path / "runs.db"
    server = FakeOpenAIServer()
    server.start_in_thread()
    try:
        run = agentloom("run", "examples/hello.yaml", "--store", str(store), "--model",
                        "gpt-4o-mini", env={"OPENAI_API_KEY": "k",
                                            "OPENAI_BASE_URL": server.openai_base_url})
    finally:
        server.stop_thread()
    assert run.returncode == 0, run.stderr
    out = agentloom("runs", "--prune", "--store", str(store))
    assert out.stdout == "pruned 0 finished runs older than 30 days\n"
    out = agentloom("runs", "--prune", "--older-than", "12h", "--store", str(store))
    assert out.stdout == "pruned 0 finished runs older than 12 hours\n"


def test_a_webhook_that_does_not_resolve_is_not_told_to_allow_internal_targets(
        tmp_path: Path, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:
    flow = tmp_path / "gate.yaml"
    flow.write_text("name: gate\nsteps:\n  - {id: ok, type: approval_gate, message: Go?, "
                    "notify: {url: 'http://hooks.example.invalid/x'}}\n"
                    "  - {id: local, type: approval_gate, message: Go?, "
                    "notify: {url: 'http://127.0.0.1:9/x'}}\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="agentloom.workflow.approval_gate"):
        code = cli_main(["run", str(flow), "--store", str(tmp_path / "r.db")])
    assert code == 3, capsys.readouterr().err
    by_step = {r.getMessage().split("'")[1]: r.getMessage() for r in caplog.records}
    assert "cannot resolve 'hooks.example.invalid'" in by_step["ok"]
    assert "allow_internal_webhook_targets" not in by_step["ok"]
    assert "allow_internal_webhook_targets" in by_step["local"]


def test_example_comments_cite_the_docs_not_the_spec() -> None:
    for path in sorted((ROOT / "examples").iterdir()):
        if path.suffix in (".yaml", ".py"):
            assert not re.search(r"\bspec \d", path.read_text(encoding="utf-8")), path.name


def test_the_docs_list_every_exit_code() -> None:
    from agentloom.cli import _exit

    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    codes = {v for k, v in vars(_exit).items() if k.startswith("EXIT_")}
    listed = {int(c) for c in re.findall(r"^\| `(\d+)` \|", page, re.M)}
    assert listed == codes
