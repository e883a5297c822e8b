from agentloom.cli import main

raise SystemExit(main())
