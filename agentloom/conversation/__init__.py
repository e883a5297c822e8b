"""Conversations kept in the run's state: several steps continue one list of messages.

Job: conversation turns kept in state, and their trimming; pure. May import: types and
the layers up to `recording` (tests/test_layers.py holds the rule).

`Conversation.from_state` reads a state key; `prepare_turn` plans a turn in the spec's
order (system prompt, user turn, trim to the budget) and `commit_turn` adds the reply
(each wire module shows a speaker's name its provider's way). `conflicting_conversation_steps`
is the load-time check that two steps can't overwrite each other's turns. Each name
loads its module on first use: a run whose steps keep no conversation loads none.
"""

from typing import TYPE_CHECKING

from agentloom._lazy import lazy_getattr

if TYPE_CHECKING:
    from agentloom.conversation._check import ConversationConflict as ConversationConflict
    from agentloom.conversation._check import concurrency_predicate as concurrency_predicate
    from agentloom.conversation._check import (
        conflicting_conversation_steps as conflicting_conversation_steps,
    )
    from agentloom.conversation._model import CHARS_PER_TOKEN as CHARS_PER_TOKEN
    from agentloom.conversation._model import MESSAGE_OVERHEAD_TOKENS as MESSAGE_OVERHEAD_TOKENS
    from agentloom.conversation._model import Conversation as Conversation
    from agentloom.conversation._model import ConversationMessage as ConversationMessage
    from agentloom.conversation._model import TrimPolicy as TrimPolicy
    from agentloom.conversation._model import estimate_tokens as estimate_tokens
    from agentloom.conversation._model import message_tokens as message_tokens
    from agentloom.conversation._model import normalize_key as normalize_key
    from agentloom.conversation._model import validate_speaker as validate_speaker
    from agentloom.conversation._trim import Summarizer as Summarizer
    from agentloom.conversation._trim import TrimResult as TrimResult
    from agentloom.conversation._trim import summary_request as summary_request
    from agentloom.conversation._trim import transcript as transcript
    from agentloom.conversation._trim import trim as trim
    from agentloom.conversation._turn import ConversationBudgetError as ConversationBudgetError
    from agentloom.conversation._turn import TurnPlan as TurnPlan
    from agentloom.conversation._turn import commit_turn as commit_turn
    from agentloom.conversation._turn import prepare_turn as prepare_turn

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

_LAZY = {
    "ConversationConflict": "agentloom.conversation._check",
    "concurrency_predicate": "agentloom.conversation._check",
    "conflicting_conversation_steps": "agentloom.conversation._check",
    "CHARS_PER_TOKEN": "agentloom.conversation._model",
    "MESSAGE_OVERHEAD_TOKENS": "agentloom.conversation._model",
    "Conversation": "agentloom.conversation._model",
    "ConversationMessage": "agentloom.conversation._model",
    "TrimPolicy": "agentloom.conversation._model",
    "estimate_tokens": "agentloom.conversation._model",
    "message_tokens": "agentloom.conversation._model",
    "normalize_key": "agentloom.conversation._model",
    "validate_speaker": "agentloom.conversation._model",
    "Summarizer": "agentloom.conversation._trim",
    "TrimResult": "agentloom.conversation._trim",
    "summary_request": "agentloom.conversation._trim",
    "transcript": "agentloom.conversation._trim",
    "trim": "agentloom.conversation._trim",
    "ConversationBudgetError": "agentloom.conversation._turn",
    "TurnPlan": "agentloom.conversation._turn",
    "commit_turn": "agentloom.conversation._turn",
    "prepare_turn": "agentloom.conversation._turn",
}

__getattr__ = lazy_getattr(__name__, _LAZY, globals())
