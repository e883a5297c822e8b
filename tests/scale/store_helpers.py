"""Helpers of the durable-batch tests: a fake OpenAI server that can hold chosen requests,
inputs whose prompts name them, and what the server was asked."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from scale_helpers import echo_reply

from agentloom.testing.fake_openai import FakeOpenAIServer


class HoldingServer(FakeOpenAIServer):
    """Echoes the prompt; a request whose prompt contains one of `hold` hangs until
    `release()` (the client is cancelled or killed meanwhile)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(responder=echo_reply, **kwargs)
        self.hold: tuple[str, ...] = ()

    async def record(self, request: Any) -> Any:
        body = await super().record(request)
        prompt = prompt_of(body)
        while self.hold and any(h in prompt for h in self.hold):
            await asyncio.sleep(0.01)
        return body

    def release(self) -> None:
        self.hold = ()

    def prompts(self, since: int = 0) -> list[str]:
        return [prompt_of(r.json) for r in self.requests[since:]]


def prompt_of(body: Any) -> str:
    try:
        return str(body["messages"][-1]["content"])
    except (KeyError, IndexError, TypeError):
        return ""


def write_docs(path: Path, n: int) -> Path:
    """Inputs `d00`.. with text `doc00|`..: the `|` keeps `doc1|` from matching `doc10|`."""
    lines = [json.dumps({"id": f"d{i:02d}", "text": f"doc{i:02d}|"}) for i in range(n)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def lines_of(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]
