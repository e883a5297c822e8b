"""The CLI's cache of dataclass-generated code: classes built from it are the classes
`exec` builds, the file survives a round trip, a bad file is ignored, and the CLI writes
it under the cache directory (or not at all when told not to)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentloom.cli._codecache import CodeCache, cache_path


def _define() -> type:
    @dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
    class Point:
        x: int
        y: int = 2
        tags: tuple[str, ...] = ()

    return Point


def test_classes_built_from_the_cache_are_the_ones_exec_builds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stock = _define()
    cache = CodeCache(tmp_path / "c.marshal")
    monkeypatch.setattr(dataclasses, "exec", cache.exec, raising=False)
    cached = _define()
    assert cache.added and cache.codes
    again = _define()  # every function now comes from the cache
    for cls in (cached, again):
        p = cls(x=1)
        assert (p.x, p.y, p.tags) == (1, 2, ())
        assert repr(p) == repr(stock(x=1)).replace(stock.__qualname__, cls.__qualname__)
        assert p == cls(x=1) and p != cls(x=2) and hash(p) == hash(cls(x=1))
        with pytest.raises(dataclasses.FrozenInstanceError):
            p.x = 3  # type: ignore[misc]
        for name in ("__init__", "__repr__", "__eq__", "__setattr__", "__hash__"):
            ours, theirs = getattr(cls, name), getattr(stock, name)
            assert ours.__code__.co_code == theirs.__code__.co_code, name
            assert ours.__annotations__ == theirs.__annotations__, name


def test_the_file_round_trips_and_a_bad_one_is_ignored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "sub" / "c.marshal"
    cache = CodeCache(path)
    monkeypatch.setattr(dataclasses, "exec", cache.exec, raising=False)
    _define()
    cache.save()
    loaded = CodeCache(path)
    loaded.load()
    assert loaded.codes.keys() == cache.codes.keys()
    monkeypatch.setattr(dataclasses, "exec", loaded.exec, raising=False)
    _define()
    assert not loaded.added  # nothing compiled again
    for junk in (b"", b"not marshal", b"\x00" * 10):
        path.write_bytes(junk)
        bad = CodeCache(path)
        bad.load()
        assert bad.codes == {}
    import marshal

    path.write_bytes(marshal.dumps({"magic": b"xxxx", "format": 1, "codes": dict(cache.codes)}))
    other = CodeCache(path)
    other.load()
    assert other.codes == {}  # another Python's code is never run


def test_where_the_file_goes() -> None:
    assert cache_path({"XDG_CACHE_HOME": "/c"}) == Path(
        f"/c/agentloom/dataclass-code-{sys.implementation.cache_tag}.marshal")
    assert cache_path({"HOME": "/h"}) == Path(
        f"/h/.cache/agentloom/dataclass-code-{sys.implementation.cache_tag}.marshal")
    assert cache_path({}) is None and cache_path({"XDG_CACHE_HOME": "rel"}) is None


def test_the_cli_keeps_its_cache_and_runs_the_same_from_it(tmp_path: Path) -> None:
    flow = tmp_path / "f.yaml"
    flow.write_text("name: f\nsteps:\n  - {id: a, type: llm_call, prompt: hi}\n")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path),
           "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "agentloom.cli", "validate", str(flow)]
    first = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    stored = cache_path(env)
    assert stored is not None and stored.is_file()
    second = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    assert (second.stdout, second.stderr) == (first.stdout, first.stderr)
    off = tmp_path / "off"
    off.mkdir()
    subprocess.run(cmd, env={**env, "HOME": str(off), "AGENTLOOM_NO_CODE_CACHE": "1"},
                   capture_output=True, text=True, check=True)
    assert not (off / ".cache").exists()


def test_forward_references_compile_from_the_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import typing

    cache = CodeCache(tmp_path / "c.marshal")
    monkeypatch.setattr(typing, "compile", cache.compile, raising=False)
    ref = typing.ForwardRef("list[int] | None")
    assert cache.added and list(cache.codes) == ["eval:list[int] | None"]
    assert eval(ref.__forward_code__) == (list[int] | None)
    again = typing.ForwardRef("list[int] | None")
    assert again.__forward_code__ is ref.__forward_code__
    other = cache.compile("x = 1", "f.py", "exec")  # any other call: as usual, not kept
    assert other.co_filename == "f.py" and len(cache.codes) == 1
