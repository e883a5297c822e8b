"""Conversations in state: reading the key, a turn's order, trimming, speakers, the load check."""

from __future__ import annotations

from typing import Any

import pytest

from agentloom.conversation import (
    CHARS_PER_TOKEN,
    MESSAGE_OVERHEAD_TOKENS,
    Conversation,
    ConversationBudgetError,
    ConversationMessage,
    commit_turn,
    concurrency_predicate,
    conflicting_conversation_steps,
    message_tokens,
    normalize_key,
    prepare_turn,
    trim,
    validate_speaker,
)
from agentloom.errors import ConfigError
from agentloom.messages import ImagePart, Message, TextPart


def msg(role: str, content: str, name: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"role": role, "content": content}
    if name:
        out["name"] = name
    return out


def conv(*messages: dict[str, Any], **fields: Any) -> Conversation:
    return Conversation.from_state({"messages": list(messages), **fields}, key="chat")


def contents(c: Conversation) -> list[str]:
    return [m.content for m in c.messages]


def words(n_tokens: int) -> str:
    """Text of exactly `n_tokens` rough tokens."""
    return "x" * (n_tokens * CHARS_PER_TOKEN)


# --- reading and writing the state value -------------------------------------------------


def test_missing_key_starts_empty_and_a_list_is_accepted() -> None:
    assert Conversation.from_state(None) == Conversation()
    c = Conversation.from_state([msg("user", "hi"), msg("assistant", "hello", "alice")])
    assert [m.role for m in c.messages] == ["user", "assistant"]
    assert c.messages[1].name == "alice"
    assert c.trim_policy == "drop_oldest" and c.token_budget is None


def test_round_trip_to_plain_state() -> None:
    state = {
        "messages": [msg("system", "be brief"), msg("user", "hi")],
        "token_budget": 800,
        "trim_policy": "drop_pairs",
        "summary": "earlier things",
    }
    c = Conversation.from_state(state, key="chat")
    assert c.to_state() == state
    assert Conversation.from_state([msg("user", "hi")]).to_state() == {
        "messages": [msg("user", "hi")],
        "trim_policy": "drop_oldest",
    }


@pytest.mark.parametrize(
    ("value", "words_"),
    [
        (
            "hello",
            "conversation key 'chat' holds text, expected a mapping with messages or a list",
        ),
        (42, "holds a number"),
        ({"messages": "hi"}, "messages holds text"),
        ({"messages": [], "token_budget": 0}, "positive integer"),
        ({"messages": [], "token_budget": True}, "positive integer"),
        ({"messages": [], "trim_policy": "drop_newest"}, "expected drop_oldest"),
        ({"messages": [], "budget": 10}, "unknown field 'budget'"),
        ({"messages": [{"role": "bot", "content": "x"}]}, r"messages\[0\].role is 'bot'"),
        ({"messages": [{"role": "user", "content": ["a"]}]}, "content holds a list"),
        ({"messages": [{"role": "user", "content": "x", "name": "a b"}]}, "speaker 'a b'"),
        ({"messages": ["hi"]}, r"messages\[0\] holds text"),
    ],
)
def test_bad_state_values_are_config_errors(value: Any, words_: str) -> None:
    with pytest.raises(ConfigError, match=words_):
        Conversation.from_state(value, key="chat")


def test_speaker_names() -> None:
    assert validate_speaker("alice_2-b") == "alice_2-b"
    assert validate_speaker("a" * 64)
    for bad in ("", "a" * 65, "al ice", "bob!", "ünï", None, 3):
        with pytest.raises(ConfigError, match="1-64 letters, digits, _ or -"):
            validate_speaker(bad)


def test_conversation_keys() -> None:
    assert normalize_key("state.chat") == normalize_key("chat") == "chat"
    assert normalize_key("state.rooms.a") == "rooms.a"
    with pytest.raises(ConfigError):
        normalize_key("state.")


def test_rough_token_count() -> None:
    assert message_tokens("abcd") == 1 + MESSAGE_OVERHEAD_TOKENS
    assert message_tokens("abcde") == 2 + MESSAGE_OVERHEAD_TOKENS
    assert message_tokens("abcd", name="alice") > message_tokens("abcd")
    c = conv(msg("user", words(10)), summary="s" * 40)
    assert c.tokens() == 10 + MESSAGE_OVERHEAD_TOKENS + message_tokens(
        "Summary of the earlier conversation:\n" + "s" * 40
    )


# --- a turn ------------------------------------------------------------------------------


async def test_system_prompt_is_stored_first_once() -> None:
    plan = await prepare_turn(Conversation(), system_prompt="Be cheerful.", prompt="Hi")
    assert [m.role for m in plan.messages] == ["system", "user"]
    after = commit_turn(plan, "Hello!")
    assert after.to_state()["messages"] == [
        msg("system", "Be cheerful."),
        msg("user", "Hi"),
        msg("assistant", "Hello!"),
    ]
    plan2 = await prepare_turn(after, system_prompt="Be grumpy.", prompt="Again")
    assert [m.text for m in plan2.messages if m.role == "system"] == ["Be cheerful."]
    assert "Be grumpy." not in contents(plan2.conversation)


async def test_system_prompt_is_not_stored_when_conversation_has_one_later() -> None:
    c = conv(msg("user", "hi"), msg("system", "late rule"))
    plan = await prepare_turn(c, system_prompt="new", prompt="x")
    assert "new" not in contents(plan.conversation)


async def test_speaker_system_prompt_applies_to_its_turn_only() -> None:
    start = conv(msg("system", "Shared rules."))
    plan = await prepare_turn(
        start, system_prompt="You propose plans.", prompt="Plan it.", speaker="alice"
    )
    assert [m.text for m in plan.messages if m.role == "system"] == [
        "Shared rules.",
        "You propose plans.",
    ]
    stored = commit_turn(plan, "Step 1, step 2.")
    assert contents(stored) == ["Shared rules.", "Plan it.", "Step 1, step 2."]
    assert stored.messages[-1].name == "alice"
    # with no conversation system message, a speaker's prompt still isn't stored
    plan = await prepare_turn(
        Conversation(), system_prompt="You criticise.", prompt="Go", speaker="bob"
    )
    assert contents(plan.conversation) == ["Go"]
    assert plan.messages[0].role == "system"


async def test_planner_then_critic_without_prompt() -> None:
    planner = await prepare_turn(
        Conversation(),
        system_prompt="You propose plans.",
        prompt="Propose a rollout plan.",
        speaker="alice",
    )
    debate = commit_turn(planner, "Roll out to 5% first.")
    critic = await prepare_turn(
        debate, system_prompt="You find the weakest point.", prompt=None, speaker="bob"
    )
    roles = [(m.role, m.name, m.text) for m in critic.messages]
    assert roles == [
        ("system", None, "You find the weakest point."),
        ("user", None, "Propose a rollout plan."),
        # another speaker's turn is said to bob, so it goes as a user turn with its name
        ("user", "alice", "Roll out to 5% first."),
    ]
    final = commit_turn(critic, "[bob] 5% is too small to see errors.")
    assert [(m.role, m.name, m.content) for m in final.messages] == [
        ("user", None, "Propose a rollout plan."),
        ("assistant", "alice", "Roll out to 5% first."),
        ("assistant", "bob", "5% is too small to see errors."),
    ]
    # alice's next turn sees her own turn as assistant and bob's as said to her
    again = await prepare_turn(final, prompt=None, speaker="alice")
    assert [(m.role, m.name) for m in again.messages] == [
        ("user", None),
        ("assistant", "alice"),
        ("user", "bob"),
    ]


@pytest.mark.parametrize(
    ("messages", "speaker", "words_"),
    [
        ((), None, "this one is empty"),
        ((msg("user", "q"), msg("assistant", "a")), None, "it is the assistant's"),
        ((msg("user", "q"), msg("assistant", "a", "alice")), "alice", r"assistant \(alice\)"),
        ((msg("system", "s"),), None, "it is the system's"),
    ],
)
async def test_no_prompt_needs_something_to_answer(
    messages: tuple[dict[str, Any], ...], speaker: str | None, words_: str
) -> None:
    with pytest.raises(ConfigError, match=words_):
        await prepare_turn(conv(*messages), prompt=None, speaker=speaker)


async def test_no_prompt_after_user_or_tool_is_fine() -> None:
    for last in (msg("user", "q"), msg("tool", "42", "calc")):
        plan = await prepare_turn(conv(last), prompt=None, attachments=(ImagePart(data=b"img"),))
        assert plan.messages[-1].role == last["role"]
        # a step without a prompt has no user turn and sends no attachments
        assert not any(isinstance(p, ImagePart) for m in plan.messages for p in m.parts)


async def test_attachments_go_with_this_turn_only() -> None:
    image = ImagePart(data=b"\x89PNG")
    plan = await prepare_turn(
        conv(msg("user", "old"), msg("assistant", "ok")),
        prompt="What is this?",
        attachments=(image,),
    )
    assert plan.messages[-1].parts == (TextPart(text="What is this?"), image)
    assert plan.messages[0].parts == (TextPart(text="old"),)
    stored = commit_turn(plan, "A cat.").to_state()
    assert stored["messages"][-2] == msg("user", "What is this?")


async def test_prepare_turn_is_pure() -> None:
    start = conv(msg("user", "q"), msg("assistant", "a"))
    snapshot = start.to_state()
    plan = await prepare_turn(start, system_prompt="s", prompt="next")
    assert start.to_state() == snapshot  # failed steps leave the conversation as it was
    assert contents(plan.conversation) == ["s", "q", "a", "next"]


async def test_bad_speaker_is_refused() -> None:
    with pytest.raises(ConfigError, match="speaker"):
        await prepare_turn(Conversation(), prompt="x", speaker="no spaces please")


# --- trimming ----------------------------------------------------------------------------

T = MESSAGE_OVERHEAD_TOKENS


def budgeted(policy: str, budget: int, *messages: dict[str, Any], **kw: Any) -> Conversation:
    return conv(*messages, token_budget=budget, trim_policy=policy, **kw)


async def test_no_budget_or_within_budget_changes_nothing() -> None:
    c = conv(msg("user", words(100)), msg("assistant", words(100)))
    assert (await trim(c)).conversation == c
    c = budgeted("drop_oldest", 1000, msg("user", words(10)))
    result = await trim(c)
    assert result.conversation == c and not result.removed and not result.over_budget


async def test_drop_oldest_removes_oldest_until_it_fits_keeping_system() -> None:
    c = budgeted(
        "drop_oldest",
        3 * (10 + T),
        msg("system", words(10)),
        msg("user", words(10)),
        msg("assistant", words(10)),
        msg("user", words(10)),
        msg("assistant", words(10)),
    )
    plan = await prepare_turn(c, prompt=words(6))
    kept = plan.conversation.messages
    assert [m.role for m in kept] == ["system", "assistant", "user"]
    assert [m.role for m in plan.removed] == ["user", "assistant", "user"]
    assert plan.conversation.tokens() <= c.token_budget  # type: ignore[operator]
    assert not plan.over_budget
    assert [m.role for m in plan.messages] == ["system", "assistant", "user"]


async def test_drop_pairs_removes_whole_user_assistant_pairs() -> None:
    c = budgeted(
        "drop_pairs",
        4 * (10 + T) - 1,
        msg("system", words(10)),
        msg("user", words(10)),
        msg("assistant", words(10)),
        msg("user", words(10)),
        msg("assistant", words(10)),
    )
    plan = await prepare_turn(c, prompt=words(10))
    # dropping one pair leaves 4 messages, one token over the budget: both pairs go
    assert [m.role for m in plan.conversation.messages] == ["system", "user"]
    assert len(plan.removed) == 4
    c2 = budgeted(
        "drop_pairs",
        5 * (10 + T) + 2,
        msg("system", words(10)),
        msg("user", words(10)),
        msg("assistant", words(10)),
        msg("user", words(10)),
        msg("assistant", words(10)),
    )
    plan2 = await prepare_turn(c2, prompt=words(10))
    assert [m.role for m in plan2.conversation.messages] == [
        "system",
        "user",
        "assistant",
        "user",
    ]
    assert [m.role for m in plan2.removed] == ["user", "assistant"]


async def test_drop_pairs_keeps_a_pair_with_several_speakers_together() -> None:
    c = budgeted(
        "drop_pairs",
        3 * (10 + T) + 10,
        msg("user", words(10)),
        msg("assistant", words(10), "alice"),
        msg("assistant", words(10), "bob"),
        msg("user", words(10)),
        msg("assistant", words(10), "alice"),
    )
    result = await trim(c)
    assert [m.name for m in result.removed] == [None, "alice", "bob"]


@pytest.mark.parametrize("policy", ["drop_oldest", "drop_pairs", "summarize_oldest"])
async def test_system_and_summary_alone_reaching_budget_means_nothing_removed(
    policy: str,
) -> None:
    c = budgeted(
        policy,
        30,
        msg("system", words(20)),
        msg("user", words(5)),
        msg("assistant", words(5)),
        summary=words(10),
    )
    calls: list[Any] = []

    async def summarize(messages: Any) -> str:
        calls.append(messages)
        return "never"

    plan = await prepare_turn(c, prompt=words(2), summarize=summarize)
    assert plan.removed == ()
    assert plan.over_budget  # the request goes over
    assert len(plan.conversation.messages) == 4
    assert calls == []


async def test_the_new_user_turn_is_never_dropped_so_the_request_may_go_over() -> None:
    c = budgeted(
        "drop_oldest", 2 * (10 + T) + 1, msg("system", words(10)), msg("assistant", words(10))
    )
    plan = await prepare_turn(c, prompt=words(10))
    assert [m.role for m in plan.conversation.messages] == ["system", "user"]
    assert plan.removed[0].role == "assistant"
    assert not plan.over_budget
    c = budgeted("drop_oldest", 2 * (10 + T), msg("system", words(10)))
    plan = await prepare_turn(c, prompt=words(11))
    assert plan.over_budget and plan.removed == ()


async def test_budget_too_small_for_the_user_turn_fails_at_once() -> None:
    c = budgeted("drop_oldest", 10)
    with pytest.raises(ConversationBudgetError) as info:
        await prepare_turn(c, prompt=words(40))
    assert info.value.budget == 10 and info.value.needed == 40 + T
    assert "token_budget (10)" in str(info.value)
    assert isinstance(info.value, ConfigError)


async def test_summarize_oldest_folds_with_one_call() -> None:
    c = budgeted(
        "summarize_oldest",
        4 * (10 + T),
        msg("system", "rules"),
        msg("user", "My name is Ada."),
        msg("assistant", "Hello Ada."),
        msg("user", words(10)),
        msg("assistant", words(10)),
        summary="Earlier: greetings.",
    )
    calls: list[tuple[Message, ...]] = []

    async def summarize(messages: tuple[Message, ...]) -> str:
        calls.append(messages)
        return "Ada said hello."

    plan = await prepare_turn(c, prompt=words(10), summarize=summarize)
    assert len(calls) == 1
    request = calls[0]
    assert request[0].role == "system"
    assert "Earlier: greetings." in request[1].text and "My name is Ada." in request[1].text
    assert plan.summarized and plan.summary_error is None
    assert plan.conversation.summary == "Ada said hello."
    assert "My name is Ada." not in contents(plan.conversation)  # left the stored conversation
    sent_system = [m.text for m in plan.messages if m.role == "system"]
    assert sent_system == ["rules", "Summary of the earlier conversation:\nAda said hello."]
    assert plan.conversation.to_state()["summary"] == "Ada said hello."


async def test_summarize_failure_falls_back_to_plain_text() -> None:
    c = budgeted(
        "summarize_oldest",
        2 * (10 + T) + 5,
        msg("user", "first question"),
        msg("assistant", "first answer", "alice"),
        msg("user", words(10)),
    )

    async def broken(messages: tuple[Message, ...]) -> str:
        raise RuntimeError("model down")

    plan = await prepare_turn(c, prompt=words(10), summarize=broken)
    assert plan.summarized
    assert plan.summary_error == "RuntimeError: model down"
    assert plan.conversation.summary == ("user: first question\nassistant (alice): first answer")

    async def empty(messages: tuple[Message, ...]) -> str:
        return "  "

    plan = await prepare_turn(c, prompt=words(10), summarize=empty)
    assert plan.summary_error == "the summary call returned no text"
    assert plan.conversation.summary is not None
    assert "first question" in plan.conversation.summary


async def test_summarize_appends_fallback_to_an_existing_summary() -> None:
    c = budgeted(
        "summarize_oldest",
        15 + 34 + 2,
        msg("user", "old one"),
        msg("assistant", "old two"),
        summary="before",
    )
    result = await trim(
        c.with_messages((*c.messages, ConversationMessage(role="user", content=words(30))))
    )
    assert result.conversation.summary == "before\nuser: old one\nassistant: old two"
    assert result.summary_error == "no summarizer was given"


async def test_summary_growing_past_budget_goes_over_without_more_calls() -> None:
    c = budgeted(
        "summarize_oldest", 2 * (10 + T) + 5, msg("user", words(10)), msg("assistant", words(10))
    )
    calls = 0

    async def verbose(messages: tuple[Message, ...]) -> str:
        nonlocal calls
        calls += 1
        return words(200)

    plan = await prepare_turn(c, prompt=words(10), summarize=verbose)
    assert calls == 1
    assert plan.over_budget
    # and next turn: summary + system reach the budget, so nothing more is folded
    after = commit_turn(plan, "ok")
    plan2 = await prepare_turn(after, prompt="more", summarize=verbose)
    assert calls == 1 and plan2.removed == () and plan2.over_budget


# --- the load-time check -----------------------------------------------------------------


def test_parallel_steps_on_one_conversation_are_refused() -> None:
    deps = {"a": [], "b": [], "c": ["a"], "d": ["c"], "e": []}
    steps = {"a": "state.chat", "b": "chat", "c": "chat", "d": "state.chat", "e": "other"}
    conflicts = conflicting_conversation_steps(steps, concurrency_predicate(deps))
    assert [(x.key, x.first, x.second) for x in conflicts] == [
        ("chat", "a", "b"),
        ("chat", "b", "c"),
        ("chat", "b", "d"),
    ]
    assert "chain them with depends_on" in conflicts[0].message
    assert "'a' and 'b'" in conflicts[0].message


def test_router_branches_are_exempt() -> None:
    deps = {"route": [], "yes": ["route"], "no": ["route"]}
    branches = {"yes", "no"}
    pred = concurrency_predicate(deps, exclusive=lambda a, b: a in branches and b in branches)
    steps = [("yes", "chat"), ("no", "chat"), ("route", None)]
    assert conflicting_conversation_steps(steps, pred) == []
    assert conflicting_conversation_steps(steps, concurrency_predicate(deps)) != []


def test_chained_steps_pass_and_cycles_do_not_hang() -> None:
    deps = {"a": ["b"], "b": ["a"]}
    assert (
        conflicting_conversation_steps({"a": "chat", "b": "chat"}, concurrency_predicate(deps))
        == []
    )
