"""Structured output and conversations through the one loop, driven by a scripted model."""

from __future__ import annotations

import pytest

from agentloom.conversation import Conversation, commit_turn, prepare_turn
from agentloom.errors import StructuredOutputError
from agentloom.loop import LoopOptions, run_loop
from agentloom.messages import Message, ModelRequest
from agentloom.structured import ResponseSchemaSpec, SchemaValidator, build_response_format
from agentloom.testing.scripted import ScriptedModel

SCHEMA = {
    "type": "object",
    "properties": {"label": {"type": "string", "enum": ["refund", "question"]}},
    "required": ["label"],
}


async def test_invalid_reply_is_reasked_with_the_validation_error() -> None:
    spec = ResponseSchemaSpec.from_dict({"type": "json_schema", "schema": SCHEMA})
    model = ScriptedModel(['{"label": "angry"}', 'Sure: ```json\n{"label": "refund"}\n```'])
    request = ModelRequest(
        model="m",
        messages=(Message.user("Classify: I want my money back"),),
        response_format=build_response_format(spec, "classify"),
    )
    result = await run_loop(
        model, request, options=LoopOptions(validator=SchemaValidator(spec), max_reasks=1)
    )
    assert result.output == {"label": "refund"}
    assert result.text.startswith("Sure:")  # the raw text, as the model wrote it
    reask = model.requests[1].messages[-1]
    assert reask.role == "user" and "$.label: 'angry' is not one of" in reask.text


async def test_no_valid_reply_within_the_reasks_fails() -> None:
    spec = ResponseSchemaSpec.from_dict({"type": "json_schema", "schema": SCHEMA})
    model = ScriptedModel(["nope", "still nope"])
    request = ModelRequest(model="m", messages=(Message.user("x"),))
    with pytest.raises(StructuredOutputError):
        await run_loop(
            model, request, options=LoopOptions(validator=SchemaValidator(spec), max_reasks=1)
        )


async def test_two_turn_chat_keeps_only_final_text() -> None:
    chat = Conversation.from_state(
        {
            "messages": [{"role": "system", "content": "Be concise."}],
            "token_budget": 800,
            "trim_policy": "drop_pairs",
        },
        key="chat",
    )
    model = ScriptedModel(["Typer.", "Click."])
    for prompt in ("Recommend one Python library for CLI apps.", "Any second choice?"):
        plan = await prepare_turn(chat, prompt=prompt)
        request = ModelRequest(model="m", messages=tuple(plan.messages))
        result = await run_loop(model, request)
        chat = commit_turn(plan, result.text)
    assert [m.content for m in chat.messages] == [
        "Be concise.",
        "Recommend one Python library for CLI apps.",
        "Typer.",
        "Any second choice?",
        "Click.",
    ]
    assert [m.text for m in model.requests[1].messages] == [
        "Be concise.",
        "Recommend one Python library for CLI apps.",
        "Typer.",
        "Any second choice?",
    ]
