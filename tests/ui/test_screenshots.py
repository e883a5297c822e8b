"""The helper that takes docs/ui.md's screenshots still works (into a temporary folder)."""

from __future__ import annotations

from pathlib import Path

from tests.ui.screenshots import take

PNG = b"\x89PNG\r\n\x1a\n"


def test_the_docs_screenshots_can_be_taken_again(tmp_path: Path) -> None:
    shots = take(tmp_path / "shots")
    assert [p.name for p in shots] == ["list.png", "run.png", "paused.png"]
    for shot in shots:
        data = shot.read_bytes()
        assert data.startswith(PNG) and len(data) > 10_000, shot
