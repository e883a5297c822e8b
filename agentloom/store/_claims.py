"""Who holds a run: a claim names its worker `host:pid:nonce`, so a process on the same
host can see that the holder is gone (killed, crashed) and take the run over at once
instead of waiting out its lease. One rule for `agentloom resume`, a batch's workers and
the UI's decisions."""

from __future__ import annotations

import os
import socket
import uuid
from typing import Any


def new_worker_id() -> str:
    """This process, as a claim names it: host, pid and a random tail."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def holder_is_gone(holder: str | None) -> bool:
    """True when `holder` was a process of this host that no longer runs (a holder on
    another host, or one not ours to signal, is taken to be alive)."""
    if not holder:
        return False
    parts = holder.split(":")
    if len(parts) != 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return False
    try:
        os.kill(int(parts[1]), 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists, but not ours to signal
        return False
    return False


async def take_claim(store: Any, run_id: str, worker_id: str,
                     lease_seconds: float) -> str | None:
    """Claim the run for `worker_id`: None when it is ours now, else its live holder. A
    claim whose holder is gone is released (only if it still holds it) and taken."""
    if not hasattr(store, "claim_run"):
        return None
    if await store.claim_run(run_id, worker_id, lease_seconds):
        return None
    record = await store.get_run(run_id)
    holder = getattr(record, "claimed_by", None) or "another worker"
    if holder_is_gone(holder):
        await store.release_claim(run_id, holder)
        if await store.claim_run(run_id, worker_id, lease_seconds):
            return None
        record = await store.get_run(run_id)
        holder = getattr(record, "claimed_by", None) or holder
    return str(holder)
