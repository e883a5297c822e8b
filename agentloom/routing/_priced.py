"""A reply with its cost set: the router prices every call, so the copy is made by the
records' positional factories rather than by `dataclasses.replace`.
"""

from __future__ import annotations

from decimal import Decimal

from agentloom.messages import ModelResponse, new_response


def with_cost(response: ModelResponse, cost: Decimal | None) -> ModelResponse:
    """The response with its usage's cost set (and marked estimated when known)."""
    return new_response(
        response.parts, response.usage.with_cost(cost), response.finish_reason,
        response.model, response.provider, response.response_id, response.time_to_first_token,
    )
