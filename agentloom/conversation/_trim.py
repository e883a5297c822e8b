"""Keeping a conversation within its token budget (spec 000, "Trimming").

The count is rough on purpose (see `CHARS_PER_TOKEN`, `MESSAGE_OVERHEAD_TOKENS`): it
must be the same on every provider and cost nothing. Leading system messages and the
summary are never trimmed; when they alone reach the budget nothing is removed and the
request goes over, because cutting the instructions would change what the step is. The
last message (the new user turn, or the turn being answered) always stays.

summarize_oldest makes at most one extra model call per turn, through the `summarize`
callable the step passes in (so it runs on the step's own model, with its accounting);
if that call fails, the folded messages are kept as plain text instead.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from agentloom.conversation._model import Conversation, ConversationMessage, message_tokens
from agentloom.conversation._model import summary_text as _summary_text
from agentloom.messages import Message

Summarizer = Callable[[tuple[Message, ...]], Awaitable[str]]
"""Given the messages of a ready-made summary request, return the model's summary text."""

SUMMARIZER_INSTRUCTIONS = (
    "You condense conversations. Write a short, factual summary that merges the summary "
    "so far with the new messages below. Keep names, facts, decisions and open questions. "
    "Reply with the summary only."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class TrimResult:
    conversation: Conversation
    removed: tuple[ConversationMessage, ...] = ()
    """Messages that left the conversation (dropped, or folded into the summary)."""
    summarized: bool = False
    """Whether the summary call was made (whether or not it succeeded)."""
    summary_error: str | None = None
    """Why the summary call failed, when the plain-text fallback was used."""
    over_budget: bool = False
    """True when the request still goes over the budget (allowed by the spec's rules)."""


def transcript(messages: Sequence[ConversationMessage]) -> str:
    """Messages as plain text, one `role (name): content` line per message."""
    lines = []
    for m in messages:
        who = f"{m.role} ({m.name})" if m.name else m.role
        lines.append(f"{who}: {m.content}")
    return "\n".join(lines)


def summary_request(
    previous: str | None, folded: Sequence[ConversationMessage]
) -> tuple[Message, ...]:
    """The messages of the summary call: instructions, then the old summary and the
    messages to fold in."""
    body = f"Summary so far:\n{previous or '(none)'}\n\nNew messages:\n{transcript(folded)}"
    return (Message.system(SUMMARIZER_INSTRUCTIONS), Message.user(body))


async def trim(
    conv: Conversation, *, keep_last: int = 1, summarize: Summarizer | None = None
) -> TrimResult:
    """Trim `conv` to its budget by its policy. The last `keep_last` messages stay."""
    budget = conv.token_budget
    total = conv.tokens()
    if budget is None or total <= budget:
        return TrimResult(conversation=conv)
    system = conv.leading_system
    fixed = sum(m.tokens for m in system)
    if conv.summary:
        fixed += message_tokens(_summary_text(conv.summary))
    if fixed >= budget:
        return TrimResult(conversation=conv, over_budget=True)
    rest = list(conv.messages[len(system) :])
    protected = max(0, len(rest) - keep_last)  # rest[protected:] stays
    if conv.trim_policy == "drop_pairs":
        cut = _pairs_cut(rest, protected, total - budget)
    else:
        cut = _oldest_cut(rest, protected, total - budget)
    removed = tuple(rest[:cut])
    kept = (*system, *rest[cut:])
    if conv.trim_policy != "summarize_oldest" or not removed:
        result = replace(conv, messages=kept)
        return TrimResult(
            conversation=result, removed=removed, over_budget=result.tokens() > budget
        )
    summary, error = await _fold(conv.summary, removed, summarize)
    result = replace(conv, messages=kept, summary=summary)
    return TrimResult(
        conversation=result,
        removed=removed,
        summarized=summarize is not None,
        summary_error=error,
        over_budget=result.tokens() > budget,
    )


def _oldest_cut(rest: list[ConversationMessage], limit: int, excess: int) -> int:
    """How many of the oldest messages to remove to shed `excess` tokens (at most `limit`)."""
    cut = 0
    while excess > 0 and cut < limit:
        excess -= rest[cut].tokens
        cut += 1
    return cut


def _pairs_cut(rest: list[ConversationMessage], limit: int, excess: int) -> int:
    """Like `_oldest_cut`, in whole units: a user turn with the replies that follow it
    (several speakers may answer one user turn). Messages before the first user turn are
    a unit of their own. A unit reaching into the kept tail is never cut."""
    cut = 0
    while excess > 0 and cut < len(rest):
        end = cut + 1
        while end < len(rest) and rest[end].role != "user":
            end += 1
        if end > limit:
            break
        excess -= sum(m.tokens for m in rest[cut:end])
        cut = end
    return cut


async def _fold(
    previous: str | None,
    folded: Sequence[ConversationMessage],
    summarize: Summarizer | None,
) -> tuple[str, str | None]:
    """The new summary, and why the call failed if it did."""
    error: str | None = "no summarizer was given"
    if summarize is not None:
        try:
            text = (await summarize(summary_request(previous, folded))).strip()
        except Exception as exc:  # any failure of the extra call falls back to plain text
            error = f"{type(exc).__name__}: {exc}"
        else:
            if text:
                return text, None
            error = "the summary call returned no text"
    plain = transcript(folded)
    return (f"{previous}\n{plain}" if previous else plain), error
