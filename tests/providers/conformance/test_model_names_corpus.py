"""The corpus's recorded model names against `same_model` (issue 15, item 2): a reply that
names its model differently from the request is still the model asked for."""

from __future__ import annotations

from agentloom.providers.model_names import same_model

from ._oracle import ORACLES
from .test_replay import CASES, model_of


def test_recorded_replies_name_the_model_asked_for() -> None:
    """Every recorded 200 reply of the corpus whose model differs in name from the request
    (aliases, snapshots, renamed ids) still counts as the model asked for."""
    pairs = set()
    for case in CASES:
        want = ORACLES[case["family"]](case)
        if want.error_status is None and want.model:
            pairs.add((want.model, model_of(case)))
    renamed = {(a, b) for a, b in pairs if a != b}
    assert len(renamed) >= 5
    # Names cannot tell these apart: a free router that picked another model, and aliases
    # to a differently named model (DeepSeek's `deepseek-reasoner`, Groq's compound).
    other = {("x-ai/grok-4", "google/gemini-2.0-flash-exp:free"),
             ("deepseek-v4-flash", "deepseek-reasoner"), ("groq/compound", "compound-beta"),
             ("gpt-5.6-sol", "gpt-5.6")}
    assert {p for p in renamed if not same_model(*p)} == other
