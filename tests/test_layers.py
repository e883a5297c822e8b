"""The package's import layers, checked by reading every module with `ast`.

The rules are written down here and in docs/architecture.md, and nowhere else. Each layer
may import only the layers below it (a package may import itself):

    types:  _version, messages, _parts, _events, errors, _clock, redact, transport, _lazy, _record,
            _jsontext, _files, _yaml, _printable
    http < providers < pricing < routing < recording < structured, conversation < tools
    < loop < store < observe < workflow < testing < scale < ui < compat, core < cli < __main__

Beside the arrows: no cycle between files or packages; no import of another package's
`_private` module; no import inside a function except the lazy loads listed in
`LAZY_TARGETS`/`LAZY_SOURCES` and the package faces' `__getattr__`; no read of another
object's `_private` attribute. Imports under TYPE_CHECKING count like any other.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from tests._import_graph import Import, collect, cycles

LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"_version", "messages", "errors", "_clock", "redact", "transport", "_lazy",
               "_record", "_parts", "_events", "_jsontext", "_files", "_yaml",
               "_printable"}),
    frozenset({"http"}),
    frozenset({"providers"}),
    frozenset({"pricing"}),
    frozenset({"routing"}),
    frozenset({"recording"}),
    frozenset({"structured", "conversation"}),
    frozenset({"tools"}),
    frozenset({"loop"}),
    frozenset({"store"}),
    frozenset({"observe"}),
    frozenset({"workflow"}),
    frozenset({"testing"}),
    frozenset({"scale"}),
    frozenset({"ui"}),
    frozenset({"compat", "core"}),
    frozenset({"cli"}),
    frozenset({"__main__"}),  # `python -m agentloom`: the command, above everything
)
RANK = {part: rank for rank, layer in enumerate(LAYERS) for part in layer}

LAZY_TARGETS: dict[str, str] = {
    "agentloom.http.AiohttpTransport": "aiohttp takes ~150 ms to import; loaded on first use",
    "agentloom.tools.MCPToolSource": "imports the optional `mcp` SDK",
    "agentloom.tools.MCPServerConfig": "imports the optional `mcp` SDK",
    "agentloom.scale._ray": "imports the optional `ray`",
    "agentloom.store._postgres": "imports the optional `psycopg`",
    "agentloom.store._sqlite": "a store backend, loaded when opened",
    "agentloom.store._memory": "a store backend, loaded when opened",
    "agentloom.observe.otel": "imports the optional `opentelemetry`",
    "agentloom.routing.local": "the optional embedded model server",
    "agentloom.tools.builtins": "the built-in tools (sandbox, subprocess, HTTP) load when used",
    "agentloom.tools.attachments": "file reads and downloads behind the network guard; "
    "loaded when a step has attachments",
    "agentloom.recording.mock_responses": "the public AgentLoom's mock files, loaded when a "
    "workflow uses `provider: mock`",
    "agentloom.providers.anthropic": "the Anthropic wire module (~27 M instructions): a "
    "workflow step loads it to check thinking settings, an OpenAI run without them never",
    "agentloom.store.PauseInfo": "the store's records and protocol (~10 ms of import) load "
    "with the store; a run without checkpoints needs this one only when it pauses",
    "agentloom.loop.summary": "the summary's pydantic models load when a summary is first "
    "built (`collector.summary_models`): a run of the command line never reads one",
    "agentloom.workflow.schema.other_steps": "the step types after llm_call (~25 M "
    "instructions to create), loaded for the first step of another type",
    "agentloom.workflow.durable.scope": "a durable run's view of a nested run, loaded with "
    "its first subworkflow, map item, error handler or function body",
}
"""Modules (or a face's lazy names) that may be imported inside a function anywhere:
optional extras and heavy imports loaded on first use."""

LAZY_SOURCES: dict[str, str] = {
    "agentloom.cli": "a command loads what it needs when it runs, so `agentloom --help` "
    "and a parser for one command stay fast",
}
"""Packages whose functions may import lazily (start-up time of the command line)."""

PRIVATE_ATTRIBUTES_OF_LIBRARIES = frozenset({"_replace", "_asdict", "_fields", "_make"})
"""namedtuple's public API, spelt with an underscore."""

SAME_CLASS_READS = frozenset({
    "agentloom.loop.agent reads agent._res",  # Agent.from_env on the Agent it built
    "agentloom.loop.transcript reads other._messages",  # Transcript.__eq__
    "agentloom.pricing._table reads overrides._sections",  # PriceTable.with_overrides
})
"""Reads of another instance's private state inside its own class, which the `ast`
heuristic cannot tell from a read across objects."""

MIGRATION_FACES: dict[str, str] = {
    "agentloom.providers.gateway": "the public AgentLoom's `agentloom.providers.gateway`",
    "agentloom.providers.google": "the public AgentLoom's `agentloom.providers.google`",
    "agentloom.providers.openai": "its `OpenAIProvider`, looked up lazily by `__getattr__`",
    "agentloom.providers.anthropic": "its `AnthropicProvider`, looked up lazily",
    "agentloom.providers.ollama": "its `OllamaProvider`, looked up lazily",
}
"""Modules at an import path the public AgentLoom's users write, which reach up into
`agentloom.compat` for that name alone (docs/compat-examples.md). Their imports of compat
are the migration path, not an arrow of the house, and nothing else may use them."""

_ALL_IMPORTS, _PRIVATE_READS = collect()
_FACE_IMPORTS = [i for i in _ALL_IMPORTS
                 if i.source in MIGRATION_FACES and i.target.startswith("agentloom.compat")]
_IMPORTS = [i for i in _ALL_IMPORTS if i not in _FACE_IMPORTS]


def _top(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _package_of(module: str) -> str:
    """agentloom.X, or agentloom.workflow.Y for workflow's sub-packages."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] == "workflow":
        return ".".join(parts[:3])
    return ".".join(parts[:2])


def _is_private_module(target: str) -> bool:
    package = _package_of(target)
    rest = target[len(package) + 1 :].split(".") if target != package else []
    return any(p.startswith("_") for p in rest)


def test_every_package_has_a_layer() -> None:
    tops = {_top(i.source) for i in _IMPORTS} | {_top(i.target) for i in _IMPORTS}
    unknown = sorted(t for t in tops if t is not None and t not in RANK)
    assert unknown == [], f"give these a layer in tests/test_layers.py: {unknown}"


def test_no_import_points_up() -> None:
    found = []
    for i in _IMPORTS:
        src, dst = _top(i.source), _top(i.target)
        if src is None:
            continue  # the root face `agentloom/__init__.py` names the public API lazily
        if dst is None:
            found.append(f"{i.source}:{i.line} imports the root package")
        elif RANK[dst] > RANK[src]:
            found.append(f"{i.source}:{i.line} -> {i.target} ({src} is below {dst})")
    assert sorted(found) == []


def test_no_cycle_between_files() -> None:
    edges: defaultdict[str, set[str]] = defaultdict(set)
    for i in _IMPORTS:
        if i.source != i.target:
            edges[i.source].add(i.target)
    found = [" <-> ".join(c) for c in cycles(edges)]
    assert sorted(found) == []


@pytest.mark.parametrize("level", ["layer packages", "workflow sub-packages"])
def test_no_cycle_between_packages(level: str) -> None:
    edges: defaultdict[str, set[str]] = defaultdict(set)
    for i in _IMPORTS:
        if _top(i.source) is None:
            continue
        src, dst = _package_of(i.source), _package_of(i.target)
        if level == "layer packages":
            src, dst = ".".join(src.split(".")[:2]), ".".join(dst.split(".")[:2])
        elif not (src.startswith("agentloom.workflow.") and dst.startswith("agentloom.workflow")):
            continue
        if src != dst:
            edges[src].add(dst)
    found = [" <-> ".join(c) for c in cycles(edges)]
    assert sorted(found) == []


def test_no_import_of_another_packages_private_module() -> None:
    found = [
        f"{i.source}:{i.line} -> {i.target}"
        for i in _IMPORTS
        if _package_of(i.source) != _package_of(i.target) and _is_private_module(i.target)
    ]
    assert sorted(found) == []


def _lazy_allowed(i: Import) -> bool:
    if i.in_function == "__getattr__":
        return True  # a package face resolving its public names on first use
    if i.target in LAZY_TARGETS:
        return True
    if i.names and all(f"{i.target}.{name}" in LAZY_TARGETS for name in i.names):
        return True
    return any(i.source == s or i.source.startswith(s + ".") for s in LAZY_SOURCES)


def test_no_import_inside_a_function_but_the_listed_lazy_loads() -> None:
    found = [
        f"{i.source}:{i.line} imports {i.target} inside {i.in_function}()"
        for i in _IMPORTS
        if i.in_function is not None and not _lazy_allowed(i)
    ]
    assert sorted(found) == []


def test_no_read_of_another_objects_private_attribute() -> None:
    found = [
        f"{r.source}:{r.line} reads {r.text}"
        for r in _PRIVATE_READS
        if r.text.rpartition(".")[2] not in PRIVATE_ATTRIBUTES_OF_LIBRARIES
        and f"{r.source} reads {r.text}" not in SAME_CLASS_READS
    ]
    assert sorted(found) == []


def test_the_checks_see_imports_in_functions_and_under_type_checking() -> None:
    # The scanner itself: both kinds are in the tree today (the transport loads aiohttp
    # on first use); if it stopped seeing them, the rules above would pass vacuously.
    assert any(i.type_checking for i in _IMPORTS)
    assert any(i.in_function and "AiohttpTransport" in i.names for i in _IMPORTS)


def test_migration_faces_reach_compat_only_for_the_public_names() -> None:
    # A face module imports compat's gateway and nothing else of compat, and no module of
    # ours imports a face module's compat names.
    assert {i.target for i in _FACE_IMPORTS} == {"agentloom.compat.gateway"}
    for face in ("agentloom.providers.gateway", "agentloom.providers.google"):
        users = [i.source for i in _IMPORTS if i.target == face]
        assert users == [], f"{face} is for the public AgentLoom's users only: {users}"
