"""Our GenAI semantic-convention constants match the published conventions package."""

from __future__ import annotations

import pytest

from agentloom.observe import semconv as sc


def test_genai_names_match_the_published_conventions() -> None:
    attrs = pytest.importorskip(
        "opentelemetry.semconv._incubating.attributes.gen_ai_attributes")
    metrics = pytest.importorskip("opentelemetry.semconv._incubating.metrics.gen_ai_metrics")
    from opentelemetry.semconv.attributes import error_attributes

    checked = 0
    for name in dir(sc):
        if name.startswith("GEN_AI_"):
            assert getattr(attrs, name) == getattr(sc, name), name
            checked += 1
    assert checked >= 20
    assert sc.ERROR_TYPE == error_attributes.ERROR_TYPE
    assert sc.METRIC_OPERATION_DURATION == metrics.GEN_AI_CLIENT_OPERATION_DURATION
    assert sc.METRIC_TOKEN_USAGE == metrics.GEN_AI_CLIENT_TOKEN_USAGE
    assert sc.METRIC_TIME_TO_FIRST_CHUNK == metrics.GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK
    ops = attrs.GenAiOperationNameValues
    assert {sc.OP_CHAT, sc.OP_EXECUTE_TOOL, sc.OP_INVOKE_AGENT} <= {v.value for v in ops}
