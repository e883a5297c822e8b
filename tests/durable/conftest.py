"""Durable-run fixtures: the store tests' throwaway PostgreSQL server."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "store"))

from pg_server import pg_server as pg_server
