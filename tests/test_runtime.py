"""Runtime resolution: pinned providers, configured order, missing keys, unknown names,
no keys -> local; profiles and fallback become candidates. No model is started here."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agentloom.errors import ConfigError
from agentloom.messages import Message, ModelRequest
from agentloom.providers._endpoints import vendor_endpoint
from agentloom.routing import FallbackEntry, Profile, RateLimit, RetryPolicy, RunBudget
from agentloom.routing.runtime import Runtime
from agentloom.testing import FakeClock

KEYS = {"OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "ak-test"}


def test_from_env_reads_only_the_mapping() -> None:
    rt = Runtime.from_env(
        {
            **KEYS,
            "GOOGLE_API_KEY": "g",
            "AGENTLOOM_MODEL": "gpt-4o",
            "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        }
    )
    assert [e.name for e in rt.endpoints] == ["openai", "anthropic", "gemini"]
    assert rt.endpoints[0].base_url == "http://127.0.0.1:9/v1"
    assert rt.default_model == "gpt-4o" and rt.default_provider == "openai"


def test_from_env_given_a_model_name_says_what_it_takes() -> None:
    from agentloom import Agent

    for call in (lambda: Runtime.from_env("gpt-4o-mini"),  # type: ignore[arg-type]
                 lambda: Agent.from_env("openai:gpt-4o-mini")):  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"mapping \(e.g. os.environ\), not str; give "
                                            r"the model as model="):
            call()


def test_model_goes_to_the_endpoints_that_serve_it_in_order() -> None:
    rt = Runtime.from_env(KEYS)
    assert rt.resolve("gpt-4o-mini") == [("openai", "gpt-4o-mini")]
    assert rt.resolve("claude-sonnet-4-5") == [("anthropic", "claude-sonnet-4-5")]
    rt.add_provider(
        "azure", {"type": "openai", "base_url": "http://127.0.0.1:9/v1", "models": ["gpt-4o-mini"]}
    )
    assert rt.resolve("gpt-4o-mini") == [("openai", "gpt-4o-mini"), ("azure", "gpt-4o-mini")]
    client = rt.client(model="gpt-4o-mini")
    assert [(c.provider, c.model) for c in client.candidates] == [
        ("openai", "gpt-4o-mini"),
        ("azure", "gpt-4o-mini"),
    ]


def test_generic_endpoints_serve_only_listed_models_unless_pinned() -> None:
    rt = Runtime(endpoints=[vendor_endpoint("generic_openai", base_url="http://127.0.0.1:9")])
    with pytest.raises(ConfigError, match="no configured provider serves model 'qwen'"):
        rt.resolve("qwen")
    assert rt.resolve("qwen", "generic_openai") == [("generic_openai", "qwen")]


def test_pinned_provider() -> None:
    rt = Runtime.from_env(KEYS)
    assert rt.resolve("gpt-4o", "anthropic") == [("anthropic", "gpt-4o")]
    assert rt.resolve(None, "anthropic") == [("anthropic", "claude-haiku-4-5")]
    rt2 = Runtime.from_env({**KEYS, "AGENTLOOM_PROVIDER": "anthropic"})
    assert rt2.resolve("claude-opus-4-1") == [("anthropic", "claude-opus-4-1")]


def test_missing_key_names_the_variable() -> None:
    rt = Runtime.from_env({"OPENAI_API_KEY": "sk"})
    with pytest.raises(ConfigError, match="set ANTHROPIC_API_KEY"):
        rt.client(model="claude-haiku-4-5", provider="anthropic")
    with pytest.raises(ConfigError, match="GEMINI_API_KEY"):
        rt.resolve(None, "gemini")


def test_unknown_provider_lists_the_configured_ones() -> None:
    rt = Runtime.from_env(KEYS)
    with pytest.raises(ConfigError) as info:
        rt.resolve("gpt-4o", "opnai")
    assert "unknown provider 'opnai'" in str(info.value)
    assert "openai, anthropic" in str(info.value)


def test_unserved_model_with_keys_set_is_a_clear_error() -> None:
    rt = Runtime.from_env({"OPENAI_API_KEY": "sk"})
    with pytest.raises(ConfigError, match="claude-haiku-4-5"):
        rt.resolve("claude-haiku-4-5")


def test_no_keys_means_local_smollm2() -> None:
    rt = Runtime.from_env({})
    assert rt.default_provider == "local" and rt.default_model == "smollm2"
    assert rt.resolve(None) == [("local", "smollm2")]
    assert rt.resolve("gpt-4o-mini") == [("local", "smollm2")]  # offline stand-in
    client = rt.client(model="gpt-4o-mini")
    (cand,) = client.candidates
    assert (cand.provider, cand.model, cand.protocol) == ("local", "smollm2", "llamacpp")
    assert rt._local is None  # nothing started until a call happens


def test_local_can_be_pinned_next_to_keys() -> None:
    rt = Runtime.from_env(KEYS)
    assert rt.resolve(None, "local") == [("local", "smollm2")]


def test_workflow_providers_and_api_key_env() -> None:
    rt = Runtime.from_env({"MY_KEY": "secret"})
    ep = rt.add_provider(
        "my_vllm",
        {
            "base_url": "http://127.0.0.1:8000/v1",
            "api_key_env": "MY_KEY",
            "headers": {"x-a": "1"},
            "models": ["llama-3"],
        },
    )
    assert (ep.name, ep.protocol, ep.api_key, ep.headers) == (
        "my_vllm",
        "openai",
        "secret",
        {"x-a": "1"},
    )
    missing = rt.add_provider(
        "other", {"base_url": "http://127.0.0.1:8001/v1", "api_key_env": "NOT_SET"}
    )
    assert missing.api_key is None and missing.api_key_env == "NOT_SET"
    claude = rt.add_provider("proxy", {"type": "anthropic", "base_url": "http://127.0.0.1:1"})
    assert claude.protocol == "anthropic"
    assert rt.resolve("llama-3") == [("my_vllm", "llama-3")]


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        ({"type": "grpc", "base_url": "http://x"}, "unknown protocol"),
        ({"type": "openai"}, "base_url"),
        ({"base_url": "http://x", "modles": []}, "unknown field"),
        ({"base_url": "http://x", "models": "gpt"}, "models"),
    ],
)
def test_bad_provider_entries(config: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        Runtime().add_provider("p", config)


def test_fallback_entries_become_candidates_with_their_own_models() -> None:
    rt = Runtime.from_env(KEYS)
    client = rt.client(
        model="gpt-4o",
        fallback=[
            FallbackEntry(
                provider="anthropic", model="claude-sonnet-4-5", retry=RetryPolicy(max_retries=0)
            )
        ],
    )
    assert [(c.provider, c.model) for c in client.candidates] == [
        ("openai", "gpt-4o"),
        ("anthropic", "claude-sonnet-4-5"),
    ]
    assert client.candidates[1].retry == RetryPolicy(max_retries=0)
    assert client.candidates[0].retry is None  # the client's policy
    assert client.retry.max_retries == 2  # call-level default for the Agent API


def test_profile_settings_and_explicit_arguments_win() -> None:
    rt = Runtime.from_env(KEYS)
    profile = Profile.from_dict(
        "p",
        {
            "provider": "openai",
            "model": "gpt-5-mini",
            "params": {"reasoning_effort": "low"},
            "max_tokens": 1000,
            "retries": 5,
            "pricing": {"input": 1, "output": 1},
            "fallback": [{"provider": "anthropic", "model": "claude-haiku-4-5"}],
        },
    )
    client = rt.client(profile=profile)
    first = client.candidates[0]
    assert (first.provider, first.model, first.max_tokens) == ("openai", "gpt-5-mini", 1000)
    assert first.params == {"reasoning_effort": "low"}
    assert first.price is not None and first.price.input == Decimal(1)
    assert client.retry.max_retries == 5
    assert client.candidates[1].model == "claude-haiku-4-5"
    client2 = rt.client(profile=profile, model="gpt-4o", retry=RetryPolicy(max_retries=0))
    assert client2.candidates[0].model == "gpt-4o" and client2.retry.max_retries == 0


def test_profile_with_base_url_gets_its_own_endpoint() -> None:
    rt = Runtime.from_env({"VLLM_KEY": "k"})
    profile = Profile.from_dict(
        "mine", {"base_url": "http://127.0.0.1:9/v1", "model": "qwen", "api_key_env": "VLLM_KEY"}
    )
    (cand,) = rt.client(profile=profile).candidates
    assert cand.provider == "profile:mine" and cand.model == "qwen"
    ep = next(e for e in rt.endpoints if e.name == "profile:mine")
    assert ep.api_key == "k"


def test_breakers_and_limiters_are_shared_by_every_client() -> None:
    rt = Runtime.from_env(KEYS, rate_limits={"openai": RateLimit(rpm=100)}, clock=FakeClock())
    a = rt.client(model="gpt-4o").candidates[0]
    b = rt.client(model="gpt-4o-mini").candidates[0]
    assert a.breaker is b.breaker and a.limiter is b.limiter and a.limiter is not None
    assert rt.client(model="claude-haiku-4-5").candidates[0].limiter is None


async def test_budget_over_an_unpriced_model_fails_before_any_io() -> None:
    rt = Runtime(
        endpoints=[
            vendor_endpoint("generic_openai", base_url="http://127.0.0.1:9", models=("llama-x",))
        ]
    )
    client = rt.client(model="llama-x", budget=RunBudget(max_cost_usd=Decimal("1")))
    request = ModelRequest(model="llama-x", messages=(Message.user("hi"),))
    with pytest.raises(ConfigError, match="llama-x"):
        await client.complete(request)
    assert rt._transport is None  # no transport was even created
    await rt.aclose()


async def test_runtime_end_to_end_against_the_fake_server() -> None:
    from agentloom.testing.fake_openai import FakeOpenAIServer

    async with FakeOpenAIServer() as server:
        assert isinstance(server, FakeOpenAIServer)
        async with Runtime(clock=FakeClock()) as rt:
            rt.add_provider("openai", {"base_url": server.openai_base_url, "api_key": "sk"})
            client = rt.client(model="gpt-4o-mini")
            server.script("hello there")
            response = await client.complete(
                ModelRequest(model="gpt-4o-mini", messages=(Message.user("hi"),))
            )
            assert response.text == "hello there"
            assert response.usage.cost_usd is not None and response.usage.cost_usd > 0
            assert server.requests[0].headers["authorization"] == "Bearer sk"


def test_pinned_ollama_uses_its_default_address_without_becoming_a_catch_all() -> None:
    rt = Runtime.from_env({})
    assert rt.resolve("llama3.2:3b", "ollama") == [("ollama", "llama3.2:3b")]
    (cand,) = rt.client(model="llama3.2:3b", provider="ollama").candidates
    assert cand.protocol == "ollama"
    assert rt.resolve("gpt-4o") == [("local", "smollm2")]  # still no configured provider


def test_google_is_an_alias_of_gemini() -> None:
    rt = Runtime.from_env({"GEMINI_API_KEY": "g", "AGENTLOOM_PROVIDER": "google"})
    assert rt.default_provider == "gemini"
    assert rt.resolve(None) == [("gemini", "gemini-2.5-flash")]


def test_fallback_entry_without_provider_goes_to_whoever_serves_its_model() -> None:
    rt = Runtime.from_env({**KEYS, "AGENTLOOM_PROVIDER": "openai"})
    client = rt.client(model="gpt-4o", fallback=[FallbackEntry(model="claude-haiku-4-5")])
    assert [(c.provider, c.model) for c in client.candidates] == [
        ("openai", "gpt-4o"),
        ("anthropic", "claude-haiku-4-5"),
    ]


def test_pinned_local_always_answers_as_smollm2() -> None:
    rt = Runtime.from_env({"AGENTLOOM_LOCAL_MODEL_PATH": "/models/other.gguf"})
    assert rt.resolve("gpt-4o", "local") == [("local", "smollm2")]
    assert rt.local_model_path == "/models/other.gguf"


class _ClosingTransport:
    def __init__(self) -> None:
        self.closed = False

    async def handle(self, request: object) -> object:
        raise AssertionError("no request is sent")

    async def aclose(self) -> None:
        self.closed = True


async def test_a_given_transport_is_closed_only_when_handed_over() -> None:
    kept, handed = _ClosingTransport(), _ClosingTransport()
    await Runtime(transport=kept).aclose()  # type: ignore[arg-type]
    await Runtime(transport=handed, owns_transport=True).aclose()  # type: ignore[arg-type]
    assert (kept.closed, handed.closed) == (False, True)
