"""`python -m agentloom ...` is the `agentloom` command (as `python -m pip` is pip)."""

from agentloom.cli import main

raise SystemExit(main())
