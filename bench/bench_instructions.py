"""Instructions, not time: the figures a shared machine can't blur.

    python bench/bench_instructions.py            # whole process and per call
    python bench/bench_instructions.py --cli      # whole process only
    python bench/bench_instructions.py --cli --checkpointed   # and the checkpointed run
    python bench/bench_instructions.py --per-call provider,agent   # per call only

Runs each client under `valgrind --tool=callgrind` and reads the instruction count
(`Ir`) it reports: the same code gives the same count (±0.1%, with PYTHONHASHSEED=0)
whatever else the machine runs, where CPU time on a 2-core machine shared by eight
engineers moved ±40% between identical runs. It counts user-space instructions only:
system calls, thread switches and cache misses are not in it, so it complements CPU time
rather than replacing it. Needs valgrind; each figure takes a minute or two.

- whole process: the bare aiohttp script of `bench_cli.py` and `agentloom run
  one-step.yaml --no-checkpoint` (the run twice: the first also writes __pycache__ of a fresh tree),
  against the fake server in its own process (not counted); with `--checkpointed`, also
  the same run keeping its checkpoints (into a SQLite store a first run created);
- per call: (count at 600 calls - count at 100 calls) / 500 (`--calls` changes the two
  counts), for raw aiohttp,
  `ProviderClient.complete`, `Agent.from_env(...).arun` (`agent_text`: the reply's text,
  the summary never built) and `Agent.from_env(...).arun_result` (`agent`: reading the
  summary's status, as `bench_agent.py` does), each over loopback HTTP.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from bench_cli import BARE_SCRIPT, FLOW  # noqa: E402

CALLS = """
import asyncio, json, sys
url, which, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}

async def main():
    import aiohttp
    from agentloom import Agent
    from agentloom.http import AiohttpTransport
    from agentloom.messages import Message, ModelRequest
    from agentloom.providers import get_protocol, vendor_endpoint
    from agentloom.routing import ProviderClient
    payload = json.dumps(BODY).encode()
    headers = {"content-type": "application/json", "authorization": "Bearer sk"}
    env = {"OPENAI_API_KEY": "sk", "OPENAI_BASE_URL": url, "AGENTLOOM_MODEL": "gpt-4o-mini"}
    transport = AiohttpTransport()
    client = ProviderClient(vendor_endpoint("openai", api_key="sk", base_url=url),
                            get_protocol("openai"), transport)
    request = ModelRequest(model="gpt-4o-mini", messages=(Message.user("hi"),), temperature=0)
    agent = Agent.from_env(env, tools=[], temperature=0)
    async with aiohttp.ClientSession() as session, agent:
        async def raw():
            async with session.post(url + "/chat/completions", data=payload, headers=headers) as r:
                json.loads(await r.read())
        async def provider():
            await client.complete(request)
        async def agent_call():
            assert (await agent.arun_result("hi")).summary.status.succeeded
        async def agent_text():
            assert await agent.arun("hi")
        call = {"aiohttp": raw, "provider": provider, "agent": agent_call,
                "agent_text": agent_text}[which]
        for _ in range(20 + n):
            await call()
    await transport.aclose()

asyncio.run(main())
"""


def instructions(cmd: list[str], env: dict[str, str], cwd: str | None = None) -> int:
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                           *cmd], env={**env, "PYTHONHASHSEED": "0"}, capture_output=True,
                          text=True, check=True, cwd=cwd)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"no count from valgrind: {done.stderr[-300:]}")
    return int(found.group(1))


def per_call(calls: Path, root: str, which: str, env: dict[str, str],
             counts: tuple[int, int] = (100, 600)) -> float:
    """(count at `high` calls - count at `low`) / (high - low) for one client."""
    low, high = counts
    at_low = instructions([sys.executable, str(calls), root + "/v1", which, str(low)], env)
    at_high = instructions([sys.executable, str(calls), root + "/v1", which, str(high)], env)
    return (at_high - at_low) / (high - low)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", action="store_true", help="whole process only")
    ap.add_argument("--checkpointed", action="store_true",
                    help="also count the run with checkpoints (SQLite)")
    ap.add_argument("--per-call", metavar="CLIENTS",
                    help="per call only, for these clients (comma-separated: aiohttp, "
                         "provider, agent_text, agent); skips the whole-process counts")
    ap.add_argument("--calls", default="100,600", metavar="LOW,HIGH",
                    help="the two call counts the per-call figure is taken between "
                         "(default 100,600; 200,2200 is steadier: a full collection "
                         "landing in the shorter run moves the shorter span)")
    args = ap.parse_args()
    low, high = (int(n) for n in args.calls.split(","))
    from bench_transport import start_server, stop_server

    server, base_url = start_server(0.0)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            flow, bare, calls = Path(tmp, "one.yaml"), Path(tmp, "bare.py"), Path(tmp, "c.py")
            flow.write_text(FLOW)
            bare.write_text(BARE_SCRIPT)
            calls.write_text(CALLS)
            root = base_url.removesuffix("/v1")
            env = {"PATH": os.environ.get("PATH", ""), "HOME": tmp, "OPENAI_API_KEY": "k",
                   "OPENAI_BASE_URL": root + "/v1",
                   "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
            agentloom = [sys.executable, str(Path(sys.executable).parent / "agentloom"), "run",
                         str(flow), "--no-checkpoint"]
            per: dict[str, float] = {}
            if args.per_call:
                for which in args.per_call.split(","):
                    per[which] = per_call(calls, root, which, env, (low, high))
                    print(f"{which:26} {per[which] / 1e3:9.1f} k per call")
                return
            floor = instructions([sys.executable, str(bare), root], env)
            print(f"bare aiohttp script        {floor / 1e6:9.1f} M")
            for label in ("agentloom run (first)", "agentloom run"):
                n = instructions(agentloom, env)
                print(f"{label:26} {n / 1e6:9.1f} M  {n / floor:.2f}x")
            if args.checkpointed:
                # The first run creates the store; the count is of a run into an existing one.
                subprocess.run(agentloom[:-1], env=env, cwd=tmp, capture_output=True, check=True)
                n = instructions(agentloom[:-1], env, cwd=tmp)
                print(f"{'agentloom run (checkpoint)':26} {n / 1e6:9.1f} M  {n / floor:.2f}x")
            if args.cli:
                return
            for which in ("aiohttp", "provider", "agent"):
                per[which] = per_call(calls, root, which, env, (low, high))
                print(f"{which:26} {per[which] / 1e3:9.1f} k per call  "
                      f"{per[which] / per['aiohttp']:.2f}x")
    finally:
        stop_server(server)


if __name__ == "__main__":
    main()
