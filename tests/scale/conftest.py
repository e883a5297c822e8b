"""Fixtures of the batch tests: a fake OpenAI server with deterministic echo replies, the
two-step workflow that talks to it, and one local Ray instance per session."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from scale_helpers import echo_reply

TWO_STEP = """\
name: two-step
state:
  text: "default"
steps:
  - id: first
    type: llm_call
    model: gpt-4o-mini
    prompt: "Summarize: {state.text}"
    output: summary
  - id: second
    type: llm_call
    model: gpt-4o-mini
    depends_on: [first]
    prompt: "Title for: {state.summary}"
    output: title
"""


@pytest.fixture(scope="session")
def fake_openai() -> Iterator[Any]:
    from agentloom.testing.fake_openai import FakeOpenAIServer

    server = FakeOpenAIServer(responder=echo_reply, latency=0.0)
    server.start_in_thread()
    yield server
    server.stop_thread()


@pytest.fixture
def flow(tmp_path: Path) -> Path:
    path = tmp_path / "two.yaml"
    path.write_text(TWO_STEP, encoding="utf-8")
    return path


@pytest.fixture
def fake_env(fake_openai: Any) -> dict[str, str]:
    return {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": fake_openai.openai_base_url}


@pytest.fixture(scope="session")
def ray_local() -> Iterator[Any]:
    try:
        import ray
    except ImportError:
        pytest.skip("ray is not installed (pip install 'agentloom-engine[ray]')")
    import scale_helpers
    from ray import cloudpickle

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    cloudpickle.register_pickle_by_value(scale_helpers)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             logging_level="ERROR")
    yield ray
    ray.shutdown()
