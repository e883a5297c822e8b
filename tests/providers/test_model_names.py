"""A provider's resolved model name is not a fallback; another model is (issue 15, item 2)."""

from __future__ import annotations

import pytest

from agentloom.providers.model_names import same_model


@pytest.mark.parametrize(("answered", "asked"), [
    ("gpt-4o", "gpt-4o"),
    ("gpt-4o-2024-08-06", "gpt-4o"),
    ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
    ("llama3:latest", "llama3"),
    ("gemini-1.5-pro-002", "gemini-1.5-pro"),
    ("claude-sonnet-4-20250514", "claude-sonnet-4-0"),
    ("claude-3-opus-20240229", "claude-3-opus-latest"),
    ("models/gemini-2.5-flash", "gemini-2.5-flash"),
    ("gemini-2.5-flash", "models/gemini-2.5-flash"),
    ("anthropic/claude-4.6-sonnet-20260217", "anthropic/claude-sonnet-4.6"),
    ("anthropic/claude-4.5-sonnet-20250929", "anthropic/claude-sonnet-4-5"),
    ("openai/gpt-5-mini-2025-08-07", "openai/gpt-5-mini"),
    ("llama-3.3-70b", "llama3.3-70b"),
])
def test_aliases_and_snapshots_are_the_model_asked_for(answered: str, asked: str) -> None:
    assert same_model(answered, asked)


@pytest.mark.parametrize(("answered", "asked"), [
    ("gpt-4o-mini", "gpt-4o"),
    ("gpt-4o-mini-2024-07-18", "gpt-4o"),
    ("claude-sonnet-4-5", "claude-sonnet-4"),
    ("claude-sonnet-4-5-20250929", "claude-sonnet-4-0"),
    ("claude-3-haiku-20240307", "claude-3-opus-latest"),
    ("x-ai/grok-4", "google/gemini-2.0-flash-exp:free"),
    ("gemini-2.5-pro", "gemini-2.5-flash"),
])
def test_another_model_is_not_the_model_asked_for(answered: str, asked: str) -> None:
    assert not same_model(answered, asked)
