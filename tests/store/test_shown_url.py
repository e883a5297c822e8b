"""A store URL in a message, hint or log line shows no password: libpq takes one in the
user part and in the query (`?password=`), and the masks of each was missed before."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentloom.store import shown_url


@pytest.mark.parametrize(("url", "shown", "dropped"), [
    ("postgresql://bob:hunter2pw@db:5432/runs", "postgresql://bob:***@db:5432/runs",
     "postgresql://bob@db:5432/runs"),
    ("postgresql://db/runs?password=hunter2pw&sslmode=require",
     "postgresql://db/runs?password=***&sslmode=require",
     "postgresql://db/runs?sslmode=require"),
    ("postgresql://:hunter2pw@db/runs?SSLPassword=hunter2pw",
     "postgresql://:***@db/runs?SSLPassword=***", "postgresql://db/runs"),
    ("postgresql://b%40b:p%40ss@db/runs", "postgresql://b%40b:***@db/runs",
     "postgresql://b%40b@db/runs"),
    ("postgresql://bob@db/runs", "postgresql://bob@db/runs", "postgresql://bob@db/runs"),
    ("runs.db", "runs.db", "runs.db"),
    ("sqlite:////var/lib/al/runs.db", "sqlite:////var/lib/al/runs.db",
     "sqlite:////var/lib/al/runs.db"),
])
def test_a_store_url_is_shown_without_its_password(url: str, shown: str,
                                                   dropped: str) -> None:
    assert shown_url(url) == shown
    assert shown_url(url, drop=True) == dropped


def test_a_store_that_does_not_connect_names_its_url_without_the_password() -> None:
    pytest.importorskip("psycopg")
    url = "postgresql://127.0.0.1:9/runs?password=hunter2pw&connect_timeout=5"
    done = subprocess.run([sys.executable, "-m", "agentloom", "runs", "--store", url],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "cannot connect to the run store at postgresql://127.0.0.1:9/runs?password=***" \
        in done.stderr, done.stderr
    assert "hunter2pw" not in done.stderr
