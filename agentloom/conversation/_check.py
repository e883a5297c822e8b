"""The load-time check that no two steps which may run at once share a conversation.

Each step reads the conversation, adds its turn and writes its own copy back; two steps
running at the same time would each drop the other's turn. Whether two steps can run at
the same time is the workflow's knowledge (depends_on paths, router branches), so it is
passed in as a predicate; `concurrency_predicate` builds the usual one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from agentloom.conversation._model import normalize_key


@dataclass(frozen=True, slots=True)
class ConversationConflict:
    key: str
    first: str
    second: str

    @property
    def message(self) -> str:
        return (
            f"steps {self.first!r} and {self.second!r} may run at the same time on "
            f"conversation {self.key!r}, and one of their turns would be lost: chain them "
            "with depends_on"
        )


def conflicting_conversation_steps(
    steps: Mapping[str, str | None] | Iterable[tuple[str, str | None]],
    can_run_concurrently: Callable[[str, str], bool],
) -> list[ConversationConflict]:
    """Every pair of steps on one conversation that `can_run_concurrently` allows to
    overlap, in file order. `steps` maps step id to its `conversation` (None: none);
    `state.chat` and `chat` are the same key."""
    items = steps.items() if isinstance(steps, Mapping) else steps
    by_key: dict[str, list[str]] = {}
    for step_id, key in items:
        if key is not None:
            by_key.setdefault(normalize_key(key), []).append(step_id)
    conflicts: list[ConversationConflict] = []
    for key, ids in by_key.items():
        for i, first in enumerate(ids):
            for second in ids[i + 1 :]:
                if can_run_concurrently(first, second):
                    conflicts.append(ConversationConflict(key, first, second))
    return conflicts


def concurrency_predicate(
    depends_on: Mapping[str, Iterable[str]],
    *,
    exclusive: Callable[[str, str], bool] | None = None,
) -> Callable[[str, str], bool]:
    """`can_run_concurrently(a, b)`: True when no depends_on path joins a and b and
    `exclusive(a, b)` (e.g. both are branches of one router) is not True."""
    deps = {k: tuple(v) for k, v in depends_on.items()}
    memo: dict[str, frozenset[str]] = {}

    def ancestors(step: str) -> frozenset[str]:
        if step in memo:
            return memo[step]
        memo[step] = frozenset()  # cycle guard: the loader reports cycles itself
        seen: set[str] = set()
        stack = list(deps.get(step, ()))
        while stack:
            s = stack.pop()
            if s in seen:
                continue
            seen.add(s)
            stack.extend(deps.get(s, ()))
        memo[step] = frozenset(seen)
        return memo[step]

    def can_run_concurrently(a: str, b: str) -> bool:
        if a == b or a in ancestors(b) or b in ancestors(a):
            return False
        return not (exclusive is not None and exclusive(a, b))

    return can_run_concurrently
