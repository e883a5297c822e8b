"""A cache of the code `dataclasses` generates, for the CLI's own process only.

Every `@dataclass` writes its `__init__`, `__repr__`, `__eq__`, ... as source text and
compiles it when its module is imported: ~700 small functions in a one-step `agentloom
run`, about a fifth of the process's instructions and the largest item of its start-up
over a bare aiohttp script (callgrind; bench/README.md); pydantic's models add ~1,000
string annotations, each compiled by `typing.ForwardRef`. The compiled functions are the
same in every process of one Python build, so the CLI keeps them in one file in the user's
cache directory, keyed by their source text, and execs the stored code instead of
compiling the text again: each method is what `exec` of that text makes (the same code,
the same globals), so classes behave exactly as before.

Only the `agentloom` command installs it, when `main()` runs with the process's own
command line (a library, or a program calling `main(argv)`, must not change how its
interpreter builds classes). Anything wrong with the file (missing, unreadable, damaged,
another Python) means compiling as usual; a cache that can't be written is not written.
"""

from __future__ import annotations

import atexit
import dataclasses
import importlib.util
import marshal
import os
import sys
import typing
from collections.abc import Mapping
from pathlib import Path
from types import CodeType
from typing import Any

_MAX_BYTES = 16 << 20
"""A larger file is not read (nor grown): the CLI's own classes need well under 1 MB."""
_MAX_ENTRIES = 20_000
_FORMAT = 1
"""Keys are `mode:source`."""


class CodeCache:
    """Compiled code by source text, loaded from and saved to one file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.codes: dict[str, CodeType] = {}
        self.added = False

    def load(self) -> None:
        try:
            with open(self.path, "rb") as f:
                data = f.read(_MAX_BYTES + 1)
            if len(data) > _MAX_BYTES:
                return
            stored = marshal.loads(data)
        except (OSError, ValueError, EOFError, TypeError):
            return
        if (isinstance(stored, dict) and stored.get("magic") == importlib.util.MAGIC_NUMBER
                and stored.get("format") == _FORMAT and isinstance(stored.get("codes"), dict)):
            self.codes = {k: v for k, v in stored["codes"].items()
                          if isinstance(k, str) and isinstance(v, CodeType)}

    def _code(self, source: str, mode: str) -> CodeType:
        key = f"{mode}:{source}"
        code = self.codes.get(key)
        if code is None:
            # As `exec(text)` in dataclasses.py and `compile(text, ...)` in typing.py
            # compile it: neither module has __future__ flags, and this module's are not
            # inherited.
            code = compile(source, "<string>", mode, dont_inherit=True)
            if len(self.codes) < _MAX_ENTRIES:
                self.codes[key] = code
                self.added = True
        return code

    def exec(self, source: Any, globals_: dict[str, Any] | None = None,
             locals_: dict[str, Any] | None = None, /) -> None:
        """`exec` as `dataclasses` calls it, with the text's code compiled once."""
        exec(self._code(source, "exec") if type(source) is str else source, globals_, locals_)

    def compile(self, source: Any, filename: str, mode: str, flags: int = 0,
                dont_inherit: bool = False, optimize: int = -1) -> Any:
        """`compile` as `typing.ForwardRef` calls it (each string annotation pydantic
        reads), from the cache; any other call compiles as usual."""
        if (type(source) is str and filename == "<string>" and mode == "eval" and not flags
                and optimize == -1):
            return self._code(source, mode)
        return compile(source, filename, mode, flags, dont_inherit, optimize)

    def save(self) -> None:
        if not self.added:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            data = marshal.dumps({"magic": importlib.util.MAGIC_NUMBER, "format": _FORMAT,
                                 "codes": self.codes})
            if len(data) > _MAX_BYTES:
                return
            import tempfile  # only when there is something to write

            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".codes-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, self.path)  # readers see the old file or the new one
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            return
        self.added = False


def cache_path(environ: Mapping[str, str]) -> Path | None:
    """`$XDG_CACHE_HOME/agentloom/` (else `~/.cache/agentloom/`), one file per Python."""
    base = environ.get("XDG_CACHE_HOME") or (
        os.path.join(environ["HOME"], ".cache") if environ.get("HOME") else None)
    if not base or not os.path.isabs(base):
        return None
    return Path(base) / "agentloom" / f"dataclass-code-{sys.implementation.cache_tag}.marshal"


_installed: CodeCache | None = None


def install(environ: Mapping[str, str]) -> CodeCache | None:
    """Serve `dataclasses`' generated code from the cache for the rest of this process
    (saved at exit when it grew). `AGENTLOOM_NO_CODE_CACHE=1` leaves it off."""
    global _installed
    if _installed is not None:
        return _installed
    path = cache_path(environ)
    if path is None or environ.get("AGENTLOOM_NO_CODE_CACHE") == "1":
        return None
    cache = CodeCache(path)
    cache.load()
    # Both modules look `exec` and `compile` up in their own globals before the builtins.
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]
    typing.compile = cache.compile  # type: ignore[attr-defined]
    atexit.register(cache.save)
    _installed = cache
    return cache
