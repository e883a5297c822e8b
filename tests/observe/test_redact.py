"""Redaction: state_schema globs, secret values, fixed patterns, nested values and models,
and a scan of every artefact a run leaves (checkpoint store file, recording, a JSON dump)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from pydantic import BaseModel

from agentloom.messages import Message, ToolCallPart
from agentloom.redact import REDACTED, Redactor

OPENAI_KEY = "sk-proj-AbCdEf0123456789AbCdEf0123456789"
ANTHROPIC_KEY = "sk-ant-api03-ZZZZyyyyXXXXwwww1234"
GOOGLE_KEY = "AIzaSyA1234567890abcdefghijklmnopqrstu"

SCHEMA = {"api_token": {"redact": True}, "creds.*": {"redact": True},
          "*_password": {"redact": True}, "topic": {"redact": False}, "notes": {"type": "str"}}


class Account(BaseModel):
    name: str
    db_password: str
    token_hint: str


@dataclass(frozen=True)
class Endpointish:
    base_url: str
    api_key: str | None


def test_schema_globs_reach_nested_dicts_lists_and_models() -> None:
    state = {
        "topic": "queues",
        "api_token": "tok-123456",
        "creds": {"user": "bob", "pin": "4321"},
        "people": [{"name": "ann", "admin_password": "pw-ann-999"}],
        "account": Account(name="acme", db_password="pw-db-777", token_hint="x"),
        "price": Decimal("1.5"),
    }
    out = Redactor.from_state_schema(SCHEMA).redact_state(state)
    assert out["topic"] == "queues" and out["api_token"] == REDACTED
    assert out["creds"] == {"user": REDACTED, "pin": REDACTED}
    assert out["people"] == [{"name": "ann", "admin_password": REDACTED}]
    assert out["account"] == {"name": "acme", "db_password": REDACTED, "token_hint": "x"}
    assert out["price"] == Decimal("1.5")
    assert state["api_token"] == "tok-123456", "the live state is not changed"


def test_values_of_secret_keys_are_caught_elsewhere() -> None:
    state = {"api_token": "tok-123456", "prompt": "call with tok-123456 please"}
    r = Redactor.from_state_schema(SCHEMA, state=state)
    assert r.redact_state(state)["prompt"] == f"call with {REDACTED} please"
    assert r.redact_text("log: tok-123456") == f"log: {REDACTED}"


def test_explicit_secrets_longest_first_and_inside_messages() -> None:
    r = Redactor(secrets=["abcdef", "abcdef-longer"])
    assert r.redact_text("x abcdef-longer y abcdef") == f"x {REDACTED} y {REDACTED}"
    msg = Message(role="assistant", parts=(ToolCallPart(id="c", name="t",
                                                        arguments='{"k": "abcdef"}'),))
    out = r.redact_state({"conv": [msg]})["conv"][0]
    assert isinstance(out, Message)
    assert out.parts[0].arguments == f'{{"k": "{REDACTED}"}}'  # type: ignore[union-attr]


def test_api_key_patterns_always_on() -> None:
    r = Redactor()
    text = (f"openai {OPENAI_KEY} anthropic {ANTHROPIC_KEY} google {GOOGLE_KEY} "
            "Authorization: Bearer abc.def.ghi-123 x-api-key: 0123456789abcdef "
            "url https://g.example/v1/models?key=SECRETKEY123&alt=sse")
    out = r.redact_text(text)
    for secret in (OPENAI_KEY, ANTHROPIC_KEY, GOOGLE_KEY, "abc.def.ghi-123",
                   "0123456789abcdef", "SECRETKEY123"):
        assert secret not in out, secret
    assert "alt=sse" in out and "Bearer [REDACTED]" in out
    assert r.redact_text("the sky is blue") == "the sky is blue"


def test_headers_and_sensitive_field_names() -> None:
    r = Redactor()
    headers = {"Authorization": "Bearer xyz", "x-goog-api-key": "k", "X-Api-Key": "k2",
               "content-type": "application/json"}
    assert r.redact_headers(headers) == {"Authorization": REDACTED, "x-goog-api-key": REDACTED,
                                         "X-Api-Key": REDACTED,
                                         "content-type": "application/json"}
    out = r.redact_state({"config": {"api_key": "plain-value", "model": "m"},
                          "ep": Endpointish(base_url="https://x", api_key="plain-value")})
    assert out["config"] == {"api_key": REDACTED, "model": "m"}
    assert out["ep"] == Endpointish(base_url="https://x", api_key=REDACTED)


async def test_no_artefact_of_a_run_holds_the_secret(tmp_path: Path) -> None:
    """Checkpoints (SQLite file, WAL included), a recording and a --json-like dump, all
    written through the redactor, contain neither the key nor the state secret."""
    from agentloom.recording import Recorder, RecordTransport, call_context
    from agentloom.store import Checkpoint, SqliteStore
    from agentloom.transport import HttpRequest

    state = {"api_token": "tok-SECRET-42", "question": "use tok-SECRET-42 to log in"}
    r = Redactor.from_state_schema(SCHEMA, state=state, secrets=[OPENAI_KEY])

    async with SqliteStore(tmp_path / "runs.db") as store:
        await store.create_run("r1", "flow", "h", r.redact_state(state))
        await store.save_checkpoint("r1", Checkpoint(
            state=r.redact_state(state),
            step_results={"s": r.redact_state({"output": f"echo {OPENAI_KEY}"})}))

    from aiohttp import web

    from agentloom.http._aiohttp import AiohttpTransport

    async def echo_secret(request: web.Request) -> web.Response:  # a server that leaks
        return web.json_response({"text": "ok tok-SECRET-42"},
                                 headers={"x-api-key": OPENAI_KEY})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", echo_secret)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    recorder = Recorder(tmp_path / "rec.json", redactor=r)
    transport = RecordTransport(AiohttpTransport(), recorder)
    try:
        with call_context(step_id="s", turn=1):
            await transport.handle(HttpRequest(
                method="POST", url=f"http://127.0.0.1:{port}/v1/chat/completions",
                headers={"authorization": f"Bearer {OPENAI_KEY}"},
                body=json.dumps({"messages": [{"role": "user",
                                               "content": state["question"]}]}).encode()))
    finally:
        await transport.aclose()
        await runner.cleanup()
    (tmp_path / "result.json").write_text(json.dumps(r.redact_state({"final_state": state})))

    scanned = 0
    for path in tmp_path.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            scanned += 1
            for secret in (b"tok-SECRET-42", OPENAI_KEY.encode()):
                assert secret not in data, f"{secret!r} leaked into {path.name}"
    assert scanned >= 3


def test_short_secret_values_are_not_matched_by_content() -> None:
    from agentloom.redact import Redactor

    r = Redactor.from_state_schema({"pin": {"redact": True}}, state={"pin": "42"},
                                   secrets=["k", "sk-live-abcdef"])
    # "k" and "42" would gut ordinary text; the key is still redacted by name.
    assert r.redact_text("skipped 42 steps, key sk-live-abcdef") == \
        "skipped 42 steps, key [REDACTED]"
    assert r.redact_state({"pin": "42", "note": "room 42"}) == {
        "pin": "[REDACTED]", "note": "room 42"}


def test_dotted_globs_match_under_a_prefix_and_secret_steps_by_name() -> None:
    from agentloom.redact import Redactor

    r = Redactor(key_globs=["x.date", "creds.*"])
    report = {"state": {"x": {"date": "d", "place": "Oslo"}, "creds": {"token": "t"}},
              "date": "kept: not under x"}
    assert r.redact_state(report) == {
        "state": {"x": {"date": "[REDACTED]", "place": "Oslo"},
                  "creds": {"token": "[REDACTED]"}},
        "date": "kept: not under x"}
    assert r.path_is_secret("x.date") and r.path_is_secret("creds.token.inner")
    assert not r.path_is_secret("x.place")
    r.mark_secret_step("plan")
    steps = {"steps": {"plan": {"output": "42", "text": "42", "reasoning_content": "why",
                                "model": "m"}, "other": {"output": "ok"}}}
    assert r.redact_state(steps) == {"steps": {
        "plan": {"output": "[REDACTED]", "text": "[REDACTED]",
                 "reasoning_content": "[REDACTED]", "model": "m"},
        "other": {"output": "ok"}}}


def test_a_path_under_a_secret_top_level_key_is_secret() -> None:
    # `report` is secret, so is every path that starts with it; the key alone, too.
    r = Redactor(key_globs=["report"])
    assert r.path_is_secret("report") and r.path_is_secret("report.summary")
    assert r.path_is_secret("report.summary.body")
    assert not r.path_is_secret("reports.summary") and not r.path_is_secret("x.report2")
    # A glob with a wildcard never hides our own token counts, but a count kept under a
    # secret key is hidden with it (the key above it is what matched).
    counts = Redactor(key_globs=["secret*"])
    assert counts.path_is_secret("secrets.input_tokens")
    assert not counts.path_is_secret("usage.input_tokens")


def test_open_prefix_is_the_longest_end_that_begins_a_secret() -> None:
    # What a stream printer holds back: checked against the plain definition on many
    # texts, overlapping and repetitive secrets included.
    import random

    secrets = ["tok-SECRET-123", "tok-SEC", "abcabcabd", "aaaaaaab"]
    redactor = Redactor(secrets=secrets)

    def plain(text: str) -> int:
        return max((n for s in secrets for n in range(1, min(len(s), len(text) + 1))
                    if s.startswith(text[len(text) - n:])), default=0)

    rng = random.Random(7)
    for _ in range(5000):
        text = "".join(rng.choice("abctoSEK-123 ") for _ in range(rng.randint(0, 20)))
        assert redactor.open_prefix(text) == plain(text), text
    assert redactor.open_prefix("say tok-SECRET-12") == len("tok-SECRET-12")
    assert redactor.open_prefix("say tok-SECRET-123") == 0  # whole: redacted, not held
    assert Redactor().open_prefix("anything") == 0
