"""Shared by the structured/conversation/agent step tests: each provider's fake server
wired to a real `Runtime` (real HTTP on 127.0.0.1), and the bodies it received."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentloom.providers._endpoints import vendor_endpoint
from agentloom.routing.runtime import Runtime
from agentloom.testing._server import FakeServer
from agentloom.testing.fake_anthropic import FakeAnthropicServer
from agentloom.testing.fake_gemini import FakeGeminiServer
from agentloom.testing.fake_ollama import FakeOllamaServer
from agentloom.testing.fake_openai import FakeOpenAIServer
from agentloom.workflow import arun_workflow, load_workflow

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


@dataclass(frozen=True)
class Vendor:
    name: str
    server: Callable[[], FakeServer]
    model: str
    url: Callable[[Any], str]


VENDORS = {
    "openai": Vendor("openai", FakeOpenAIServer, "gpt-4o-mini", lambda s: s.openai_base_url),
    "anthropic": Vendor("anthropic", FakeAnthropicServer, "claude-haiku-4-5",
                        lambda s: s.base_url),
    "gemini": Vendor("gemini", FakeGeminiServer, "gemini-2.5-flash", lambda s: s.base_url),
    "ollama": Vendor("ollama", FakeOllamaServer, "llama3.2:3b", lambda s: s.base_url),
}
ALL = sorted(VENDORS)


@asynccontextmanager
async def served(vendor: str) -> AsyncIterator[tuple[Any, Runtime]]:
    v = VENDORS[vendor]
    server = v.server()
    async with server:
        runtime = Runtime(endpoints=[vendor_endpoint(v.name, base_url=v.url(server),
                                                     api_key="k")])
        try:
            yield server, runtime
        finally:
            await runtime.aclose()


async def run_example(vendor: str, server: Any, runtime: Runtime, source: str | Path | Any,
                      **kwargs: Any) -> Any:
    """Run a workflow (a loaded one, a file or YAML text) on `vendor`'s model."""
    wf = load_workflow(source) if isinstance(source, str | Path) else source
    wf = wf.with_overrides(model=VENDORS[vendor].model, provider=vendor)
    return await arun_workflow(wf, clients=runtime, **kwargs)


def bodies(server: Any) -> list[dict[str, Any]]:
    return [r.json for r in server.requests]


def system_of(vendor: str, body: dict[str, Any]) -> str:
    """The system text a request carried, wherever its protocol puts it."""
    if vendor == "anthropic":
        system = body.get("system") or ""
        if isinstance(system, list):
            return "\n".join(b.get("text", "") for b in system)
        return str(system)
    if vendor == "gemini":
        parts = (body.get("systemInstruction") or {}).get("parts") or []
        return "\n".join(p.get("text", "") for p in parts)
    return "\n".join(str(m.get("content")) for m in body.get("messages", [])
                     if m.get("role") == "system")


def texts_of(vendor: str, body: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, text) of every non-system turn, in the protocol's own words."""
    out: list[tuple[str, str]] = []
    if vendor == "gemini":
        for c in body.get("contents", []):
            out.append((c.get("role", ""), "".join(p.get("text", "") for p in c["parts"])))
        return out
    for m in body.get("messages", []):
        if m.get("role") == "system":
            continue
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
        out.append((m.get("role", ""), str(content or "")))
    return out
