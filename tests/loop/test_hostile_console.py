"""`ConsoleObserver` prints names a model chose (the tools it calls): a name holding
terminal escape sequences is shown as text, never obeyed, and a 10 KB name is cut."""

from __future__ import annotations

import io

from openai_thread import agent_env

from agentloom import Agent, ConsoleObserver
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer

HOSTILE = "get\x1b]0;PWNED\x07\x1b[2J\x1b]52;c;ZWNobyBwd25lZA==\x07\x9b6n\u202e\n[agentloom] fake"


def lookup(city: str) -> str:
    """Look a city up."""
    return city


def test_a_tool_name_with_escape_sequences_is_printed_as_text(
        openai_server: FakeOpenAIServer) -> None:
    openai_server.script(FakeReply(tool_calls=[(HOSTILE, {"city": "x"})]), "done")
    out = io.StringIO()
    with Agent.from_env(agent_env(openai_server), tools=[lookup],
                        observer=ConsoleObserver(out)) as agent:
        assert agent.run_result("?").text == "done"
    shown = out.getvalue()
    assert not any(ch in shown for ch in "\x1b\x07\x9b\u202e")
    # One line per callback: the name's newline can't forge a line of its own.
    assert shown.count("\n") == 5 and "\n[agentloom] fake" not in shown
    assert "tool get\\x1b]0;PWNED\\x07\\x1b[2J" in shown and "\\u202e\\n[agentloom] fake" in shown


def test_a_10_kb_tool_name_is_cut(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(FakeReply(tool_calls=[("t" * 10_000, {})]), "done")
    out = io.StringIO()
    with Agent.from_env(agent_env(openai_server), tools=[lookup],
                        observer=ConsoleObserver(out)) as agent:
        agent.run_result("?")
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) < 200
    assert "[+9900 chars]" in lines[1]
