"""Conversations kept in the run's state: several steps continue one list of messages.

Job: conversation turns kept in state, and their trimming; pure. May import: types and
the layers up to `recording` (tests/test_layers.py holds the rule).

`Conversation.from_state` reads a state key; `prepare_turn` plans a turn in the spec's
order (system prompt, user turn, trim to the budget) and `commit_turn` adds the reply;
`apply_speaker_style` shapes speaker names per provider. `conflicting_conversation_steps`
is the load-time check that two steps can't overwrite each other's turns.
"""

from agentloom.conversation._check import (
    ConversationConflict,
    concurrency_predicate,
    conflicting_conversation_steps,
)
from agentloom.conversation._model import (
    CHARS_PER_TOKEN,
    MESSAGE_OVERHEAD_TOKENS,
    Conversation,
    ConversationMessage,
    TrimPolicy,
    estimate_tokens,
    message_tokens,
    normalize_key,
    validate_speaker,
)
from agentloom.conversation._trim import (
    Summarizer,
    TrimResult,
    summary_request,
    transcript,
    trim,
)
from agentloom.conversation._turn import (
    ConversationBudgetError,
    TurnPlan,
    apply_speaker_style,
    commit_turn,
    prepare_turn,
)

__all__ = [
    "CHARS_PER_TOKEN",
    "MESSAGE_OVERHEAD_TOKENS",
    "Conversation",
    "ConversationBudgetError",
    "ConversationConflict",
    "ConversationMessage",
    "Summarizer",
    "TrimPolicy",
    "TrimResult",
    "TurnPlan",
    "apply_speaker_style",
    "commit_turn",
    "concurrency_predicate",
    "conflicting_conversation_steps",
    "estimate_tokens",
    "message_tokens",
    "normalize_key",
    "prepare_turn",
    "summary_request",
    "transcript",
    "trim",
    "validate_speaker",
]
