"""Trimming rules a mutation run found untested: every budget boundary one token under
and over, drop_pairs never cutting a turn group that reaches into the kept tail, and the
summary call's fallbacks."""

from __future__ import annotations

from typing import Any

import pytest

from agentloom.conversation import (
    CHARS_PER_TOKEN,
    MESSAGE_OVERHEAD_TOKENS,
    Conversation,
    trim,
)
from agentloom.conversation._model import message_tokens, summary_text
from agentloom.conversation._trim import SUMMARIZER_INSTRUCTIONS, summary_request, transcript
from agentloom.messages import Message

T = MESSAGE_OVERHEAD_TOKENS
UNIT = 10 + T  # the tokens of one message of words(10)


def words(n_tokens: int) -> str:
    return "x" * (n_tokens * CHARS_PER_TOKEN)


def msg(role: str, n: int = 10, name: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"role": role, "content": words(n)}
    if name:
        out["name"] = name
    return out


def conv(policy: str, budget: int | None, *messages: dict[str, Any], **kw: Any) -> Conversation:
    fields: dict[str, Any] = {"messages": list(messages), "trim_policy": policy, **kw}
    if budget is not None:
        fields["token_budget"] = budget
    return Conversation.from_state(fields, key="chat")


def roles(c: Conversation) -> list[str]:
    return [m.role for m in c.messages]


FOUR = (msg("user"), msg("assistant"), msg("user"), msg("assistant"))


@pytest.mark.parametrize("policy", ["drop_oldest", "drop_pairs", "summarize_oldest"])
async def test_exactly_at_the_budget_nothing_is_trimmed(policy: str) -> None:
    c = conv(policy, 4 * UNIT, *FOUR)
    result = await trim(c)
    assert result.conversation == c and result.removed == () and not result.over_budget


@pytest.mark.parametrize("policy", ["drop_oldest", "drop_pairs"])
async def test_one_token_over_the_budget_trims(policy: str) -> None:
    c = conv(policy, 4 * UNIT - 1, *FOUR)
    result = await trim(c)
    assert len(result.removed) == (1 if policy == "drop_oldest" else 2)
    assert not result.over_budget


async def test_drop_oldest_stops_as_soon_as_the_excess_is_shed() -> None:
    # excess exactly one message: one goes; one token more: two go
    c = conv("drop_oldest", 3 * UNIT, *FOUR)
    assert roles((await trim(c)).conversation) == ["assistant", "user", "assistant"]
    c = conv("drop_oldest", 3 * UNIT - 1, *FOUR)
    assert roles((await trim(c)).conversation) == ["user", "assistant"]


async def test_fixed_messages_one_under_the_budget_still_allow_trimming() -> None:
    # system + summary = budget - 1: the rest can be trimmed (and still goes over)
    summary = "s" * 8
    fixed = UNIT + message_tokens(summary_text(summary))
    c = conv("drop_oldest", fixed + 1, msg("system"), msg("user"), msg("assistant"),
             summary=summary)
    result = await trim(c)
    assert [m.role for m in result.removed] == ["user"]
    assert roles(result.conversation) == ["system", "assistant"]
    assert result.over_budget


async def test_fixed_messages_exactly_at_the_budget_remove_nothing() -> None:
    summary = "s" * 8
    fixed = UNIT + message_tokens(summary_text(summary))
    c = conv("drop_oldest", fixed, msg("system"), msg("user"), msg("assistant"),
             summary=summary)
    result = await trim(c)
    assert result.removed == () and result.over_budget
    assert result.conversation == c


async def test_without_a_summary_only_the_system_messages_are_fixed() -> None:
    c = conv("drop_oldest", UNIT + 1, msg("system"), msg("user"), msg("assistant"))
    result = await trim(c)
    assert roles(result.conversation) == ["system", "assistant"]


async def test_over_budget_is_false_when_the_result_lands_exactly_on_it() -> None:
    c = conv("drop_oldest", 2 * UNIT, msg("user"), msg("assistant"), msg("user", 20))
    result = await trim(c)
    assert roles(result.conversation) == ["user"]
    assert result.conversation.tokens() == 20 + T
    assert not result.over_budget
    c = conv("drop_oldest", 20 + T - 1, msg("user"), msg("user", 20))
    result = await trim(c)
    assert roles(result.conversation) == ["user"] and result.over_budget


async def test_keep_last_protects_the_tail() -> None:
    c = conv("drop_oldest", UNIT, *FOUR)
    result = await trim(c, keep_last=2)
    assert len(result.conversation.messages) == 2 and result.over_budget
    result = await trim(c, keep_last=10)  # more than there are: nothing can go
    assert result.removed == () and result.over_budget
    result = await trim(c, keep_last=0)
    assert roles(result.conversation) == ["assistant"] and not result.over_budget


async def test_drop_pairs_never_cuts_a_group_reaching_into_the_kept_tail() -> None:
    # keep_last=3 protects [assistant, user, assistant]: the first group (user,
    # assistant) reaches into it, so nothing goes, however far over; drop_oldest would
    # take the one unprotected message.
    c = conv("drop_pairs", 1, *FOUR)
    result = await trim(c, keep_last=3)
    assert result.removed == () and result.over_budget
    oldest = await trim(conv("drop_oldest", 1, *FOUR), keep_last=3)
    assert [m.role for m in oldest.removed] == ["user"]
    # keep_last=2: the second group is the tail itself; the first group, ending right
    # where the tail starts, is cut.
    result = await trim(c, keep_last=2)
    assert [m.role for m in result.removed] == ["user", "assistant"]


async def test_drop_pairs_treats_messages_before_the_first_user_turn_as_a_group() -> None:
    c = conv("drop_pairs", 2 * UNIT, msg("assistant"), msg("tool"), msg("user"),
             msg("assistant"))
    result = await trim(c)
    assert [m.role for m in result.removed] == ["assistant", "tool"]
    assert roles(result.conversation) == ["user", "assistant"] and not result.over_budget


async def test_drop_pairs_stops_after_the_group_that_sheds_the_excess() -> None:
    six = (*FOUR, msg("user"), msg("assistant"))
    c = conv("drop_pairs", 4 * UNIT, *six)  # excess exactly one group
    assert len((await trim(c)).removed) == 2
    c = conv("drop_pairs", 4 * UNIT - 1, *six)  # one token more: two groups
    assert len((await trim(c)).removed) == 4


async def test_drop_pairs_with_one_message_left_to_cut() -> None:
    c = conv("drop_pairs", UNIT, msg("user"), msg("user"))
    result = await trim(c)
    assert [m.role for m in result.removed] == ["user"] and not result.over_budget


async def test_summarize_folds_the_removed_messages_into_the_summary() -> None:
    seen: list[tuple[Message, ...]] = []

    async def summarize(messages: tuple[Message, ...]) -> str:
        seen.append(messages)
        return "  folded  "

    c = conv("summarize_oldest", 3 * UNIT, *FOUR, summary="before")
    result = await trim(c, summarize=summarize)
    assert result.conversation.summary == "folded"
    assert result.summarized and result.summary_error is None
    assert len(seen) == 1 and seen[0][0].text == SUMMARIZER_INSTRUCTIONS
    assert "Summary so far:\nbefore\n\nNew messages:\nuser: " in seen[0][1].text


async def test_an_empty_summary_falls_back_to_the_transcript() -> None:
    async def summarize(messages: tuple[Message, ...]) -> str:
        return "   "

    c = conv("summarize_oldest", 3 * UNIT, *FOUR, summary="before")
    result = await trim(c, summarize=summarize)
    assert result.summary_error == "the summary call returned no text"
    assert result.summarized
    assert result.conversation.summary == "before\n" + transcript(result.removed)


async def test_a_failing_summary_call_names_the_error_and_keeps_the_text() -> None:
    async def summarize(messages: tuple[Message, ...]) -> str:
        raise RuntimeError("model down")

    c = conv("summarize_oldest", 3 * UNIT, *FOUR)
    result = await trim(c, summarize=summarize)
    assert result.summary_error == "RuntimeError: model down"
    assert result.conversation.summary == transcript(result.removed)


async def test_no_summarizer_means_plain_text_and_no_call() -> None:
    c = conv("summarize_oldest", 3 * UNIT, *FOUR)
    result = await trim(c)
    assert not result.summarized and result.summary_error == "no summarizer was given"
    assert result.conversation.summary == transcript(result.removed)


async def test_summarize_with_nothing_to_remove_makes_no_call() -> None:
    calls: list[Any] = []

    async def summarize(messages: tuple[Message, ...]) -> str:
        calls.append(messages)
        return "x"

    c = conv("summarize_oldest", 1, msg("user"))
    result = await trim(c, summarize=summarize)
    assert calls == [] and not result.summarized and result.over_budget
    assert result.conversation.summary is None


def test_transcript_and_summary_request_text() -> None:
    c = conv("drop_oldest", None, {"role": "user", "content": "hi"},
             {"role": "assistant", "content": "yo", "name": "bob"})
    assert transcript(c.messages) == "user: hi\nassistant (bob): yo"
    system, user = summary_request(None, c.messages)
    assert system.text == SUMMARIZER_INSTRUCTIONS
    assert user.text == "Summary so far:\n(none)\n\nNew messages:\nuser: hi\nassistant (bob): yo"


async def test_a_summary_landing_exactly_on_the_budget_is_not_over() -> None:
    async def summarize(messages: tuple[Message, ...]) -> str:
        return "S"  # the summary message: 14 tokens

    first = {"role": "user", "content": "x" * 41}  # 15 tokens
    c = conv("summarize_oldest", 42, first, msg("assistant"), msg("user"))  # 43 in all
    result = await trim(c, summarize=summarize)
    assert len(result.removed) == 1 and result.conversation.tokens() == 42
    assert not result.over_budget
    result = await trim(conv("summarize_oldest", 41, first, msg("assistant"), msg("user")),
                       summarize=summarize)
    assert result.over_budget


async def test_a_result_within_budget_says_nothing_happened() -> None:
    result = await trim(conv("summarize_oldest", 100, msg("user")))
    assert (result.removed, result.summarized, result.summary_error, result.over_budget) == (
        (), False, None, False)
