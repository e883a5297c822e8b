"""The public AgentLoom's command line, accepted as aliases of ours.

A user moving over types their commands; `translate` rewrites them into ours before
parsing, so each of our commands keeps one set of flags:

- `--checkpoint-dir DIR` (run, resume, runs, history, callback-server): the store
  `DIR/runs.db`.
- `--lite` (no observability): dropped; ours reports nothing unless `--trace`/`--otel`.
- `run -b USD`: `--budget USD`.
- `replay WORKFLOW --recording FILE` (`-r`): `replay FILE WORKFLOW`; `--observability`
  is dropped. A FILE in their mock-responses format (what their `run --record` writes,
  keyed by step id or prompt hash) replays as `run WORKFLOW --mock-responses FILE`,
  whichever order it is given in.

`agentloom history` and `agentloom callback-server` are commands of their own
(`agentloom.cli.history`, `agentloom.cli.callback_server`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agentloom._files import read_regular
from agentloom._jsontext import loads

_STORE_COMMANDS = frozenset({"run", "resume", "runs", "history", "callback-server"})


def _take(argv: list[str], *names: str) -> str | None:
    """Remove `--name VALUE` / `--name=VALUE` from argv; the last value given, or None."""
    value: str | None = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        key, eq, inline = arg.partition("=")
        if key in names:
            if eq:
                value = inline
                del argv[i]
                continue
            if i + 1 < len(argv):
                value = argv[i + 1]
                del argv[i:i + 2]
                continue
        i += 1
    return value


_VALUED = frozenset({"--state", "-s", "--state-file", "--replay-mode", "--tools", "--trace"})


def _positionals(argv: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _VALUED:
            skip = True
        elif not arg.startswith("-"):
            out.append(arg)
    return out


def _drop(argv: list[str], *flags: str) -> None:
    argv[:] = [a for a in argv if a not in flags]


def is_mock_responses_file(path: str) -> bool:
    """Whether `path` holds a public-AgentLoom mock-responses file rather than one of our
    recordings (ours say `"format": "agentloom-recording"`)."""
    from agentloom.recording import MAX_RECORDING_BYTES

    try:  # a FIFO is passed over, not waited on; the loader words what is wrong
        data = loads(read_regular(path, MAX_RECORDING_BYTES))
    except (OSError, ValueError):
        return False
    return (isinstance(data, dict) and data.get("format") != "agentloom-recording"
            and not isinstance(data.get("exchanges"), list))


def translate(argv: Sequence[str]) -> list[str]:
    """Their command line as ours (unchanged when it uses none of their forms). Only what
    comes before a `--` is read as flags: after it every word is a positional (a run id, a
    file) and is passed on as typed, even one spelt `--lite` or `--checkpoint-dir`. Each
    word is one argument as the shell split it, so a flag's value (`-s x=--lite`,
    `--state=--lite`) is never taken for a flag."""
    out = list(argv)
    end = out.index("--") if "--" in out else len(out)
    command_at = next((i for i, a in enumerate(out[:end]) if not a.startswith("-")), None)
    if command_at is None:
        return out
    command = out[command_at]
    head, rest, tail = out[:command_at + 1], out[command_at + 1:end], out[end:]
    if command in _STORE_COMMANDS:
        directory = _take(rest, "--checkpoint-dir")
        if directory is not None:
            rest += ["--store", str(Path(directory) / "runs.db")]
        _drop(rest, "--lite")
    if command == "run":
        rest = ["--budget" if a == "-b" else a for a in rest]
    if command == "replay":
        recording = _take(rest, "--recording", "-r")
        _drop(rest, "--observability")
        positional = _positionals(rest) + tail[1:]
        if recording is None and len(positional) >= 2 and is_mock_responses_file(positional[0]):
            recording = positional[0]
            _remove(rest, tail, recording)
            positional = positional[1:]
        if recording is not None:
            if is_mock_responses_file(recording) and positional:
                workflow = positional[0]
                _remove(rest, tail, workflow)
                return [*out[:command_at], "run", workflow, "--mock-responses", recording,
                        "--no-checkpoint", *rest, *tail]
            return [*head, recording, *rest, *tail]
    return [*head, *rest, *tail]


def _remove(rest: list[str], tail: list[str], word: str) -> None:
    """Take a positional out of the flags before `--` or, failing that, the words after."""
    if word in rest:
        rest.remove(word)
    else:
        tail.remove(word)
