"""Tools for agents_review.yaml: run it with

    agentloom run examples/agents_review.yaml --tools examples/agents_review_tools.py
"""

from __future__ import annotations

from agentloom import tool


@tool
def lookup_date(event: str) -> str:
    """The date an event is planned for.

    Args:
        event: what is planned, such as "release".
    """
    planned = {"release": "Friday 5 December"}
    return planned.get(event.strip().lower(), "not planned yet")


@tool
def word_count(text: str) -> int:
    """How many words a text has.

    Args:
        text: the text.
    """
    return len(text.split())
