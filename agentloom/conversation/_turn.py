"""One conversation turn, in the spec's order, as pure functions around the model call.

`prepare_turn` stores the system prompt (if the conversation has none and there is no
speaker), adds the user turn, trims to the budget, and returns the messages to send plus
the conversation to store. `commit_turn` adds the reply. Nothing is written anywhere: the
step writes `commit_turn(...).to_state()` only when it succeeds, so a failed step leaves
the conversation as it was.

Several speakers: from a speaker's own point of view, another speaker's assistant turns
are things said *to* it, so they are sent as user turns carrying that speaker's name
(otherwise a provider would read the last assistant turn as the start of this reply).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from agentloom.conversation._model import (
    Conversation,
    ConversationMessage,
    summary_text,
    validate_speaker,
)
from agentloom.conversation._trim import Summarizer, trim
from agentloom.errors import ConfigError
from agentloom.messages import MediaPart, Message, TextPart


class ConversationBudgetError(ConfigError):
    """The budget can't hold the new user turn. Fails the step at once; not retried."""

    def __init__(self, message: str, *, budget: int, needed: int) -> None:
        self.budget = budget
        self.needed = needed
        super().__init__(message)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnPlan:
    messages: tuple[Message, ...]
    """What to send (each wire module shows the speaker's name its provider's way)."""
    conversation: Conversation
    """The conversation with the user turn added and trimmed: store it (with the reply,
    through `commit_turn`) when the step succeeds."""
    speaker: str | None = None
    removed: tuple[ConversationMessage, ...] = ()
    summarized: bool = False
    """Whether the one summary call was made: its tokens and cost belong to the step."""
    summary_error: str | None = None
    over_budget: bool = False


async def prepare_turn(
    conv: Conversation,
    *,
    system_prompt: str | None = None,
    prompt: str | None = None,
    speaker: str | None = None,
    attachments: Sequence[MediaPart] = (),
    summarize: Summarizer | None = None,
) -> TurnPlan:
    """Plan one turn (spec 000, "A turn").

    Raises:
        ConfigError: no prompt and the last message isn't one to answer; a bad speaker.
        ConversationBudgetError: the budget can't hold the new user turn.
    """
    if speaker is not None:
        validate_speaker(speaker)
    messages = list(conv.messages)
    if system_prompt and speaker is None and not any(m.role == "system" for m in messages):
        messages.insert(0, ConversationMessage(role="system", content=system_prompt))
    if prompt is not None:
        user = ConversationMessage(role="user", content=prompt)
        needed = user.tokens
        if conv.token_budget is not None and needed > conv.token_budget:
            raise ConversationBudgetError(
                f"the conversation's token_budget ({conv.token_budget}) can't hold the new "
                f"user turn (about {needed} tokens): raise token_budget or shorten the prompt",
                budget=conv.token_budget,
                needed=needed,
            )
        messages.append(user)
    else:
        _check_answerable(messages, speaker)
    trimmed = await trim(conv.with_messages(tuple(messages)), summarize=summarize)
    stored = trimmed.conversation
    sent = _to_send(
        stored,
        system_prompt if speaker else None,
        speaker,
        tuple(attachments) if prompt is not None else (),
    )
    return TurnPlan(
        messages=sent,
        conversation=stored,
        speaker=speaker,
        removed=trimmed.removed,
        summarized=trimmed.summarized,
        summary_error=trimmed.summary_error,
        over_budget=trimmed.over_budget,
    )


def _check_answerable(messages: list[ConversationMessage], speaker: str | None) -> None:
    if not messages:
        raise ConfigError(
            "a conversation step without a prompt needs a conversation to "
            "answer, and this one is empty: give the step a prompt"
        )
    last = messages[-1]
    if last.role in ("user", "tool"):
        return
    # Another speaker's turn is said to this one (the planner/critic example).
    if speaker is not None and last.role == "assistant" and last.name not in (None, speaker):
        return
    who = f"{last.role} ({last.name})" if last.name else last.role
    raise ConfigError(
        "a conversation step without a prompt needs the last message to be the user's or "
        f"a tool's, and it is the {who}'s: give the step a prompt"
    )


def _to_send(
    conv: Conversation,
    speaker_system: str | None,
    speaker: str | None,
    attachments: tuple[MediaPart, ...],
) -> tuple[Message, ...]:
    system = conv.leading_system
    out = [Message.system(m.content) for m in system]
    if conv.summary:
        out.append(Message.system(summary_text(conv.summary)))
    if speaker_system:
        out.append(Message.system(speaker_system))
    rest = conv.messages[len(system) :]
    for i, m in enumerate(rest):
        media = attachments if attachments and i == len(rest) - 1 else ()
        if m.role == "assistant" and speaker is not None and m.name not in (None, speaker):
            out.append(Message(role="user", parts=(TextPart(text=m.content),), name=m.name))
        elif m.role == "user":
            out.append(Message(role="user", parts=(TextPart(text=m.content), *media), name=m.name))
        elif m.role == "assistant":
            out.append(Message.assistant(m.content, name=m.name))
        else:
            out.append(Message(role=m.role, parts=(TextPart(text=m.content),), name=m.name))
    return tuple(out)


def commit_turn(plan: TurnPlan, reply_text: str, speaker: str | None = None) -> Conversation:
    """The conversation to store once the step succeeded: the plan's, plus the reply.

    `reply_text` is the final text as the model wrote it (a structured reply included);
    tool-loop turns and JSON re-asks are not passed here. A `[speaker] ` prefix the model
    echoed from the transcript style is taken off.
    """
    name = speaker if speaker is not None else plan.speaker
    if name is not None:
        validate_speaker(name)
        echo = f"[{name}] "
        if reply_text.startswith(echo):
            reply_text = reply_text[len(echo) :]
    reply = ConversationMessage(role="assistant", content=reply_text, name=name)
    conv = plan.conversation
    return replace(conv, messages=(*conv.messages, reply))
