"""`agentloom schema`: the JSON Schema of the workflow format, for editors.

Generated from the same strict pydantic models the loader validates with, so the two can
not drift: unknown fields are `additionalProperties: false` here too.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from agentloom.cli._exit import EXIT_OK


def workflow_json_schema() -> dict[str, Any]:
    from agentloom.workflow import WorkflowDefinition

    schema = WorkflowDefinition.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "AgentLoom workflow (format v1)"
    return schema


def command_schema(args: argparse.Namespace) -> int:
    print(json.dumps(workflow_json_schema(), indent=2))
    return EXIT_OK
