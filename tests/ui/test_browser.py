"""The UI in a real headless Chromium (Debian's, driven by Selenium and chromedriver):
the list, a run with a parallel fan-out and a retry, approving a paused gate and watching
the run finish, hostile model output shown as text. Every wait is on a DOM condition."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from agentloom.testing.fake_openai import FakeOpenAIServer
from tests.ui.harness import (
    HOSTILE,
    RUN_IDS,
    chromium,
    cli_env,
    fake_openai,
    make_runs,
    run_cli,
    ui_process,
)

WAIT = 30  # an upper bound on a DOM condition, never a sleep


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One store with a paused fan-out run and a finished one, one UI, one browser."""
    home = tmp_path_factory.mktemp("ui")
    with fake_openai() as server:
        env = cli_env(server)
        make_runs(env, home)
        driver = chromium(home / "profile")
        try:
            with ui_process(env, home) as ui:
                yield {"home": home, "ui": ui, "driver": driver, "env": env}
        finally:
            driver.quit()


def wait(driver: Any) -> WebDriverWait[Any]:
    return WebDriverWait(driver, WAIT)


def test_the_list_shows_the_runs_with_their_facts(world: dict[str, Any]) -> None:
    driver = world["driver"]
    driver.get(world["ui"].url)
    wait(driver).until(ec.presence_of_element_located((By.CSS_SELECTOR, "body[data-loaded]")))
    rows = {r.get_attribute("data-run"): r.text for r in
            driver.find_elements(By.CSS_SELECTOR, "#runs tr.run")}
    assert set(rows) == RUN_IDS  # fan-1 stays paused
    assert "paused" in rows["fan-1"] and "fan-out-gate" in rows["fan-1"]
    assert "succeeded" in rows["fan-2"]
    assert f"{len(RUN_IDS)} runs" in driver.find_element(By.ID, "count").text
    # The batch's runs sit together under its heading, which links the whole batch.
    body = [(r.get_attribute("class"), r.get_attribute("data-run") or r.text) for r in
            driver.find_elements(By.CSS_SELECTOR, "#runs tbody tr")]
    heading = next(i for i, (cls, _) in enumerate(body) if cls == "batch")
    assert "batch nightly · 2 runs on this page (2 succeeded)" in body[heading][1]
    assert {body[heading + 1][1], body[heading + 2][1]} == {"nightly.tea", "nightly.cake"}
    # Filter by status through the form.
    Select(driver.find_element(By.ID, "f-status")).select_by_visible_text("succeeded")
    driver.find_element(By.CSS_SELECTOR, "#filters button").click()
    wait(driver).until(ec.url_contains("status=succeeded"))
    wait(driver).until(ec.presence_of_element_located((By.CSS_SELECTOR, "body[data-loaded]")))
    shown = {r.get_attribute("data-run") for r in
             driver.find_elements(By.CSS_SELECTOR, "#runs tr.run")}
    assert "fan-2" in shown and "fan-1" not in shown
    # Search by a piece of the id, through the form.
    driver.get(world["ui"].url)
    wait(driver).until(ec.presence_of_element_located((By.CSS_SELECTOR, "body[data-loaded]")))
    driver.find_element(By.ID, "f-q").send_keys("fan-")
    driver.find_element(By.CSS_SELECTOR, "#filters button").click()
    wait(driver).until(ec.url_contains("q=fan-"))
    wait(driver).until(ec.presence_of_element_located((By.CSS_SELECTOR, "body[data-loaded]")))
    assert {r.get_attribute("data-run") for r in driver.find_elements(
        By.CSS_SELECTOR, "#runs tr.run")} == {"fan-1", "fan-2", "fan-3"}
    driver.get(world["ui"].url)
    wait(driver).until(ec.presence_of_element_located((By.CSS_SELECTOR, "body[data-loaded]")))
    driver.find_element(By.LINK_TEXT, "nightly").click()
    wait(driver).until(ec.url_contains("batch=nightly"))
    wait(driver).until(ec.presence_of_element_located((By.CSS_SELECTOR, "body[data-loaded]")))
    assert {r.get_attribute("data-run") for r in driver.find_elements(
        By.CSS_SELECTOR, "#runs tr.run")} == {"nightly.tea", "nightly.cake"}


def test_a_run_shows_its_graph_and_parallel_lanes_and_the_retry(world: dict[str, Any]) -> None:
    driver = world["driver"]
    driver.get(f"{world['ui'].base}/runs/fan-2")
    wait(driver).until(ec.presence_of_element_located(
        (By.CSS_SELECTOR, "body[data-status=succeeded]")))
    nodes = driver.find_elements(By.CSS_SELECTOR, "#graph g.node")
    assert {n.get_attribute("data-step") for n in nodes} == {
        "outline", "beginners", "experts", "approve", "publish"}
    bars = {b.get_attribute("data-step") + "/" + b.get_attribute("data-kind"): b
            for b in driver.find_elements(By.CSS_SELECTOR, "#timeline .bar")}
    lane = {k: b.find_element(By.XPATH, "..").get_attribute("data-lane") for k, b in bars.items()}
    assert lane["beginners/step"] != lane["experts/step"], "parallel steps share a lane"
    assert "retried" in bars["beginners/step"].get_attribute("class")
    assert "↻2" in bars["beginners/step"].text
    assert "approve/wait" in bars, "the wait for a person is on the timeline"
    step = driver.find_element(By.CSS_SELECTOR, "details.step[data-step=beginners]")
    assert "attempts 2" in step.text and "gpt-4o-mini" in step.text and "openai" in step.text
    step.find_element(By.TAG_NAME, "summary").click()
    wait(driver).until(lambda d: "Model exchanges (1)" in step.text)


def test_approving_in_the_browser_finishes_the_run(world: dict[str, Any]) -> None:
    driver = world["driver"]
    driver.get(f"{world['ui'].base}/runs/fan-3")
    approve = wait(driver).until(ec.element_to_be_clickable((By.ID, "approve")))
    assert "publish both drafts?" in driver.find_element(By.ID, "prompt").text
    approve.click()
    wait(driver).until(ec.presence_of_element_located(
        (By.CSS_SELECTOR, "body[data-status=succeeded]")))  # pushed by the event stream
    assert driver.find_element(By.ID, "decision").get_attribute("hidden") is not None
    node = driver.find_element(By.CSS_SELECTOR, "#graph g.node[data-step=publish]")
    assert "s-success" in node.get_attribute("class")


def test_answering_a_question_in_the_browser_finishes_the_run(world: dict[str, Any]) -> None:
    driver = world["driver"]
    driver.get(f"{world['ui'].base}/runs/ask-1")
    choice = wait(driver).until(ec.element_to_be_clickable((By.ID, "answer")))
    assert "which color?" in driver.find_element(By.ID, "prompt").text
    Select(choice).select_by_visible_text("blue")
    driver.find_element(By.ID, "answer-button").click()
    wait(driver).until(ec.presence_of_element_located(
        (By.CSS_SELECTOR, "body[data-status=succeeded]")))
    assert json.loads(driver.find_element(By.ID, "state").text)["color"] == "blue"


@contextmanager
def _ended_run(tmp_path: Path, flow: str, run_id: str,
               told: str) -> Iterator[tuple[FakeOpenAIServer, dict[str, str]]]:
    """`flow` run to its end (exit 1) against a fresh fake server, whose stderr says
    `told`; yields the server and the environment the UI runs with."""
    (tmp_path / f"{run_id}.yaml").write_text(flow)
    with fake_openai(latency=0) as server:
        env = cli_env(server)
        done = run_cli(env, tmp_path, "run", f"{run_id}.yaml", "--run-id", run_id)
        assert done.returncode == 1 and told in done.stderr, done.stderr
        yield server, env


BROKEN_FLOW = """\
name: broken
config: {model: gpt-4o-mini, provider: openai}
steps:
  - {id: draft, type: llm_call, prompt: "draft it", output: d}
  - {id: finish, type: llm_call, depends_on: [draft], prompt: "BROKEN finish {state.d}",
     output: f}
"""


def test_retrying_a_failed_run_in_the_browser_finishes_it(world: dict[str, Any],
                                                          tmp_path: Path) -> None:
    """A failed run's page names the failure and offers Retry (`resume --retry-failed`):
    the failed step runs again, the one that succeeded is not asked again."""
    driver = world["driver"]
    with _ended_run(tmp_path, BROKEN_FLOW, "broken-1", "--retry-failed") as (server, env):
        server.responder.broken = False  # type: ignore[attr-defined]  # the cause is fixed
        with ui_process(env, tmp_path) as ui:
            driver.get(f"{ui.base}/runs/broken-1")
            retry = wait(driver).until(ec.element_to_be_clickable((By.ID, "retry")))
            assert driver.find_element(By.ID, "decision-title").text == "The run failed"
            assert "Step finish failed" in driver.find_element(By.ID, "prompt").text
            retry.click()
            wait(driver).until(ec.presence_of_element_located(
                (By.CSS_SELECTOR, "body[data-status=succeeded]")))
            assert driver.find_element(By.ID, "decision").get_attribute("hidden") is not None
        prompts = [r.json["messages"][-1]["content"] for r in server.requests]
        assert prompts == ["draft it", "BROKEN finish about draft it",
                           "BROKEN finish about draft it"]


CAPPED_FLOW = """\
name: capped
config: {model: gpt-4o-mini, provider: openai, max_tokens_per_run: 40}
steps:
  - {id: first, type: llm_call, max_tokens: 10,
     prompt: "First: one short fact, in a few words only."}
  - {id: second, type: llm_call, max_tokens: 10, depends_on: [first],
     prompt: "Second: one short fact, in a few words only."}
"""


def test_a_run_stopped_at_its_cap_goes_on_under_a_higher_one_in_the_browser(
        world: dict[str, Any], tmp_path: Path) -> None:
    """A budget_exceeded run's page names the refusal and takes a higher cap: the refused
    step runs under it (`resume --retry-failed --max-tokens-per-run`), the first is kept."""
    driver = world["driver"]
    with _ended_run(tmp_path, CAPPED_FLOW, "capped-1", "raise its cap") as (server, env):
        with ui_process(env, tmp_path) as ui:
            driver.get(f"{ui.base}/runs/capped-1")
            go_on = wait(driver).until(ec.element_to_be_clickable((By.ID, "go-on")))
            assert driver.find_element(By.ID, "decision-title").text == \
                "The run stopped at its budget"
            assert "Step second was refused" in driver.find_element(By.ID, "prompt").text
            driver.find_element(By.ID, "cap-tokens").send_keys("100")
            go_on.click()
            wait(driver).until(ec.presence_of_element_located(
                (By.CSS_SELECTOR, "body[data-status=succeeded]")))
        prompts = [r.json["messages"][-1]["content"] for r in server.requests]
        assert [p.split(":")[0] for p in prompts] == ["First", "Second"]


def test_hostile_model_output_renders_as_text(world: dict[str, Any]) -> None:
    driver = world["driver"]
    driver.get(f"{world['ui'].base}/runs/fan-2")
    step = wait(driver).until(ec.presence_of_element_located(
        (By.CSS_SELECTOR, "details.step[data-step=publish]")))
    step.find_element(By.TAG_NAME, "summary").click()
    wait(driver).until(lambda d: "<script>" in step.text)
    assert HOSTILE in step.find_element(By.CSS_SELECTOR, "pre").text
    assert driver.execute_script("return window.__pwned === undefined") is True
    assert driver.find_elements(By.CSS_SELECTOR, "#steps img, #steps b, #steps script") == []
    state = driver.find_element(By.ID, "state").text
    assert json.loads(state)["published"] == HOSTILE


def _hold_event_streams(base: str, run_id: str, count: int) -> list[socket.socket]:
    """`count` event streams of `run_id`, each past its first event: open, as the UI
    counts them."""
    url = urlsplit(base)
    held = []
    for _ in range(count):
        conn = socket.create_connection((url.hostname, url.port), timeout=WAIT)
        held.append(conn)
        conn.sendall(f"GET /api/runs/{run_id}/events HTTP/1.1\r\nHost: {url.netloc}\r\n"
                     "\r\n".encode())
        got = b""
        while b"event: run" not in got:
            chunk = conn.recv(65536)
            assert chunk, got[:200]
            got += chunk
        assert got.startswith(b"HTTP/1.1 200 "), got[:200]
    return held


def test_a_page_refused_its_event_stream_shows_the_run_and_follows_it_later(
        world: dict[str, Any]) -> None:
    """While the UI's 32 event streams are taken, a run page gets a 503 for its own (which
    EventSource gives up on): it shows the run as it is, and follows it once a place is
    free (it asks again every 5 s)."""
    driver = world["driver"]
    held = _hold_event_streams(world["ui"].base, "fan-1", 32)
    try:
        driver.get(f"{world['ui'].base}/runs/fan-1")
        wait(driver).until(ec.presence_of_element_located(
            (By.CSS_SELECTOR, "body[data-status=paused]")))
        assert driver.find_element(By.ID, "live").get_attribute("hidden") is not None
    finally:
        for conn in held:
            conn.close()
    wait(driver).until(lambda d: d.find_element(By.ID, "live").get_attribute("hidden") is None)


def test_no_key_reaches_a_page(world: dict[str, Any]) -> None:
    driver = world["driver"]
    driver.get(f"{world['ui'].base}/runs/fan-2")
    wait(driver).until(ec.presence_of_element_located(
        (By.CSS_SELECTOR, "body[data-status=succeeded]")))
    assert world["env"]["OPENAI_API_KEY"] not in driver.page_source


def test_a_bind_beyond_loopback_refuses_requests_without_the_token(
        world: dict[str, Any], tmp_path: Path) -> None:
    with ui_process(world["env"], world["home"], "--host", "0.0.0.0") as ui:
        assert "?token=" in ui.url
        token = ui.url.split("?token=", 1)[1]
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{ui.base}/api/runs", timeout=10)
        assert refused.value.code == 401
        refused.value.close()
        driver = world["driver"]
        driver.get(f"{ui.base}/")
        wait(driver).until(lambda d: "a token is needed" in d.page_source)
        request = urllib.request.Request(f"{ui.base}/api/runs",
                                         headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, timeout=10) as answered:
            assert json.load(answered)["total"] == len(RUN_IDS)
        driver.get(ui.url)  # the printed URL: its token becomes a cookie
        wait(driver).until(ec.presence_of_element_located((By.CSS_SELECTOR, "body[data-loaded]")))
        assert "token=" not in driver.current_url


def test_an_opened_step_shows_the_state_right_after_it(world: dict[str, Any]) -> None:
    driver = world["driver"]
    driver.get(f"{world['ui'].base}/runs/fan-2")
    step = wait(driver).until(ec.presence_of_element_located(
        (By.CSS_SELECTOR, "details.step[data-step=outline]")))
    step.find_element(By.TAG_NAME, "summary").click()
    after = wait(driver).until(lambda d: step.find_element(By.CSS_SELECTOR, "pre.state-after"))
    assert "State after this step" in step.text and "set outline" in step.text
    state = json.loads(after.text)
    assert state["topic"] == "tea" and "outline" in state
    assert "beginners" not in state and "published" not in state, "later steps' writes"


def _long_run(db: Path, steps: int) -> None:
    import asyncio

    from agentloom.store import CheckpointDelta, SqliteStore

    async def fill() -> None:
        async with SqliteStore(db) as store:
            await store.create_run("long", "long", "h", {})
            for i in range(steps):
                await store.save_delta("long", CheckpointDelta(
                    state={f"o{i}": f"<b>out {i}</b>"}, status="running",
                    step_results={f"s{i:03d}": {"id": f"s{i:03d}", "type": "llm_call",
                                                "status": "success", "attempts": 1,
                                                "started_at": float(i),
                                                "duration_seconds": 0.5}}))
            await store.set_status("long", "succeeded")
    asyncio.run(fill())


def test_a_long_run_lists_its_steps_a_hundred_at_a_time(world: dict[str, Any],
                                                         tmp_path: Path) -> None:
    _long_run(tmp_path / ".agentloom" / "runs.db", 250)
    driver = world["driver"]
    with ui_process(world["env"], tmp_path) as ui:
        driver.get(f"{ui.base}/runs/long")
        more = wait(driver).until(ec.element_to_be_clickable((By.ID, "more-steps")))
        assert len(driver.find_elements(By.CSS_SELECTOR, "details.step")) == 100
        assert len(driver.find_elements(By.CSS_SELECTOR, "#timeline .bar")) == 250
        assert more.text == "show 100 more of 150"
        more.click()
        wait(driver).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "details.step")) == 200)
        driver.find_element(By.ID, "more-steps").click()
        wait(driver).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "details.step")) == 250)
        assert driver.find_elements(By.ID, "more-steps") == []
        last = driver.find_element(By.CSS_SELECTOR, "details.step[data-step=s249]")
        last.find_element(By.TAG_NAME, "summary").click()
        after = wait(driver).until(lambda d: last.find_element(By.CSS_SELECTOR, "pre.state-after"))
        assert json.loads(after.text)["o249"] == "<b>out 249</b>"  # text, not markup
        assert driver.find_elements(By.CSS_SELECTOR, "#steps b") == []
