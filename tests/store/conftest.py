"""Store test fixtures: `pg_server`, a real throwaway PostgreSQL (see pg_server.py)."""

from __future__ import annotations

from pg_server import pg_server as pg_server
