"""The `agentloom` command: the only layer that reads the environment.

One job: turn a command line (and `os.environ`) into calls on the library below it (it
may import every other layer). Startup is kept fast: this module imports only argparse,
json and the command line's own small helpers; each command imports what it needs when
it runs. Usage errors are one line on stderr and exit code 2; a failed run or an invalid
workflow exits 1, a run paused for a person 3, an interrupted one 130.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from agentloom.cli._exit import EXIT_FAILED as EXIT_FAILED
from agentloom.cli._exit import EXIT_INTERRUPTED as EXIT_INTERRUPTED
from agentloom.cli._exit import EXIT_OK as EXIT_OK
from agentloom.cli._exit import EXIT_PAUSED as EXIT_PAUSED
from agentloom.cli._exit import EXIT_USAGE as EXIT_USAGE
from agentloom.cli._exit import UsageError as UsageError
from agentloom.cli._exit import _Parser as _Parser
from agentloom.cli._parser import _COMMAND_MODULES, build_parser, command_module
from agentloom.cli._parser import command_of as command_of
from agentloom.cli._style import extract_color
from agentloom.cli.public_flags import translate

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "UsageError", "build_parser", "main"]

_FUNCTIONS: dict[str, tuple[str, str]] = {
    "run": ("agentloom.cli.run", "command_run"),
    "validate": ("agentloom.cli.validate", "command_validate"),
    "schema": ("agentloom.cli.schema", "command_schema"),
    **{name: (module, "run") for name, module in _COMMAND_MODULES.items()},
}
"""Each command's module and function, imported when the command runs."""


def main(argv: Sequence[str] | None = None) -> int:
    # Text from outside (replies, error bodies, files) is shown on a terminal, not obeyed;
    # a pipe or a file (and its start-up time) is left alone.
    out, err = sys.stdout, sys.stderr
    if _on_terminal(out) or _on_terminal(err):
        from agentloom.cli._terminal import guarded

        sys.stdout, sys.stderr = guarded(out), guarded(err)
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = out, err


def _on_terminal(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


def _main(argv: Sequence[str] | None) -> int:
    argv = translate(sys.argv[1:] if argv is None else list(argv))  # the public AgentLoom's forms
    from agentloom.cli._style import COLOR_CHOICES, error_line, set_color

    argv, color = extract_color(argv)
    if color is not None and color not in COLOR_CHOICES:
        sys.stderr.write(error_line(sys.stderr, f"--color {color!r}: expected one of "
                                    f"{', '.join(COLOR_CHOICES)}"))
        return EXIT_USAGE
    set_color(color or "auto")
    parser = build_parser(command_of(argv))
    args = parser.parse_args(argv)
    if args.version:
        from agentloom._version import __version__

        print(f"agentloom {__version__}")
        return EXIT_OK
    target = _FUNCTIONS.get(args.command)
    try:
        if target is not None:
            module, function = target
            code: int = getattr(command_module(module), function)(args)
            return code
    except UsageError as exc:
        sys.stderr.write(error_line(sys.stderr, str(exc)))
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("agentloom: interrupted\n")
        return EXIT_INTERRUPTED
    parser.print_help(sys.stderr)
    return EXIT_USAGE


def entry() -> None:
    raise SystemExit(main())
