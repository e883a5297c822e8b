"""The public AgentLoom's own engine, run side by side with ours (the differential tests).

`public_venv()` makes (once, then reuses) a venv outside the repository with
`agentloom==0.4.0` from the registry, its CLI at `<venv>/bin/agentloom`. `FakeFleet` runs
one loopback fake server per wire protocol with a deterministic responder, so the same
prompt gets the same reply and token counts whichever engine sends it; `env_for` gives
each engine the variables that point its providers at those servers (the two engines
spell base URLs differently).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentloom.testing import (
    FakeAnthropicServer,
    FakeGeminiServer,
    FakeOllamaServer,
    FakeOpenAIServer,
    FakeReply,
)

PUBLIC_VERSION = "0.4.0"
REPO = Path(__file__).resolve().parents[2]


def public_venv() -> Path:
    """The venv holding the public engine; created and installed on first use."""
    root = Path(os.environ.get("AGENTLOOM_PUBLIC_VENV") or Path.home() / ".cache" /
                "agentloom-tests" / f"public-agentloom-{PUBLIC_VERSION}")
    cli = root / "bin" / "agentloom"
    marker = root / ".installed"
    if cli.exists() and marker.exists():
        return root
    if not (root / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=120)
    done = subprocess.run(
        [str(root / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
         f"agentloom=={PUBLIC_VERSION}"], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"pip install agentloom=={PUBLIC_VERSION} into {root} failed:\n"
                           f"{done.stderr[-2000:]}")
    marker.write_text(PUBLIC_VERSION)
    return root


def _last_user_text(body: Any) -> str:
    """The last user turn's text in any of the four wire formats."""
    if not isinstance(body, dict):
        return ""
    turns = body.get("messages") or body.get("contents") or []
    for turn in reversed(turns if isinstance(turns, list) else []):
        if not isinstance(turn, dict) or turn.get("role") not in ("user", None):
            continue
        content = turn.get("content", turn.get("parts"))
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def responder(body: Any) -> FakeReply:
    """The same reply for the same prompt: its first words back, tokens by word count."""
    text = " ".join(_last_user_text(body).split())
    reply = f"reply to: {text[:60]}"
    return FakeReply(text=reply, input_tokens=max(1, len(text.split())),
                     output_tokens=len(reply.split()))


@dataclass
class FakeFleet:
    openai: Any
    anthropic: Any
    gemini: Any
    ollama: Any

    @classmethod
    def start(cls) -> FakeFleet:
        return cls(*(server(responder=responder).start_in_thread() for server in (
            FakeOpenAIServer, FakeAnthropicServer, FakeGeminiServer, FakeOllamaServer)))

    def stop(self) -> None:
        for server in (self.openai, self.anthropic, self.gemini, self.ollama):
            server.stop_thread()

    def env_for(self, engine: str) -> dict[str, str]:
        keys = {"OPENAI_API_KEY": "sk-fake-openai-key-000000", "ANTHROPIC_API_KEY":
                "sk-ant-fake-key-000000", "GOOGLE_API_KEY": "AIza-fake-google-key"}
        if engine == "public":
            return {**keys, "OPENAI_BASE_URL": f"{self.openai.base_url}/v1",
                    "ANTHROPIC_BASE_URL": f"{self.anthropic.base_url}/v1",
                    "GOOGLE_BASE_URL": f"{self.gemini.base_url}/v1beta",
                    "OLLAMA_BASE_URL": self.ollama.base_url}
        return {**keys, "OPENAI_BASE_URL": f"{self.openai.base_url}/v1",
                "ANTHROPIC_BASE_URL": self.anthropic.base_url,
                "GEMINI_BASE_URL": self.gemini.base_url, "OLLAMA_HOST": self.ollama.base_url}


def _clean_env(extra: dict[str, str], home: Path, *, ours: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))
           and not k.startswith(("AGENTLOOM_", "OLLAMA_", "OTEL_", "PYTHON"))}
    env.update(extra, HOME=str(home), NO_COLOR="1", TERM="dumb", COLUMNS="200",
               AGENTLOOM_RUNS_DIR=str(home / "agentloom_runs"))
    if ours:
        env["PYTHONPATH"] = str(REPO)
    return env


def _json_of(stdout: str) -> dict[str, Any] | None:
    """Their `--json` prints a banner line before the JSON; ours prints only JSON."""
    start = stdout.find("{")
    if start < 0:
        return None
    try:  # and a paused run's advice after it
        value, _end = json.JSONDecoder().raw_decode(stdout[start:])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


@dataclass
class Outcome:
    engine: str
    code: int
    status: str
    state: dict[str, Any]
    steps: dict[str, dict[str, Any]]
    """Per step: status and total tokens."""
    tokens: int | None
    stderr: str


DRIVER = Path(__file__).with_name("differential_driver.py")
_NO_INTERNET = {"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
                "ALL_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1,localhost"}
"""Their engine honours the proxy variables (httpx): anything but loopback goes to a
closed port, so no example of theirs reaches the internet from a test."""


def _outcome(engine: str, line: dict[str, Any]) -> Outcome:
    data = _json_of(line.get("out", "")) or {}
    if engine == "public":
        results, state = data.get("step_results") or {}, data.get("final_state") or {}
        steps = {sid: {"status": r.get("status"),
                       "tokens": (r.get("token_usage") or {}).get("total_tokens")}
                 for sid, r in results.items()}
        tokens = data.get("total_tokens")
    else:
        state = data.get("state") or {}
        steps = {sid: {"status": r.get("status"), "tokens": (r.get("tokens") or {}).get("total")}
                 for sid, r in (data.get("steps") or {}).items()}
        tokens = data.get("tokens")
    status = str(data["status"]) if "status" in data else "refused"
    return Outcome(engine, int(line.get("code", -1)), status, state, steps, tokens,
                   (line.get("err") or "") + line.get("out", "")[-800:])


def run_batch(engine: str, files: list[str], *, cwd: Path, env: dict[str, str],
              processes: int, timeout: float = 120) -> dict[str, Outcome]:
    """Run every file through one engine's CLI, split over `processes` drivers at once."""
    python = str(public_venv() / "bin" / "python") if engine == "public" else sys.executable
    extra = {**env, **(_NO_INTERNET if engine == "public" else {})}
    full_env = _clean_env(extra, cwd, ours=engine == "ours")
    shares = [files[i::processes] for i in range(processes) if files[i::processes]]
    procs = [subprocess.Popen([python, str(DRIVER), engine, *share], cwd=cwd, env=full_env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for share in shares]
    out: dict[str, Outcome] = {}
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=timeout)
        for raw in stdout.splitlines():
            if raw.startswith("{"):
                line = json.loads(raw)
                out[line["file"]] = _outcome(engine, line)
        if proc.returncode != 0:
            raise RuntimeError(f"{engine} driver failed ({proc.returncode}): {stderr[-2000:]}")
    return out


def run_ours(args: list[str], *, cwd: Path, env: dict[str, str],
             timeout: float = 60) -> Outcome:
    """One command of our CLI (`--json` added), as a user types it."""
    done = subprocess.run([sys.executable, "-m", "agentloom.cli", *args, "--json"], cwd=cwd,
                          env=_clean_env(env, cwd, ours=True), capture_output=True, text=True,
                          timeout=timeout)
    return _outcome("ours", {"code": done.returncode, "out": done.stdout, "err": done.stderr})
