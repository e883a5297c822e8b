"""`conversation` and `speaker` on llm_call steps, end to end: the spec's two-turn chat
and planner/critic examples against every provider's fake server (history, speaker
names per provider), trimming through a step, write-back only on success, attachments
with the turn only, and the load-time refusals."""

from __future__ import annotations

import json
from typing import Any

import pytest
from servers_for_steps import ALL, EXAMPLES, bodies, run_example, served, system_of, texts_of

from agentloom.testing._server import FakeError, FakeReply
from agentloom.workflow import StepStatus, load_workflow_text
from agentloom.workflow.load.problems import WorkflowProblems


@pytest.mark.parametrize("vendor", ALL)
async def test_two_turn_chat_on_every_provider(vendor: str) -> None:
    async with served(vendor) as (server, runtime):
        server.script(FakeReply(text="Try Typer."), FakeReply(text="Click, for larger apps."))
        result = await run_example(vendor, server, runtime, EXAMPLES / "chat.yaml")
        first, second = bodies(server)
    assert result.status.value == "success", result.error
    chat = result.state["chat"]
    assert [(m["role"], m["content"]) for m in chat["messages"]] == [
        ("system", "You are a concise, cheerful assistant."),
        ("user", "Recommend one Python library for CLI apps."),
        ("assistant", "Try Typer."),
        ("user", "Any second choice for larger apps?"),
        ("assistant", "Click, for larger apps."),
    ]
    assert chat["token_budget"] == 800 and chat["trim_policy"] == "drop_pairs"
    assert result.state["reply_1"] == "Try Typer."
    assert system_of(vendor, first) == "You are a concise, cheerful assistant."
    # The second turn is answered from the whole conversation.
    turns = texts_of(vendor, second)
    assert [t for _, t in turns] == ["Recommend one Python library for CLI apps.",
                                     "Try Typer.", "Any second choice for larger apps?"]


@pytest.mark.parametrize("vendor", ALL)
async def test_planner_and_critic_speak_in_one_conversation(vendor: str) -> None:
    async with served(vendor) as (server, runtime):
        server.script(FakeReply(text="Ship it behind a flag to 5% first."),
                      FakeReply(text="The weakest point: no rollback plan."))
        result = await run_example(vendor, server, runtime, EXAMPLES / "speakers.yaml")
        planner, critic = bodies(server)
    assert result.status.value == "success", result.error
    stored = result.state["debate"]["messages"]
    assert [(m["role"], m.get("name")) for m in stored] == [
        ("user", None), ("assistant", "alice"), ("assistant", "bob")]
    # Each speaker's system prompt applies to its own turn only, and isn't stored.
    assert system_of(vendor, planner) == "You propose plans. Be concrete."
    assert system_of(vendor, critic) == "You find the weakest point of a plan."
    assert result.state["critique"] == "The weakest point: no rollback plan."
    # Alice's turn reaches the critic as something said to it, named per provider.
    if vendor == "openai":
        alice = critic["messages"][-1]
        assert alice == {"role": "user", "name": "alice",
                         "content": "Ship it behind a flag to 5% first."}
    else:
        # Anthropic and Gemini merge consecutive user turns into one message.
        role, text = texts_of(vendor, critic)[-1]
        assert role == "user" and text.endswith("[alice] Ship it behind a flag to 5% first.")


CHAT = """\
name: c
state:
  chat: {token_budget: BUDGET, trim_policy: POLICY, messages: [
    {role: system, content: "Be brief."},
    {role: user, content: "OLD_Q"},
    {role: assistant, content: "OLD_A"},
    {role: user, content: "newer question"},
    {role: assistant, content: "newer answer"}]}
steps:
  - {id: turn, type: llm_call, conversation: chat, prompt: "And now?", output: o}
""".replace("OLD_Q", "old question " * 10).replace("OLD_A", "old answer " * 10)


async def test_drop_oldest_trims_before_the_call_and_the_stored_copy() -> None:
    async with served("openai") as (server, runtime):
        server.script(FakeReply(text="Now this."))
        text = CHAT.replace("BUDGET", "40").replace("POLICY", "drop_oldest")
        result = await run_example("openai", server, runtime, text)
        sent = bodies(server)[0]["messages"]
    assert [m["content"] for m in sent] == ["Be brief.", "newer question", "newer answer",
                                            "And now?"]
    stored = [m["content"] for m in result.state["chat"]["messages"]]
    assert stored == ["Be brief.", "newer question", "newer answer", "And now?", "Now this."]


async def test_summarize_oldest_calls_the_steps_model_and_bills_the_step() -> None:
    async with served("anthropic") as (server, runtime):
        server.script(FakeReply(text="They asked old things.", input_tokens=30,
                                output_tokens=5),
                      FakeReply(text="Now this.", input_tokens=12, output_tokens=7))
        text = CHAT.replace("BUDGET", "40").replace("POLICY", "summarize_oldest")
        result = await run_example("anthropic", server, runtime, text)
        summary_call, turn_call = bodies(server)
    assert result.status.value == "success", result.error
    # The summary call folds the oldest messages in, and doesn't stream.
    assert "old question" in json.dumps(summary_call)
    assert not summary_call.get("stream")
    assert result.state["chat"]["summary"] == "They asked old things."
    assert "They asked old things." in system_of("anthropic", turn_call)
    usage = result.steps["turn"].usage
    assert usage is not None and usage.input_tokens == 42 and usage.output_tokens == 12


async def test_a_budget_too_small_for_the_prompt_fails_at_once() -> None:
    async with served("openai") as (server, runtime):
        text = CHAT.replace("BUDGET", "3").replace("POLICY", "drop_oldest")
        result = await run_example("openai", server, runtime, text)
        assert server.requests == []
    step = result.steps["turn"]
    assert step.status is StepStatus.FAILED and step.attempts == 1
    assert "token_budget (3)" in (step.error or "")
    assert len(result.state["chat"]["messages"]) == 5  # untouched


async def test_a_failed_step_leaves_the_conversation_as_it_was() -> None:
    async with served("openai") as (server, runtime):
        server.script(FakeError(status=400, body={"error": {"message": "bad"}}))
        text = CHAT.replace("BUDGET", "4000").replace("POLICY", "drop_oldest")
        result = await run_example("openai", server, runtime, text)
    assert result.steps["turn"].status is StepStatus.FAILED
    assert len(result.state["chat"]["messages"]) == 5 and "o" not in result.state


async def test_a_structured_reply_is_stored_as_written_and_re_asks_are_not() -> None:
    text = """\
name: s
steps:
  - id: pick
    type: llm_call
    conversation: state.chat
    prompt: "Pick a colour."
    response_schema:
      type: json_schema
      schema: {type: object, properties: {colour: {type: string}}, required: [colour]}
    output: pick
"""
    async with served("openai") as (server, runtime):
        server.script(FakeReply(text='{"hue": "red"}'), FakeReply(text='{"colour": "red"}'))
        result = await run_example("openai", server, runtime, text)
    assert result.state["pick"] == {"colour": "red"}
    assert [(m["role"], m["content"]) for m in result.state["chat"]["messages"]] == [
        ("user", "Pick a colour."), ("assistant", '{"colour": "red"}')]


PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAYAAABytg0kAAAAEklEQVR4nGP4z8DwHwyBNBgAAEnICff5q7YNAAAA"
       "AElFTkSuQmCC")


async def test_attachments_go_with_the_turn_only() -> None:
    text = f"""\
name: a
state: {{img: "data:image/png;base64,{PNG}"}}
steps:
  - id: look
    type: llm_call
    conversation: chat
    prompt: "What is this?"
    attachments: [{{type: image, source: "{{state.img}}"}}]
"""
    async with served("openai") as (server, runtime):
        server.script(FakeReply(text="A dot."))
        result = await run_example("openai", server, runtime, text)
        sent = bodies(server)[0]["messages"][-1]
    kinds = [p["type"] for p in sent["content"]]
    assert kinds == ["text", "image_url"]
    stored = result.state["chat"]["messages"]
    assert stored[0] == {"role": "user", "content": "What is this?"}


def _problems(text: str) -> list[Any]:
    with pytest.raises(WorkflowProblems) as info:
        load_workflow_text(text, filename="c.yaml")
    return list(info.value.errors)


def test_two_steps_that_may_run_at_once_on_one_conversation_are_refused() -> None:
    text = """\
name: c
steps:
  - {id: a, type: llm_call, conversation: state.chat, prompt: x}
  - id: b
    type: llm_call
    conversation: chat
    prompt: y
"""
    errors = _problems(text)
    assert len(errors) == 1 and errors[0].line == 6
    assert "'a' and 'b' may run at the same time" in errors[0].message
    assert "depends_on" in errors[0].message


def test_branches_of_one_router_may_share_a_conversation() -> None:
    wf = load_workflow_text("""\
name: c
state: {kind: a}
steps:
  - id: route
    type: router
    conditions: [{expression: "state.kind == 'a'", target: a}]
    default: b
  - {id: a, type: llm_call, depends_on: [route], conversation: chat, prompt: x}
  - {id: b, type: llm_call, depends_on: [route], conversation: chat, prompt: y}
""")
    assert set(wf.nodes) == {"route", "a", "b"}


@pytest.mark.parametrize(("state", "step", "message", "line"), [
    ("state: {chat: 'hello'}\n", "conversation: chat, prompt: x", "holds text", 3),
    ("", "conversation: 'state.'", "not a state key", 3),
    ("", "conversation: chat, prompt: x, speaker: 'al ice'", "speaker", 3),
])
def test_conversation_problems_are_load_errors_with_a_line(state: str, step: str,
                                                           message: str, line: int) -> None:
    text = f"name: c\n{state}steps:\n  - {{id: a, type: llm_call, {step}}}\n"
    line += 1 if state else 0
    errors = _problems(text)
    assert any(message in e.message and e.line == line for e in errors), [
        (e.line, e.message) for e in errors]
