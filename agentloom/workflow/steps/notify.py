"""An approval gate's notification: the JSON event POSTed when the gate first pauses, so
another system (a chat bot, CI) can ask the person.

Up to three tries; a private, loopback or link-local target is refused unless
`sandbox.allow_internal_webhook_targets` says otherwise. A notification that fails is
logged, by the target's host alone (a Slack-style URL's path is its credential), and the
gate notes it in the pause. When the run's durable meta names a `ui_url` (`agentloom run`
sets it from `AGENTLOOM_UI_URL`), the event carries `url`, the run's page in `agentloom
ui`, where the person can decide. The body is redacted as the store's copy of the prompt
is: the receiver keeps what it gets.

Credentials stay out of the file: `url_env` names the variable holding the URL (for the
webhooks whose URL is the secret), `headers_env` those holding header values, and
`secret_env` the one holding a key the body is signed with, so a receiver can tell our
events from anyone's: `X-AgentLoom-Timestamp` (Unix seconds) and `X-AgentLoom-Signature:
sha256=<hex HMAC-SHA256 of "<timestamp>." + body>`. Their values join the run's redactor
before anything is sent. A variable that isn't set sends nothing: an unsigned event
would teach the receiver to accept unsigned ones.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit

from agentloom import http
from agentloom.http import HttpRequest, HttpTimeout
from agentloom.http.netguard import AddressPolicy, AddressRefused, check_url, pinned

if TYPE_CHECKING:
    from agentloom.workflow.engine.context import RunContext
    from agentloom.workflow.schema.other_steps import Notify

log = logging.getLogger("agentloom.workflow.approval_gate")

TRIES = 3


async def send_notification(notify: Notify, step_id: str, message: str, body: str | None,
                            ctx: RunContext) -> bool:
    """POST the approval request (`body`: the rendered `body_template`, else the default
    event); True if the receiver answered 2xx."""
    env: Mapping[str, str] = getattr(ctx.clients, "env", None) or {}
    names = [n for n in (notify.url_env, *notify.headers_env.values(), notify.secret_env)
             if n is not None]
    missing = sorted({name for name in names if not env.get(name)})
    if missing:
        log.warning("approval gate %r: notify not sent: %s not set", step_id,
                    ", ".join(missing))
        return False
    url = notify.url if notify.url is not None else env[notify.url_env or ""]
    secrets = [env[name] for name in names]
    if secrets and ctx.redactor is not None:
        ctx.redactor.add_secrets(secrets)  # no log line or checkpoint holds them
    where = _shown(url)
    if not url.startswith(("http://", "https://")):
        log.warning("approval gate %r: notify URL must be http(s), got %s", step_id, where)
        return False
    redact = ctx.redactor.redact_text if ctx.redactor is not None else str
    data = redact(body).encode() if body is not None else json.dumps({
        "event": "approval_requested", "workflow": ctx.workflow.name,
        "run_id": ctx.run_id, "step_id": step_id, "message": redact(message),
        "resume": f"agentloom resume {ctx.run_id} --approve | --reject",
        **_page_link(ctx),
    }).encode()
    request = HttpRequest(method="POST", url=url, headers=_headers(notify, env, data),
                          body=data, timeout=HttpTimeout(connect=notify.timeout or 10.0,
                                                         read=notify.timeout or 10.0))
    sandbox = ctx.workflow.config.sandbox
    internal = bool(sandbox is not None and sandbox.allow_internal_webhook_targets)
    addresses = AddressPolicy(allow_private=internal)
    try:
        await check_url(url, addresses)
    except AddressRefused as exc:
        # The setting helps only with an internal address, not a name that doesn't resolve.
        hint = "" if isinstance(exc.__cause__, OSError) else (
            " (set sandbox.allow_internal_webhook_targets to allow it)")
        log.warning("approval gate %r: notify to %s refused: %s%s", step_id, where,
                    redact(str(exc)), hint)
        return False
    # Sent under a pin: the connection goes only to an address the same rule allows, judged
    # on its own lookup, so a name that rebinds to 127.0.0.1 after the check reaches nothing.
    with pinned(lambda host, _port, address: addresses.permits(host, address)):
        return await _post(request, step_id, where, ctx)


async def _post(request: HttpRequest, step_id: str, where: str, ctx: RunContext) -> bool:
    transport = ctx.transport
    owned = transport is None
    if owned:
        transport = http.AiohttpTransport()  # imported on first use: aiohttp is slow to load
    redact = ctx.redactor.redact_text if ctx.redactor is not None else str
    try:
        for attempt in range(TRIES):
            if attempt:
                await ctx.clock.sleep(0.5 * 2 ** (attempt - 1))
            try:
                response = await transport.handle(request)
                await response.read()
                await response.aclose()
            except AddressRefused as exc:  # rebound since the check: no retry changes that
                log.warning("approval gate %r: notify to %s refused: %s", step_id, where,
                            redact(str(exc)))
                return False
            except Exception as exc:  # a receiver that is down must not lose the pause
                log.warning("approval gate %r: notify to %s failed: %s", step_id, where,
                            redact(str(exc)))
                continue
            if 200 <= response.status < 300:
                return True
            log.warning("approval gate %r: notify to %s answered %s", step_id, where,
                        response.status)
            if response.status < 500:
                return False  # the receiver refused it: another try won't change that
    finally:
        if owned:
            await transport.aclose()
    return False


def _headers(notify: Notify, env: Mapping[str, str], body: bytes) -> dict[str, str]:
    """The file's headers, those `headers_env` names, and the signature with `secret_env`."""
    headers = {"content-type": "application/json", **notify.headers}
    for header, name in notify.headers_env.items():
        headers[header] = env[name]
    if notify.secret_env is not None:
        key = env[notify.secret_env].encode()
        stamp = str(int(time.time()))
        digest = hmac.new(key, stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
        headers["X-AgentLoom-Timestamp"] = stamp
        headers["X-AgentLoom-Signature"] = "sha256=" + digest
    return headers


def _shown(url: str) -> str:
    """The target as a log line names it: scheme and host, the path elided."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(a URL that does not parse)"
    tail = "/..." if parts.path not in ("", "/") or parts.query else ""
    return f"{parts.scheme}://{host}{port}{tail}" if parts.scheme else "(no scheme)"


def _page_link(ctx: RunContext) -> dict[str, str]:
    """The run's page in `agentloom ui`, when the run was started with AGENTLOOM_UI_URL."""
    base = (getattr(ctx.durable, "meta", None) or {}).get("ui_url")
    run_id = ctx.run_id
    if not isinstance(base, str) or not base.startswith(("http://", "https://")) or not run_id:
        return {}
    return {"url": f"{base.rstrip('/')}/runs/{quote(run_id, safe='')}"}
