"""Build the conformance fixtures from public VCR cassettes (run by hand, never in CI).

The cassettes are the recorded live API traffic in pydantic/pydantic-ai's test suite
(`tests/**/cassettes/**/*.yaml`, MIT). Each HTTP exchange with a provider we speak becomes
one line (a JSON object) in `fixtures/<family>.jsonl`, after a first line that names the
source commit:

    {"id": "...", "source": "<cassette path>", "interaction": 0, "family": "anthropic",
     "vendor": "anthropic", "stream": false,
     "request": {"path": "/v1/messages", "body": {...}},
     "response": {"status": 200, "content_type": "...", "body": "<exact text>"}}

Streams keep their body as recorded (the SSE text); a JSON body stored parsed by the
cassette is written back as compact JSON. Request bodies keep their shape but long
strings (inline images, documents) are cut, and no header is kept, so no credential can
reach a fixture.

Usage:  python tools_extract.py <git-dir of a pydantic-ai mirror> [commit]
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

HERE = Path(__file__).parent
OUT = HERE / "fixtures"
MAX_RESPONSE = 24_000
MAX_STREAM = 100_000
"""A response body longer than these is left out: the corpus must stay small."""
PER_FOLDER = 30
"""At most this many plain (non-streamed) exchanges per cassette folder and family."""
_SKIP_FOLDERS = ("test_multimodal_tool_returns", "test_temporal", "test_dbos", "test_prefect")
"""Folders that repeat the same few exchanges (durable-execution wrappers, one multimodal
matrix): they add bulk, not kinds of reply."""
MAX_STRING = 400
"""Request strings are cut to this (inline media, long documents)."""

# (host, path suffix) -> (family, vendor)
_ROUTES: list[tuple[str, str, str, str]] = [
    ("api.anthropic.com", "/v1/messages", "anthropic", "anthropic"),
    ("api.openai.com", "/v1/chat/completions", "openai", "openai"),
    ("api.openai.com", "/v1/responses", "responses", "openai"),
    ("generativelanguage.googleapis.com", ":generateContent", "gemini", "gemini"),
    ("generativelanguage.googleapis.com", ":streamGenerateContent", "gemini", "gemini"),
    ("api.groq.com", "/chat/completions", "compat", "groq"),
    ("api.mistral.ai", "/chat/completions", "compat", "mistral"),
    ("openrouter.ai", "/chat/completions", "compat", "openrouter"),
    ("api.cerebras.ai", "/chat/completions", "compat", "cerebras"),
    ("ollama.com", "/v1/chat/completions", "compat", "ollama"),
    ("api.deepseek.com", "/chat/completions", "compat", "deepseek"),
]
# Exchanges whose reply is outside what we model (generated images as output).
_SKIP_WORDS = ("image_generation", "image_and_text_output", "multiple_images", "compaction")


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True,
                          capture_output=True, text=True).stdout


def _route(uri: str) -> tuple[str, str, str] | None:
    parts = urlsplit(uri)
    for host, suffix, family, vendor in _ROUTES:
        if parts.hostname == host and parts.path.endswith(suffix):
            return family, vendor, parts.path + (f"?{parts.query}" if parts.query else "")
    return None


def _cut(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= MAX_STRING else value[:MAX_STRING] + "...[cut]"
    if isinstance(value, list):
        return [_cut(v) for v in value]
    if isinstance(value, dict):
        return {k: _cut(v) for k, v in value.items()}
    return value


def _body(part: dict[str, Any]) -> tuple[str | None, Any]:
    """(raw text, parsed json) of a cassette request or response."""
    if "parsed_body" in part:
        return None, part["parsed_body"]
    raw = part.get("body")
    if isinstance(raw, dict):
        raw = raw.get("string")
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    return raw, None


def _header(headers: dict[str, Any], name: str) -> str:
    value = headers.get(name) or headers.get(name.title()) or [""]
    return str(value[0] if isinstance(value, list) else value)


def extract(git_dir: str, commit: str) -> dict[str, list[dict[str, Any]]]:
    files = [f for f in _git(git_dir, "ls-tree", "-r", "--name-only", commit).splitlines()
             if "/cassettes/" in f and f.endswith(".yaml")]
    out: dict[str, list[dict[str, Any]]] = {}
    counts: dict[tuple[str, str], int] = {}
    for path in sorted(files):
        if any(w in path for w in _SKIP_WORDS + _SKIP_FOLDERS):
            continue
        try:
            doc = yaml.safe_load(_git(git_dir, "show", f"{commit}:{path}"))
        except (subprocess.CalledProcessError, yaml.YAMLError):
            continue
        for i, exchange in enumerate((doc or {}).get("interactions") or []):
            if not isinstance(exchange, dict) or "request" not in exchange:
                continue
            request, response = exchange["request"], exchange["response"]
            routed = _route(request.get("uri", ""))
            if routed is None or request.get("method") != "POST":
                continue
            family, vendor, req_path = routed
            raw_req, req_body = _body(request)
            if req_body is None:
                try:
                    req_body = json.loads(raw_req or "")
                except ValueError:
                    continue
            raw, parsed = _body(response)
            text = raw if raw is not None else json.dumps(parsed, ensure_ascii=False,
                                                          separators=(",", ":"))
            content_type = _header(response.get("headers") or {}, "content-type")
            stream = "text/event-stream" in content_type or bool(req_body.get("stream")) \
                or "streamGenerateContent" in req_path
            if text is None or len(text.encode()) > (MAX_STREAM if stream else MAX_RESPONSE):
                continue
            folder = (family, path.rsplit("/", 2)[-2])
            if not stream:
                if counts.get(folder, 0) >= PER_FOLDER:
                    continue
                counts[folder] = counts.get(folder, 0) + 1
            name = path.rsplit("/", 1)[-1].removesuffix(".yaml")
            out.setdefault(family, []).append({
                "id": f"{vendor}/{name}#{i}",
                "source": path,
                "interaction": i,
                "family": family,
                "vendor": vendor,
                "stream": stream,
                "request": {"path": req_path, "body": _cut(req_body)},
                "response": {"status": response["status"]["code"],
                             "content_type": content_type, "body": text},
            })
    return out


def main() -> None:
    git_dir = sys.argv[1]
    commit = sys.argv[2] if len(sys.argv) > 2 else _git(git_dir, "rev-parse", "HEAD").strip()
    OUT.mkdir(exist_ok=True)
    for family, cases in extract(git_dir, commit).items():
        target = OUT / f"{family}.jsonl"
        lines = [json.dumps({"source_commit": commit}), *(
            json.dumps(case, ensure_ascii=False, separators=(",", ":")) for case in cases)]
        target.write_text("\n".join(lines) + "\n")
        print(f"{family}: {len(cases)} cases, {target.stat().st_size // 1024} KiB")


if __name__ == "__main__":
    main()
