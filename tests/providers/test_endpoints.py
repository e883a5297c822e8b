"""Vendor presets and endpoints from an environment mapping."""

from __future__ import annotations

import pytest

from agentloom.errors import ConfigError
from agentloom.providers import endpoints_from_env, vendor_endpoint


@pytest.mark.parametrize(("name", "protocol", "url", "key_env"), [
    ("openai", "openai", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    ("anthropic", "anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY"),
    ("gemini", "gemini", "https://generativelanguage.googleapis.com", "GEMINI_API_KEY"),
    ("ollama", "ollama", "http://127.0.0.1:11434", None),
])
def test_presets(name: str, protocol: str, url: str, key_env: str | None) -> None:
    ep = vendor_endpoint(name)
    assert (ep.name, ep.protocol, ep.base_url, ep.api_key_env, ep.api_key) == (
        name, protocol, url, key_env, None)


def test_generic_openai_needs_base_url_and_no_key() -> None:
    with pytest.raises(ConfigError, match="base_url"):
        vendor_endpoint("generic_openai")
    ep = vendor_endpoint("generic_openai", base_url="http://10.0.0.5:8000/v1/",
                         headers={"x-team": "a"}, models=["llama3"])
    assert ep.protocol == "openai" and ep.base_url == "http://10.0.0.5:8000/v1"
    assert ep.api_key_env is None and ep.headers == {"x-team": "a"} and ep.models == ("llama3",)


def test_unknown_vendor_lists_known_ones() -> None:
    with pytest.raises(ConfigError, match="generic_openai"):
        vendor_endpoint("openia")


def test_from_env_only_configured_providers() -> None:
    assert endpoints_from_env({}) == []
    eps = endpoints_from_env({
        "OPENAI_API_KEY": "sk-1", "OPENAI_BASE_URL": "http://127.0.0.1:5/v1",
        "GOOGLE_API_KEY": "g", "OLLAMA_HOST": "0.0.0.0", "ANTHROPIC_BASE_URL": "http://x",
    })
    assert [(e.name, e.base_url, e.api_key) for e in eps] == [
        ("openai", "http://127.0.0.1:5/v1", "sk-1"),
        ("gemini", "https://generativelanguage.googleapis.com", "g"),
        ("ollama", "http://127.0.0.1:11434", None),
    ]


def test_from_env_anthropic_and_gemini_key_precedence() -> None:
    eps = endpoints_from_env({"ANTHROPIC_API_KEY": "a", "ANTHROPIC_BASE_URL": "http://h/",
                              "GEMINI_API_KEY": "g1", "GOOGLE_API_KEY": "g2",
                              "OLLAMA_HOST": "https://box:8080"})
    assert [(e.name, e.base_url, e.api_key) for e in eps] == [
        ("anthropic", "http://h", "a"),
        ("gemini", "https://generativelanguage.googleapis.com", "g1"),
        ("ollama", "https://box:8080", None),
    ]
