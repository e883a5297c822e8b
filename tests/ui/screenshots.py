"""The screenshots of docs/ui.md, taken in the browser tests' Chromium on the browser
tests' runs: `python -m tests.ui.screenshots [DIR]` (default docs/ui) writes list.png,
run.png (a step opened: its exchange and the state after it) and paused.png.
tests/ui/test_screenshots.py takes them into a temporary folder, so this stays working."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from tests.ui.harness import ROOT, chromium, cli_env, fake_openai, make_runs, ui_process

WIDTH = 1280


def _shoot(driver: Any, path: Path) -> None:
    """The whole page: the window grown to the page's height first."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(WIDTH, min(int(height) + 40, 2600))
    driver.save_screenshot(str(path))
    driver.set_window_size(WIDTH, 900)


def take(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, fake_openai(latency=0.05) as server:
        home = Path(tmp)
        env = cli_env(server)
        make_runs(env, home)
        driver = chromium(home / "profile")
        try:
            with ui_process(env, home) as ui:
                wait = WebDriverWait(driver, 30)
                driver.get(ui.url)
                wait.until(ec.presence_of_element_located(
                    (By.CSS_SELECTOR, "body[data-loaded]")))
                _shoot(driver, out / "list.png")
                driver.get(f"{ui.base}/runs/fan-2")
                step = wait.until(ec.presence_of_element_located(
                    (By.CSS_SELECTOR, "details.step[data-step=beginners]")))
                step.find_element(By.TAG_NAME, "summary").click()
                wait.until(lambda d: step.find_elements(By.CSS_SELECTOR, "pre.state-after"))
                _shoot(driver, out / "run.png")
                driver.get(f"{ui.base}/runs/fan-1")
                wait.until(ec.element_to_be_clickable((By.ID, "approve")))
                _shoot(driver, out / "paused.png")
        finally:
            driver.quit()
    return [out / "list.png", out / "run.png", out / "paused.png"]


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "ui"
    for shot in take(target):
        print(shot)
