"""Runs the `batch` subcommand as `agentloom batch ...` would, for the subprocess tests.

It builds a parser holding only `batch`, so the tests do not depend on how the main CLI
registers its commands."""

from __future__ import annotations

import sys

from agentloom.cli import EXIT_USAGE, UsageError, _Parser
from agentloom.cli import batch as batch_cli


def main(argv: list[str]) -> int:
    parser = _Parser(prog="agentloom")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    batch_cli.add_parser(sub)
    args = parser.parse_args(argv)
    try:
        return batch_cli.run(args)
    except UsageError as exc:
        sys.stderr.write(f"agentloom: error: {exc}\n")
        return EXIT_USAGE


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
