"""Extract the workflows embedded in the public AgentLoom's tests and docs.

    python scripts/extract_public_workflows.py PATH/TO/agentloom-checkout

Reads the YAML of every triple-quoted string in its `tests/**/*.py` and every ```yaml
block of its `docs/*.md` and README that parses as a mapping with `name` and `steps`,
and writes each (deduplicated) to `tests/compat/public_workflows/`, with a MANIFEST of
where it came from and the commit. The differential tests run them on both engines.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

OUT = Path(__file__).resolve().parents[1] / "tests" / "compat" / "public_workflows"
_BLOCKS = (re.compile(r'"""(.*?)"""', re.S), re.compile(r"'''(.*?)'''", re.S))
_YAML_FENCE = re.compile(r"```ya?ml\n(.*?)```", re.S)


def _blocks(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".md":
        return _YAML_FENCE.findall(text)
    return [b for pattern in _BLOCKS for b in pattern.findall(text)]


def main(checkout: Path) -> int:
    commit = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "unknown"
    sources = sorted((checkout / "tests").rglob("*.py")) + sorted(
        (checkout / "docs").glob("*.md")) + [checkout / "README.md"]
    OUT.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, str] = {}
    seen: set[str] = set()
    for source in sources:
        if not source.is_file():
            continue
        rel = source.relative_to(checkout).as_posix()
        for i, block in enumerate(_blocks(source)):
            text = block.strip("\n")
            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError:
                continue
            if not (isinstance(data, dict) and "name" in data and "steps" in data):
                continue
            digest = hashlib.sha256(text.encode()).hexdigest()[:10]
            if digest in seen:
                continue
            seen.add(digest)
            stem = re.sub(r"[^A-Za-z0-9]+", "_", rel.rsplit(".", 1)[0]).strip("_")
            name = f"{stem}__{i:02d}.yaml"
            (OUT / name).write_text(text + "\n", encoding="utf-8")
            manifest[name] = rel
    (OUT / "MANIFEST.json").write_text(json.dumps(
        {"source": "https://github.com/cchinchilla-dev/agentloom", "commit": commit,
         "license": "MIT (LICENSE.agentloom)", "files": manifest}, indent=2) + "\n")
    print(f"{len(manifest)} workflows from {commit[:7]} into {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))
