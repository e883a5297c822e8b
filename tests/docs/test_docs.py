"""Every code block of README.md and docs/ runs as written (see blocks.py for how each kind
is tested and the directives a page uses). A page's blocks run in order in one folder, so
a file one block writes is there for the commands below it; the fake OpenAI server of
`agentloom.testing` answers on loopback, or the embedded model where a page says so."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from blocks import Block, blocks_of, console_steps, matches

from agentloom.testing._server import FakeError, FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer

ROOT = Path(__file__).parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_PROVIDER_VARS = ("OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_", "OLLAMA_", "AGENTLOOM_")
_TIMEOUT = 120


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    fake = FakeOpenAIServer()
    fake.start_in_thread()
    yield fake
    fake.stop_thread()


class Page:
    """One page's folder, environment and record of what went wrong."""

    def __init__(self, path: Path, folder: Path, server: FakeOpenAIServer) -> None:
        self.path = path
        self.folder = folder
        self.server = server
        self.failures: list[str] = []
        self.last_stdout = ""
        shutil.copytree(ROOT / "examples", folder / "examples")
        base = {k: v for k, v in os.environ.items() if not k.startswith(_PROVIDER_VARS)}
        bin_dir = str(Path(sys.executable).parent)
        base["PATH"] = bin_dir + os.pathsep + base.get("PATH", "")
        base["NO_COLOR"] = "1"
        self.local_env = base
        self.fake_env = {**base, "OPENAI_API_KEY": "test-key",
                         "OPENAI_BASE_URL": server.openai_base_url}

    def fail(self, block: Block, why: str) -> None:
        self.failures.append(f"{block.where} ({block.lang}): {why}")

    def env(self, block: Block) -> dict[str, str]:
        return self.local_env if block.directives.get("env") == "local" else self.fake_env

    def shell(self, block: Block, command: str) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(["bash", "-c", command], cwd=self.folder,
                                  env=self.env(block), capture_output=True, text=True,
                                  timeout=_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:  # a command that never ends: one failure, not all
            return subprocess.CompletedProcess(command, -9, "", f"timed out after {_TIMEOUT}s")


def _run_block(page: Page, block: Block, previous: Block | None) -> None:
    d = block.directives
    if "skip" in d:
        if not d["skip"]:
            page.fail(block, "a skipped block must say why")
        return
    if "replies" in d:
        page.server.script(*(_reply(r.strip()) for r in d["replies"].split(" | ")))
    if "file" in d:
        (page.folder / d["file"]).write_text(_content(block), encoding="utf-8")
    if block.lang == "yaml":
        _yaml(page, block)
    elif block.lang == "python":
        _python(page, block)
    elif block.lang == "console":
        _console(page, block)
    elif block.lang in ("bash", "sh"):
        _bash(page, block)
    elif "output" in d:
        if previous is None or previous.lang != "python":
            page.fail(block, "`output` must follow a python block")
        elif not matches(block.text.splitlines(), page.last_stdout.splitlines()):
            page.fail(block, f"printed:\n{page.last_stdout}")


def _content(block: Block) -> str:
    """A first line `# NAME` naming the block's own file is its title, not its content."""
    first, _, rest = block.text.partition("\n")
    return rest if first.strip() == f"# {block.directives['file']}" else block.text


def _reply(text: str) -> FakeReply | FakeError:
    """`call NAME {json args}` is a tool call, `error STATUS` an HTTP error; anything else
    is the reply's text."""
    if text.startswith("call "):
        name, _, args = text[5:].partition(" ")
        return FakeReply(tool_calls=[(name, json.loads(args or "{}"))])
    if text.startswith("error ") and text[6:].isdigit():
        return FakeError(status=int(text[6:]))
    return FakeReply(text=text)


def _yaml(page: Page, block: Block) -> None:
    try:
        data = yaml.safe_load(block.text)
    except yaml.YAMLError as exc:
        page.fail(block, f"not YAML: {exc}")
        return
    if not (isinstance(data, dict) and "steps" in data):
        return
    from agentloom.errors import AgentLoomError
    from agentloom.workflow import load_workflow

    target = page.folder / block.directives.get("file", f"_block_{block.line}.yaml")
    if not target.exists():
        target.write_text(block.text, encoding="utf-8")
    try:
        load_workflow(target)
    except AgentLoomError as exc:
        if "invalid" not in block.directives:
            page.fail(block, f"does not load: {exc}")
    else:
        if "invalid" in block.directives:
            page.fail(block, "loads, though the page shows it as a bad file")


def _python(page: Page, block: Block) -> None:
    script = page.folder / f"_block_{block.line}.py"
    script.write_text(block.text, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script)], cwd=page.folder,
                          env=page.env(block), capture_output=True, text=True,
                          timeout=_TIMEOUT, check=False)
    page.last_stdout = proc.stdout
    if proc.returncode != 0:
        page.fail(block, f"exit {proc.returncode}:\n{proc.stderr[-2000:]}")


def _console(page: Page, block: Block) -> None:
    for command, expected in console_steps(block.text):
        proc = page.shell(block, command)
        printed = (proc.stdout + proc.stderr).splitlines()
        if not matches(expected, printed):
            page.fail(block, f"$ {command}\nexpected:\n" + "\n".join(expected)
                      + "\nprinted:\n" + "\n".join(printed))


def _bash(page: Page, block: Block) -> None:
    for raw in block.text.splitlines():
        command = raw.split(" #", 1)[0].strip()
        if not command or command.startswith("#"):
            continue
        proc = page.shell(block, command)
        if proc.returncode != 0:
            page.fail(block, f"$ {command}: exit {proc.returncode}\n{proc.stderr[-1500:]}")


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_page_blocks_run_as_written(path: Path, tmp_path: Path,
                                    server: FakeOpenAIServer) -> None:
    page = Page(path, tmp_path, server)
    previous: Block | None = None
    for block in blocks_of(path):
        _run_block(page, block, previous)
        previous = block
    assert not page.failures, "\n\n".join(page.failures)
