"""The web app over the run store: the run list, a run's graph, timeline and steps, live
updates, and approvals; with the JSON API behind every page.

Job: the web app over the store. May import: the layers up to `scale`
(tests/test_layers.py holds the rule).

    from agentloom.ui import UiSettings, create_app
    app = create_app(UiSettings(store=open_store(None), store_url=".agentloom/runs.db"))

`agentloom ui` serves it; `docs/ui.md` documents the pages, the API and its guards. The
pages and their script and style ship inside this package (`static/`): no build step,
nothing fetched from elsewhere.
"""

from __future__ import annotations

from agentloom.ui._app import UiSettings, create_app, serve
from agentloom.ui._history import History, HistoryCache
from agentloom.ui._load import GraphCache, load_detail, load_page, load_step
from agentloom.ui._security import is_loopback
from agentloom.ui._view import run_detail, run_row, step_details

__all__ = ["GraphCache", "History", "HistoryCache", "UiSettings", "create_app", "is_loopback",
           "load_detail", "load_page", "load_step", "run_detail", "run_row", "serve",
           "step_details"]
