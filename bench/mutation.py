"""Mutation testing of the core modules: `make mutation` (or `python bench/mutation.py`).

Why our own runner: mutmut 3 rewrites every function of the package into trampolines in a
mutants/ copy and needs a full-suite stats run first; cosmic-ray edits the file in place and
runs one fixed test command per mutant. We want neither: the run works on a throw-away copy
of the tree (the work tree is never edited), and each mutant runs only the tests that
execute its line, found once per run with coverage contexts (the `mutation` extra).

A mutant flips a comparison, swaps `and`/`or`, drops a `not`, negates a condition, changes
a constant (numbers, booleans, and the strings a comparison, a subscript, a dict key or a
`.get()` reads: wire field names and flags), swaps an arithmetic operator, or drops a
statement. Per module a fixed seeded sample is run, one mutant at a time, each in a forked
child of a parent that imported the third-party stack once (so a mutant costs its tests, not
an interpreter start). A mutant on a line no test executes counts as surviving.
Survivors checked and found equivalent (no behaviour can tell them apart) are listed in
`bench/mutation_equivalent.json`; the report prints the reason beside each.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mutation_ops import Mutant, apply, find_mutants, short

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENT_FILE = ROOT / "bench" / "mutation_equivalent.json"
DESELECT = "not local_model and not ray and not postgres and not differential"

# short name -> (module file, the test paths whose coverage finds the tests of its lines)
MODULES: dict[str, tuple[str, list[str]]] = {
    "sandbox": ("agentloom/tools/_sandbox.py", ["tests/tools", "tests/security"]),
    "safefs": ("agentloom/tools/_safefs.py", ["tests/tools", "tests/security"]),
    "isolation": ("agentloom/tools/_isolation.py", ["tests/tools", "tests/security"]),
    "expressions": (
        "agentloom/workflow/lang/expressions.py",
        ["tests/workflow", "tests/security/test_bounds_expressions.py"],
    ),
    "templates": ("agentloom/workflow/lang/templates.py", ["tests/workflow"]),
    "retry": ("agentloom/routing/_retry.py", ["tests/routing", "tests/providers"]),
    "breaker": ("agentloom/routing/_breaker.py", ["tests/routing"]),
    "budget": ("agentloom/routing/_budget.py", ["tests/routing"]),
    "trim": (
        "agentloom/conversation/_trim.py",
        ["tests/test_conversation.py", "tests/test_conversation_trim_mutants.py", "tests/loop"],
    ),
    "openai": ("agentloom/providers/openai.py", ["tests/providers"]),
    "openai_responses": ("agentloom/providers/openai_responses.py", ["tests/providers"]),
    "anthropic": ("agentloom/providers/anthropic.py", ["tests/providers"]),
    "anthropic_encode": ("agentloom/providers/_anthropic_encode.py", ["tests/providers"]),
    "anthropic_decode": ("agentloom/providers/_anthropic_decode.py", ["tests/providers"]),
    "gemini": ("agentloom/providers/gemini.py", ["tests/providers"]),
    "gemini_encode": ("agentloom/providers/_gemini_encode.py", ["tests/providers"]),
    "gemini_decode": ("agentloom/providers/_gemini_decode.py", ["tests/providers"]),
    "ollama": ("agentloom/providers/ollama.py", ["tests/providers"]),
    "redact": ("agentloom/redact.py", ["tests/observe", "tests/providers"]),
}

# Words in the names of a module's own test files: their tests run first.
HINTS: dict[str, tuple[str, ...]] = {
    "trim": ("conversation",),
    "safefs": ("safefs", "file"),
    "openai": ("openai", "wire_mutants"),
    "openai_responses": ("responses", "wire_mutants"),
    "anthropic_encode": ("anthropic",),
    "anthropic_decode": ("anthropic",),
    "gemini": ("gemini", "wire_mutants"),
    "gemini_encode": ("gemini", "wire_mutants"),
    "gemini_decode": ("gemini", "wire_mutants"),
    "ollama": ("ollama", "wire_mutants"),
}
# Per mutant, the fastest covering tests up to this many seconds (as the coverage run
# timed them) and this many tests: a survivor costs seconds, not minutes.
TEST_SECONDS = 6.0
MAX_TESTS = 400



@dataclass
class Result:
    mutant: Mutant
    outcome: str  # killed | survived | timeout | uncovered
    tests: int = 0
    seconds: float = 0.0


@dataclass
class ModuleReport:
    name: str
    path: str
    population: int
    results: list[Result] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def score(self) -> float:
        caught = sum(r.outcome in ("killed", "timeout") for r in self.results)
        return 100.0 * caught / len(self.results) if self.results else 100.0


# ---------------------------------------------------------------- running tests


def _fork_pytest(
    copy_root: Path,
    args: list[str],
    timeout: float,
    plugin: Callable[[], Any] | None = None,
    log: Path | None = None,
) -> int:
    """pytest.main in a forked child (its own process group, output to `log` or nowhere).
    Returns its exit code, or -1 on timeout."""
    pid = os.fork()
    if pid == 0:  # child
        code = 70
        try:
            os.setsid()
            devnull = os.open(log or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            os.chdir(copy_root)
            sys.path.insert(0, str(copy_root))
            code = int(pytest.main(args, plugins=[plugin()] if plugin else []))
        finally:
            os._exit(code)
    deadline = time.monotonic() + timeout
    done = 0
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            if time.monotonic() > deadline:
                break
            time.sleep(0.02)
    finally:
        if not done:  # timed out, or the run itself was interrupted
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    return -1


class _Contexts:
    """pytest plugin: coverage of the target files with one context per test."""

    def __init__(self, files: list[str], out: Path) -> None:
        import coverage

        self.files = files
        self.out = out
        self.cov = coverage.Coverage(data_file=None, include=files)
        self.durations: dict[str, float] = {}
        self.failed: list[str] = []
        self.cov.start()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> Iterator[None]:
        self.cov.switch_context(item.nodeid)
        started = time.monotonic()
        yield
        self.durations[item.nodeid] = time.monotonic() - started

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.failed:
            self.failed.append(report.nodeid)

    def pytest_sessionfinish(self) -> None:
        self.cov.stop()
        data = self.cov.get_data()
        lines: dict[str, dict[str, list[str]]] = {}
        for path in self.files:
            by_line = data.contexts_by_lineno(path)
            lines[path] = {str(k): sorted(v) for k, v in by_line.items()}
        root = str(self.out.parent)
        warm = [  # in import order: some packages mind the order
            name
            for name, module in list(sys.modules.items())
            if not name.startswith(("agentloom", "tests", "conftest", "__"))
            and not str(getattr(module, "__file__", None) or "").startswith(root)
        ]
        self.out.write_text(
            json.dumps(
                {"lines": lines, "durations": self.durations, "warm": warm, "failed": self.failed}
            )
        )


def collect_coverage(copy_root: Path, names: list[str]) -> dict[str, Any]:
    files = [str(copy_root / MODULES[n][0]) for n in names]
    paths = sorted({p for n in names for p in MODULES[n][1]})
    out = copy_root / ".mutation-coverage.json"
    code = _fork_pytest(
        copy_root,
        ["-q", "-p", "no:randomly", "-m", DESELECT, *paths],
        3600,
        lambda: _Contexts(files, out),  # built in the child: the parent never traces
    )
    if not out.exists():
        raise SystemExit(f"coverage run failed (pytest exit {code})")
    result: dict[str, Any] = json.loads(out.read_text())
    if code not in (0, 1):
        print(f"warning: coverage run exited {code}", file=sys.stderr)
    return result


def tests_for(
    mutant: Mutant, cov: dict[str, Any], path: str, hints: tuple[str, ...]
) -> list[str]:
    by_line: dict[str, list[str]] = cov["lines"].get(path, {})
    broken = set(cov["failed"])  # failing before any mutation: they tell nothing
    tests = [t for t in by_line.get(str(mutant.line), []) if t and t not in broken]
    durations: dict[str, float] = cov["durations"]
    if not tests and str(mutant.line) in by_line:
        # Module-level code runs at import, outside any test: every test that runs the
        # module, and those of its own test files (reading a class attribute runs no line).
        own = {t for t in durations if any(h in t.split("::")[0] for h in hints)}
        tests = sorted(({t for ts in by_line.values() for t in ts if t} | own) - broken)
    def own_first(test: str) -> tuple[bool, float]:
        file = test.split("::")[0]
        return not any(h in file for h in hints), durations.get(test, 1.0)

    tests.sort(key=own_first)
    chosen: list[str] = []
    spent = 0.0
    for test in tests[:MAX_TESTS]:
        spent += durations.get(test, 1.0)
        if chosen and spent > TEST_SECONDS:
            break
        chosen.append(test)
    return chosen


def sample_mutants(source: str, rel: str, sample: int, seed: int) -> tuple[int, list[Mutant]]:
    """(how many mutants the module has, the seeded sample in line order). The sample
    depends on the source and the seed only, never on the tests."""
    mutants = [m for m in find_mutants(source) if apply(source, m) is not None]
    rng = random.Random(f"{seed}:{rel}")
    chosen = rng.sample(mutants, min(sample, len(mutants)))
    return len(mutants), sorted(chosen, key=lambda m: m.line)


def run_module(
    name: str, copy_root: Path, cov: dict[str, Any], sample: int, seed: int
) -> ModuleReport:
    rel = MODULES[name][0]
    hint = HINTS.get(name, (name,))
    target = copy_root / rel
    original = target.read_text()
    population, chosen = sample_mutants(original, rel, sample, seed)
    report = ModuleReport(name, rel, population)
    module_started = time.monotonic()
    durations: dict[str, float] = cov["durations"]
    baseline = sorted({t for m in chosen[:5] for t in tests_for(m, cov, str(target), hint)})
    log = copy_root / f".baseline-{name}.log"
    if baseline and _fork_pytest(copy_root, ["-q", "-p", "no:randomly", *baseline], 600, log=log):
        raise SystemExit(f"{name}: its tests fail before any mutation:\n{log.read_text()[-3000:]}")
    try:
        for mutant in chosen:
            tests = tests_for(mutant, cov, str(target), hint)
            if not tests:
                report.results.append(Result(mutant, "uncovered"))
                continue
            target.write_text(apply(original, mutant) or original)
            budget = 2 * sum(durations.get(t, 1.0) for t in tests) + 10
            started = time.monotonic()
            code = _fork_pytest(copy_root, ["-x", "-q", "-p", "no:randomly", *tests], budget)
            spent = time.monotonic() - started
            outcome = "timeout" if code == -1 else "survived" if code == 0 else "killed"
            report.results.append(Result(mutant, outcome, len(tests), spent))
            print(f"  {name}:{mutant.line} {mutant.what}: {outcome} "
                  f"({len(tests)} tests, {spent:.1f} s)", flush=True)
    finally:
        target.write_text(original)
    report.seconds = time.monotonic() - module_started
    print(f"{name}: {report.score:.0f}%", flush=True)
    return report


# ---------------------------------------------------------------- report


def _equivalents() -> list[dict[str, str]]:
    if not EQUIVALENT_FILE.exists():
        return []
    entries: list[dict[str, str]] = json.loads(EQUIVALENT_FILE.read_text())
    return entries


def _explain(entries: list[dict[str, str]], module: str, m: Mutant) -> str | None:
    """Why this survivor is equivalent, if an entry names it: module, source line and
    mutant; the replacement text where one line has two mutants of one kind, the line
    number where two lines read the same."""
    for e in entries:
        if (e["module"] == module and " ".join(e["source"].split()) == " ".join(
                m.source_line.split()) and e["mutant"] == m.what
                and e.get("replacement", m.replacement) == m.replacement
                and e.get("line", m.line) == m.line):
            return e["why"]
    return None


def save_results(reports: list[ModuleReport], path: Path, seed: int, sample: int,
                 took: float) -> None:
    """The raw outcomes, so the report can be rendered again (`--render`) after the
    equivalent survivors are explained, without running anything."""
    fresh = {r.name: {"name": r.name, "path": r.path, "population": r.population,
                      "seconds": r.seconds,
                      "results": [{**dataclasses.asdict(x.mutant), "outcome": x.outcome,
                                   "tests": x.tests, "seconds": x.seconds}
                                  for x in r.results]}
             for r in reports}
    kept: dict[str, Any] = {}
    if path.exists() and len(reports) < len(MODULES):
        # A run of some modules replaces theirs and keeps the others, and the full run's time.
        old = json.loads(path.read_text())
        if (old.get("seed"), old.get("sample")) == (seed, sample):
            kept = {m["name"]: m for m in old["modules"]}
            took = old.get("took", took)
    kept.update(fresh)
    modules = [kept[n] for n in MODULES if n in kept]
    data = {"seed": seed, "sample": sample, "took": took, "modules": modules}
    path.write_text(json.dumps(data, indent=1))


def load_results(path: Path) -> tuple[list[ModuleReport], int, int, float]:
    data = json.loads(path.read_text())
    reports = []
    for m in data["modules"]:
        report = ModuleReport(m["name"], m["path"], m["population"],
                              seconds=m.get("seconds", 0.0))
        if not report.seconds:  # results from before modules were timed: their mutants' sum
            report.seconds = sum(x["seconds"] for x in m["results"])
        for x in m["results"]:
            mutant = Mutant(line=x["line"], start=tuple(x["start"]), end=tuple(x["end"]),
                            replacement=x["replacement"], what=x["what"],
                            source_line=x["source_line"])
            report.results.append(Result(mutant, x["outcome"], x["tests"], x["seconds"]))
        reports.append(report)
    return reports, data["seed"], data["sample"], data["took"]


def write_report(
    reports: list[ModuleReport], out: Path, seed: int, sample: int, took: float
) -> None:
    why = _equivalents()
    total = sum(len(r.results) for r in reports)
    caught = sum(r.outcome in ("killed", "timeout") for m in reports for r in m.results)
    lines = [
        "# Mutation testing of the core modules",
        "",
        "Generated by `make mutation` (`bench/mutation.py`); not run in CI. "
        f"Seed {seed}, {sample} sampled mutants per module, one worker under `nice`; "
        f"the last full run took {took / 60:.1f} min (coverage run included); the "
        "modules' mutants, as last run, "
        f"{sum(r.seconds for r in reports) / 60:.1f} min in all (column minutes). Each "
        "mutant (a flipped comparison, `and`/`or` swapped, a dropped `not`, a negated "
        "condition, a changed number, boolean or "
        "field-name string, a swapped arithmetic operator, a dropped statement) runs the "
        "fastest tests that execute its line (coverage contexts, at most "
        f"{MAX_TESTS} tests or {TEST_SECONDS:.0f} s of them); a mutant no test executes "
        "counts as surviving. Survivors checked and found equivalent are explained from "
        "`bench/mutation_equivalent.json`.",
        "",
        "    make mutation                                   # every module, ~20 min",
        "    make mutation MUTATION_ARGS='anthropic retry'   # some modules",
        "    .venv/bin/python bench/mutation.py --list sandbox   # the sample, no run",
        "    .venv/bin/python bench/mutation.py --render      # report again from the results",
        "",
        f"Overall: {caught}/{total} caught ({100.0 * caught / max(total, 1):.0f}%).",
        "",
        "The score counts caught mutants over all sampled ones; the last column leaves out "
        "the survivors explained as equivalent (no behaviour can tell them apart).",
        "",
        "| module | mutants (all) | sampled | killed | timeout | survived | uncovered "
        "| score | equivalent | score without them | minutes |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in reports:
        kinds = ("killed", "timeout", "survived", "uncovered")
        count = {k: sum(x.outcome == k for x in r.results) for k in kinds}
        same = sum(
            x.outcome in ("survived", "uncovered") and _explain(why, r.name, x.mutant) is not None
            for x in r.results
        )
        caught_here = count["killed"] + count["timeout"]
        strict = 100.0 * caught_here / max(len(r.results) - same, 1)
        lines.append(
            f"| `{r.path}` | {r.population} | {len(r.results)} | {count['killed']} | "
            f"{count['timeout']} | {count['survived']} | {count['uncovered']} | "
            f"{r.score:.0f}% | {same} | {strict:.0f}% | {r.seconds / 60:.1f} |"
        )
    lines += ["", "## Surviving mutants", ""]
    for r in reports:
        left = [x for x in r.results if x.outcome in ("survived", "uncovered")]
        if not left:
            continue
        lines.append(f"### `{r.path}`")
        lines.append("")
        for x in left:
            m = x.mutant
            reason = _explain(why, r.name, m) or "**not explained**"
            note = " (no test executes this line)" if x.outcome == "uncovered" else ""
            lines.append(f"- line {m.line}: {m.what}, giving `{short(m.replacement)}`, in "
                         f"`{short(m.source_line)}`{note}: {reason}")
        lines.append("")
    out.write_text("\n".join(lines))


def _preimport(names: list[str]) -> None:
    """The third-party and stdlib modules the coverage run's tests imported, loaded once in
    the parent so each forked child starts warm (2 s -> 0.5 s a mutant). Never agentloom
    itself nor a test module: those must load from the mutated copy."""
    import importlib
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in names:
            with contextlib.suppress(Exception):
                importlib.import_module(name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "modules", nargs="*", help=f"short names (default all): {', '.join(MODULES)}"
    )
    parser.add_argument("--sample", type=int, default=30, help="mutants per module (default 30)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tree", default=str(ROOT), help="the source tree to test (a copy)")
    parser.add_argument("--report", default=str(ROOT / "bench" / "MUTATION.md"))
    parser.add_argument(
        "--list", action="store_true", help="print the sampled mutants, run nothing"
    )
    parser.add_argument("--results", default=str(ROOT / "bench" / "mutation-results.json"),
                        help="where the raw outcomes are kept")
    parser.add_argument("--render", action="store_true",
                        help="write the report again from --results, run nothing")
    args = parser.parse_args(argv)
    names = args.modules or list(MODULES)
    unknown = [n for n in names if n not in MODULES]
    if unknown:
        parser.error(f"unknown module {unknown[0]!r}; choose from {', '.join(MODULES)}")
    if args.render:
        reports, seed, sample, took = load_results(Path(args.results))
        write_report(reports, Path(args.report), seed, sample, took)
        return 0
    if args.list:
        for name in names:
            rel = MODULES[name][0]
            source = (Path(args.tree) / rel).read_text()
            _, chosen = sample_mutants(source, rel, args.sample, args.seed)
            for m in chosen:
                print(f"{name}:{m.line}: {m.what}")
        return 0
    started = time.monotonic()
    # SIGTERM (make interrupted, a kill) unwinds like Ctrl-C, so the copy is removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sys.dont_write_bytecode = True  # a stale .pyc of the previous mutant must never load
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    with tempfile.TemporaryDirectory(prefix="agentloom-mutation-") as tmp:
        copy_root = Path(tmp) / "tree"
        shutil.copytree(
            args.tree,
            copy_root,
            ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.pyc", "mutants"),
        )
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [str(copy_root), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
        print(f"coverage of {len(names)} module(s)...", flush=True)
        cov = collect_coverage(copy_root, names)
        _preimport(cov["warm"])
        reports = [run_module(n, copy_root, cov, args.sample, args.seed) for n in names]
    took = time.monotonic() - started
    save_results(reports, Path(args.results), args.seed, args.sample, took)
    write_report(reports, Path(args.report), args.seed, args.sample, took)
    print(f"report: {args.report}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
