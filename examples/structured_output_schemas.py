"""Pydantic models for `structured_output.yaml` (imported from the run directory)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel


class Classification(BaseModel):
    """The intent of a customer message."""

    label: Literal["billing", "technical", "other"]
    confidence: float
