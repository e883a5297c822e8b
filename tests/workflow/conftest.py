"""Fixtures of the workflow tests; helpers live in wf_helpers.py."""

from __future__ import annotations

import pytest
from wf_helpers import FakeClock


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()
