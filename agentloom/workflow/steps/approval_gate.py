"""The `approval_gate` step: the run pauses until a person approves or rejects.

The first time the step runs it raises `PauseRun`; the run is saved `paused` and
`agentloom resume RUN_ID --approve|--reject` brings the decision back. The decision
(`approved` or `rejected`) goes to `output`; both let the run go on, so later steps can
branch on it. `timeout_seconds` counts from the moment the run paused (the store's
timestamp): a resume after it applies `on_timeout`, or fails the step when there is none.

`notify` POSTs a JSON event when the gate first pauses, so another system (chat, CI) can
ask the person: up to three tries, a private, loopback or link-local target refused unless
`sandbox.allow_internal_webhook_targets` says otherwise. A notification that fails is logged
and noted in the pause; it never costs the pause itself. When the run's durable meta
names a `ui_url` (`agentloom run` sets it from `AGENTLOOM_UI_URL`), the event carries
`url`, the run's page in `agentloom ui`, where the person can decide.

Credentials stay out of the file: `headers_env` names the variables that hold header
values, and `secret_env` the one holding a key the body is signed with, so a receiver
can tell our events from anyone's: `X-AgentLoom-Timestamp` (Unix seconds) and
`X-AgentLoom-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>." + body>`. Their values
join the run's redactor before anything is sent. A variable that isn't set sends
nothing (logged, `notified: false`): an unsigned event would teach the receiver to
accept unsigned ones.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from agentloom import http
from agentloom.errors import DeadlineExceeded
from agentloom.http import HttpRequest, HttpTimeout
from agentloom.http.netguard import AddressPolicy, AddressRefused, check_url
from agentloom.workflow.engine.pause import PauseRun, waited_too_long
from agentloom.workflow.engine.result import StepOutcome
from agentloom.workflow.load.secret_checks import WRITTEN_KEY, credential_headers

if TYPE_CHECKING:
    from agentloom.workflow.engine.context import RunContext
    from agentloom.workflow.lang.templates import Template
    from agentloom.workflow.load.loader import PrepareContext
    from agentloom.workflow.load.workflow import StepNode
    from agentloom.workflow.schema.other_steps import ApprovalGateStep, Notify


log = logging.getLogger("agentloom.workflow.approval_gate")


@dataclass(slots=True, frozen=True)
class Prepared:
    message: Template | None
    notify_body: Template | None = None


def prepare(step: ApprovalGateStep, pc: PrepareContext) -> Prepared:
    body = step.notify.body_template if step.notify is not None else None
    for header in credential_headers(step.notify.headers if step.notify else {}):
        pc.warn(WRITTEN_KEY.format(instead=f"notify.headers_env: {{{header}: VARIABLE}}"),
                "notify", "headers", header)
    return Prepared(
        message=None if step.message is None else pc.template(step.message, "message"),
        notify_body=None if body is None else pc.template(body, "notify.body_template"),
    )


async def execute(node: StepNode, ctx: RunContext) -> StepOutcome:
    step: ApprovalGateStep = node.step  # type: ignore[assignment]
    prep: Prepared = node.prepared
    message = (prep.message.render(ctx.scope) if prep.message is not None
               else f"approve step {node.id!r} of workflow {ctx.workflow.name!r}?")
    durable = ctx.durable
    got = durable.take_decision(node.id) if durable is not None else None
    if got is None or durable is None:
        data: dict[str, Any] = {"timeout_seconds": step.timeout_seconds,
                                "on_timeout": step.on_timeout}
        if step.notify is not None:
            data["notified"] = await _notify(step.notify, prep, node.id, message, ctx)
        raise PauseRun("approval", message, data=data)
    decision, paused_at = got
    approve = decision.approve
    waited = waited_too_long(paused_at, durable.clock_now(), step.timeout_seconds)
    if waited is not None:
        if step.on_timeout is None:
            raise DeadlineExceeded(
                f"approval of step {node.id!r} timed out: resumed {waited:.0f}s after "
                f"the pause, over timeout_seconds={step.timeout_seconds:g}, and the "
                "step sets no on_timeout", scope="step")
        approve = step.on_timeout == "approve"
    if approve is None:
        raise PauseRun("approval", message + " (resume with --approve or --reject)",
                       data={"timeout_seconds": step.timeout_seconds,
                             "on_timeout": step.on_timeout})
    value = "approved" if approve else "rejected"
    return StepOutcome(value=value, text=value)


def _page_link(ctx: RunContext) -> dict[str, str]:
    """The run's page in `agentloom ui`, when the run was started with AGENTLOOM_UI_URL."""
    base = (getattr(ctx.durable, "meta", None) or {}).get("ui_url")
    run_id = ctx.run_id
    if not isinstance(base, str) or not base.startswith(("http://", "https://")) or not run_id:
        return {}
    return {"url": f"{base.rstrip('/')}/runs/{quote(run_id, safe='')}"}


async def _notify(notify: Notify, prep: Prepared, step_id: str, message: str,
                  ctx: RunContext) -> bool:
    """POST the approval request; True if the receiver answered 2xx."""
    if not notify.url.startswith(("http://", "https://")):
        log.warning("approval gate %r: notify.url must be http(s), got %r", step_id, notify.url)
        return False
    # The receiver (a chat channel, a CI log) keeps what it is sent: redacted as the
    # store's copy of the prompt is. Its credentials belong in `notify.headers`.
    redact = ctx.redactor.redact_text if ctx.redactor is not None else str
    if prep.notify_body is not None:
        body = redact(prep.notify_body.render(ctx.scope)).encode()
    else:
        body = json.dumps({
            "event": "approval_requested", "workflow": ctx.workflow.name,
            "run_id": ctx.run_id, "step_id": step_id, "message": redact(message),
            "resume": f"agentloom resume {ctx.run_id} --approve | --reject",
            **_page_link(ctx),
        }).encode()
    headers = _credentials(notify, step_id, ctx, body)
    if headers is None:
        return False
    request = HttpRequest(method="POST", url=notify.url, headers=headers, body=body,
                          timeout=HttpTimeout(connect=notify.timeout or 10.0,
                                              read=notify.timeout or 10.0))
    sandbox = ctx.workflow.config.sandbox
    internal = bool(sandbox is not None and sandbox.allow_internal_webhook_targets)
    try:
        await check_url(notify.url, AddressPolicy(allow_private=internal))
    except AddressRefused as exc:
        # The setting helps only with an internal address, not a name that doesn't resolve.
        hint = "" if isinstance(exc.__cause__, OSError) else (
            " (set sandbox.allow_internal_webhook_targets to allow it)")
        log.warning("approval gate %r: notify refused: %s%s", step_id, exc, hint)
        return False
    transport = ctx.transport
    owned = transport is None
    if owned:
        transport = http.AiohttpTransport()  # imported on first use: aiohttp is slow to load
    try:
        for attempt in range(_NOTIFY_TRIES):
            if attempt:
                await ctx.clock.sleep(0.5 * 2 ** (attempt - 1))
            try:
                response = await transport.handle(request)
                await response.read()
                await response.aclose()
            except Exception as exc:  # a receiver that is down must not lose the pause
                log.warning("approval gate %r: notify %s failed: %s", step_id, notify.url,
                            exc)
                continue
            if 200 <= response.status < 300:
                return True
            log.warning("approval gate %r: notify %s answered %s", step_id, notify.url,
                        response.status)
            if response.status < 500:
                return False  # the receiver refused it: another try won't change that
    finally:
        if owned:
            await transport.aclose()
    return False


_NOTIFY_TRIES = 3


def _credentials(notify: Notify, step_id: str, ctx: RunContext, body: bytes
                 ) -> dict[str, str] | None:
    """The request's headers: the file's, those `headers_env` names, and the signature
    with `secret_env`; None (logged) when a named variable is not set."""
    env: Mapping[str, str] = getattr(ctx.clients, "env", None) or {}
    missing = [name for name in (*notify.headers_env.values(), notify.secret_env)
               if name is not None and not env.get(name)]
    if missing:
        log.warning("approval gate %r: notify not sent: %s not set", step_id,
                    ", ".join(sorted(set(missing))))
        return None
    headers = {"content-type": "application/json", **notify.headers}
    secrets = []
    for header, name in notify.headers_env.items():
        headers[header] = env[name]
        secrets.append(env[name])
    if notify.secret_env is not None:
        key = env[notify.secret_env]
        secrets.append(key)
        stamp = str(int(time.time()))
        digest = hmac.new(key.encode(), stamp.encode() + b"." + body, hashlib.sha256)
        headers["X-AgentLoom-Timestamp"] = stamp
        headers["X-AgentLoom-Signature"] = "sha256=" + digest.hexdigest()
    if secrets and ctx.redactor is not None:
        ctx.redactor.add_secrets(secrets)  # a log line or a checkpoint never holds them
    return headers
