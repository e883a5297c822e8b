"""A cache of the code `dataclasses` generates, for the CLI's own process only.

Every `@dataclass` writes its `__init__`, `__repr__`, `__eq__`, ... as source text and
compiles it when its module is imported: ~700 small functions in a one-step `agentloom
run`, about a fifth of the process's instructions and the largest item of its start-up
over a bare aiohttp script (callgrind; bench/README.md). The compiled functions are the
same in every process of one Python build, so the CLI keeps them in one file in the user's
cache directory, keyed by their source text, and execs the stored code instead of
compiling the text again: each method is what `exec` of that text makes (the same code,
the same globals), so classes behave exactly as before.

Only the CLI installs it (a library must not change how its caller's interpreter builds
classes). Anything wrong with the file (missing, unreadable, damaged, another Python)
means compiling as usual; a cache that can't be written is simply not written.
"""

from __future__ import annotations

import atexit
import dataclasses
import importlib.util
import marshal
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from types import CodeType
from typing import Any

_MAX_BYTES = 16 << 20
"""A larger file is not read (nor grown): the CLI's own classes need well under 1 MB."""
_MAX_ENTRIES = 20_000


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
                and isinstance(stored.get("codes"), dict)):
            self.codes = {k: v for k, v in stored["codes"].items()
                          if isinstance(k, str) and isinstance(v, CodeType)}

    def exec(self, source: Any, globals_: dict[str, Any] | None = None,
             locals_: Mapping[str, Any] | None = None, /) -> None:
        """`exec` as `dataclasses` calls it, with the text's code compiled once."""
        if type(source) is str:
            code = self.codes.get(source)
            if code is None:
                # As `exec(text)` from dataclasses.py compiles it: no __future__ flags
                # inherited from this module.
                code = compile(source, "<string>", "exec", dont_inherit=True)
                if len(self.codes) < _MAX_ENTRIES:
                    self.codes[source] = code
                    self.added = True
            source = code
        exec(source, globals_, locals_)

    def save(self) -> None:
        if not self.added:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            data = marshal.dumps({"magic": importlib.util.MAGIC_NUMBER, "codes": self.codes})
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
    # dataclasses looks `exec` up in its own globals before the builtins.
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]
    atexit.register(cache.save)
    _installed = cache
    return cache
