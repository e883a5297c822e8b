"""Recordings of model exchanges: the file format, canonical request hashing, matching, diffs.

A recording is one JSON file, `{"format": "agentloom-recording", "version": 1,
"exchanges": [...]}`. Each exchange is keyed by the step id and loop turn that made it
(the engine sets them with `call_context(...)`, since a transport cannot know them) and
by a canonical hash of the request: method, URL path (no host, no query: ports change and
Gemini's key sits there) and the JSON body with sorted keys, minus volatile fields and
reasoning text (`_reasoning`: it never reaches a recording, requests included). The
stored request body is a redacted copy, kept only to explain a mismatch with a diff.
Responses keep status, redacted headers, and either the body or the streamed chunks with
their offsets in seconds, so a stream replays byte for byte, chunk boundaries included
(a reply that carried reasoning text is stored without it).

Strict replay matches (step id, turn, hash) and consumes records in order; lenient replay
matches the hash alone. Neither ever invents a response: no match is `ReplayMismatch`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import difflib
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from agentloom import _jsontext
from agentloom._files import make_private_dir, read_regular
from agentloom.errors import ConfigError, ReplayMismatch
from agentloom.recording._context import CallContext
from agentloom.recording._reasoning import strip_reasoning
from agentloom.recording._redact_stream import redact_stream
from agentloom.recording._shape import ShapeError, check_exchange
from agentloom.redact import Redactor

if TYPE_CHECKING:
    from agentloom.redact import Redactor
    from agentloom.transport import HttpRequest

FORMAT = "agentloom-recording"
VERSION = 1
VOLATILE_FIELDS: frozenset[str] = frozenset({"user", "metadata", "request_id", "store"})
"""Top-level body fields left out of the hash: they vary between runs, not in meaning."""

ReplayMode = Literal["strict", "lenient"]


# --- canonical requests ------------------------------------------------------------------


def _body_value(body: bytes | None, *, reasoning: bool = False) -> Any:
    """The parsed body minus volatile fields, and minus reasoning text unless asked for
    (`strip_reasoning`: it never reaches a recording, so it can't identify a call)."""
    if not body:
        return None
    try:
        value = _jsontext.loads(body)  # bounded: strip_reasoning walks it by recursion
    except (ValueError, UnicodeDecodeError):
        return {"__raw_sha256__": hashlib.sha256(body).hexdigest()}
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if k not in VOLATILE_FIELDS}
    if not reasoning:
        strip_reasoning(value)
    return value


def canonical_request(request: HttpRequest, *, reasoning: bool = False) -> dict[str, Any]:
    """What identifies a request for matching: method, path and normalised body."""
    return {"method": request.method.upper(), "path": urlsplit(request.url).path,
            "body": _body_value(request.body, reasoning=reasoning)}


MAX_RECORDING_BYTES = 256 * 1024 * 1024
"""The largest recording (or mock-responses file) read: a file past it is refused, not
loaded into memory whole. Each reply in one is at most 32 MB already."""

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> str:
    return _CANONICAL.encode(value)  # one encoder: `json.dumps` builds one per call


def request_hash(request: HttpRequest, *, reasoning: bool = False,
                 redactor: Redactor | None = None) -> str:
    """The canonical hash. With the run's `redactor`, of the body with its secrets
    replaced: a redacted step output replays as `[REDACTED]`, and a later prompt that
    quotes it must still match what was recorded. `reasoning=True` gives the hash of
    recordings made before reasoning text was stripped (it differs only for a request
    that sends reasoning back, such as Claude's signed thinking in a tool loop)."""
    canonical = canonical_request(request, reasoning=reasoning)
    if redactor is not None:
        canonical["body"] = redact_leaves(canonical["body"], redactor)
    digest = hashlib.sha256(canonical_json(canonical).encode()).hexdigest()
    return f"sha256:{digest}"


def request_hashes(request: HttpRequest, redactor: Redactor | None) -> set[str]:
    """Every hash a recording of `request` may carry: this version's, and those of
    recordings made before secrets and reasoning were left out of it."""
    plain = request_hash(request)
    found = {plain, request_hash(request, reasoning=True)}
    if redactor is not None:
        found.add(request_hash(request, redactor=redactor))
    return found


def _hashed(exchange: dict[str, Any], hashes: set[str]) -> bool:
    return exchange["request_hash"] in hashes or exchange.get("redacted_hash") in hashes


def redact_leaves(value: Any, redactor: Redactor) -> Any:
    """`value` with each string redacted by content (secrets and patterns), never by key
    name: a provider's JSON has fields such as `text` that a state key may share."""
    if isinstance(value, str):
        return redactor.redact_text(value)
    if isinstance(value, dict):
        return {k: redact_leaves(v, redactor) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_leaves(v, redactor) for v in value]
    return value


def redact_json_text(text: str, redactor: Redactor) -> str:
    """A JSON reply body redacted leaf by leaf (a multi-line secret is escaped in the
    raw text); other text as text. Unchanged text is returned as it came."""
    try:
        value = _jsontext.loads(text)
    except ValueError:
        return redactor.redact_text(text)
    if not isinstance(value, (dict, list)):
        return redactor.redact_text(text)
    redacted = redact_leaves(value, redactor)
    return text if redacted == value else json.dumps(redacted, ensure_ascii=False)


# --- the file ----------------------------------------------------------------------------


class RecordingError(ConfigError):
    """A recording file that cannot be used (missing, corrupt, truncated, wrong format)."""


def encode_bytes(data: bytes) -> dict[str, str]:
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"b64": base64.b64encode(data).decode("ascii")}


def decode_bytes(item: dict[str, Any]) -> bytes:
    if "b64" in item:
        return base64.b64decode(item["b64"])
    return str(item.get("text", "")).encode("utf-8")


@dataclass(slots=True)
class Recording:
    exchanges: list[dict[str, Any]] = field(default_factory=list)
    path: Path | None = None

    def to_json(self) -> str:
        return json.dumps({"format": FORMAT, "version": VERSION, "exchanges": self.exchanges},
                          indent=1, ensure_ascii=False)

    @classmethod
    def parse(cls, text: str, *, path: Path | None = None) -> Recording:
        where = str(path) if path else "<recording>"
        try:
            data = _jsontext.loads(text)
        except ValueError as exc:
            raise RecordingError(f"{where}: not valid JSON, the file may be corrupt or "
                                 f"truncated ({exc})") from exc
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise RecordingError(f"{where}: not an AgentLoom recording (expected "
                                 f'"format": "{FORMAT}"); for the public AgentLoom\'s mock '
                                 "files use load_agentloom_mock_responses()")
        if data.get("version") != VERSION:
            raise RecordingError(f"{where}: recording version {data.get('version')!r} is not "
                                 f"supported (this AgentLoom reads version {VERSION})")
        exchanges = data.get("exchanges")
        if not isinstance(exchanges, list):
            raise RecordingError(f'{where}: "exchanges" must be a list')
        for i, ex in enumerate(exchanges):
            missing = [k for k in ("request_hash", "request") if not isinstance(ex, dict)
                       or k not in ex]
            if missing or not ("response" in ex or "error" in ex):
                raise RecordingError(f"{where}: exchange #{i} is incomplete "
                                     f"(missing {', '.join(missing) or 'response'})")
            try:
                check_exchange(ex)
            except ShapeError as exc:
                raise RecordingError(f"{where}: exchange #{i} (step {ex.get('step_id')!r:.80}): "
                                     f"{exc}") from None
        return cls(exchanges=exchanges, path=path)

    @classmethod
    def load(cls, path: str | Path) -> Recording:
        p = Path(path)
        try:
            text = read_regular(p, MAX_RECORDING_BYTES).decode("utf-8")
        except FileNotFoundError as exc:
            raise RecordingError(f"{p}: recording file not found") from exc
        except (OSError, UnicodeDecodeError) as exc:
            why = getattr(exc, "strerror", None) or exc
            raise RecordingError(f"{p}: cannot read the recording: {why}") from exc
        return cls.parse(text, path=p)

    @classmethod
    async def aload(cls, path: str | Path) -> Recording:
        return await asyncio.to_thread(cls.load, path)

    def save(self, path: str | Path | None = None) -> None:
        """Write atomically (temp file, fsync, rename): a crash leaves the old file."""
        target = Path(path or self.path or "")
        if not str(target):
            raise RecordingError("no path to save the recording to")
        make_private_dir(target.parent)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(self.to_json())
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


class Recorder:
    """Collects exchanges; with a path, rewrites the file after each one, so a killed run
    keeps what it recorded."""

    def __init__(self, path: str | Path | None = None, *,
                 redactor: Redactor | None = None, append: bool = False) -> None:
        """`append`: a recording already at `path` is kept and added to (a resumed run's
        exchanges go after those of the process that started it)."""
        self.recording = Recording(path=Path(path) if path else None)
        if append and path and Path(path).exists():
            self.recording.exchanges = Recording.load(path).exchanges
        self.redactor: Redactor = redactor or Redactor()
        """Always on: without one given, API keys and auth headers are still removed."""
        self._lock = asyncio.Lock()
        self._stale = False
        """The redactor learned a secret since the exchanges were redacted (a step's
        redacted output, known only once its reply is read)."""
        self.redactor.watch(self._learned)

    def _learned(self) -> None:
        self._stale = bool(self.recording.exchanges)

    def redact_body(self, body: bytes | None) -> Any:
        return self.redactor.redact_state(_body_value(body))

    def next_attempt(self, ctx: CallContext, req_hash: str) -> int:
        if ctx.attempt is not None:
            return ctx.attempt
        same = [e for e in self.recording.exchanges
                if e.get("step_id") == ctx.step_id and e.get("turn") == ctx.turn
                and e.get("request_hash") == req_hash]
        return len(same) + 1

    async def add(self, exchange: dict[str, Any]) -> None:
        async with self._lock:
            self._redact_again()
            self.recording.exchanges.append(exchange)
            if self.recording.path is not None:
                await asyncio.to_thread(self.recording.save)

    async def flush(self) -> None:
        """Redact what was recorded with every secret learned since, and save."""
        async with self._lock:
            if not self._stale:
                return
            self._redact_again()
            if self.recording.path is not None:
                await asyncio.to_thread(self.recording.save)

    def _redact_again(self) -> None:
        if not self._stale:
            return
        self._stale = False
        r = self.redactor
        for ex in self.recording.exchanges:
            req = ex.get("request") or {}
            if isinstance(req.get("url"), str):
                req["url"] = r.redact_text(req["url"])
            req["body"] = r.redact_state(req.get("body"))
            for holder in (ex.get("error"), (ex.get("response") or {}).get("stream_error")):
                if isinstance(holder, dict) and isinstance(holder.get("message"), str):
                    holder["message"] = r.redact_text(holder["message"])
            resp = ex.get("response")
            if not isinstance(resp, dict):
                continue
            if isinstance(resp.get("text"), str):
                resp["text"] = redact_json_text(resp["text"], r)
            chunks = resp.get("chunks")
            if isinstance(chunks, list) and all("text" in c for c in chunks):
                again = redact_stream([(float(c.get("t", 0.0)), decode_bytes(c))
                                       for c in chunks], r)
                if again is not None:
                    resp["chunks"] = again


# --- matching ----------------------------------------------------------------------------


def _pretty(value: Any) -> list[str]:
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False).splitlines()


def describe_call(step_id: Any, turn: Any) -> str:
    return f"step {step_id!r} turn {turn}" if step_id is not None else "a call outside any step"


class Matcher:
    """Hands out recorded exchanges, each at most once in strict mode."""

    def __init__(self, recording: Recording, mode: ReplayMode = "strict",
                 redactor: Redactor | None = None) -> None:
        if mode not in ("strict", "lenient"):
            raise ConfigError(f"replay mode must be 'strict' or 'lenient', got {mode!r}")
        self.recording = recording
        self.mode = mode
        self.used: set[int] = set()
        self._redactor = redactor

    def take(self, request: HttpRequest, ctx: CallContext | None) -> dict[str, Any]:
        ctx = ctx or CallContext()
        h = request_hash(request)
        hashes = request_hashes(request, self._redactor)
        exchanges = self.recording.exchanges
        if self.mode == "strict":
            keyed = [i for i, e in enumerate(exchanges)
                     if e.get("step_id") == ctx.step_id and e.get("turn") == ctx.turn
                     and _hashed(e, hashes)]
        else:
            keyed = [i for i, e in enumerate(exchanges) if _hashed(e, hashes)]
        fresh = [i for i in keyed if i not in self.used]
        if fresh:
            self.used.add(fresh[0])
            return exchanges[fresh[0]]
        if keyed and self.mode == "lenient":
            return exchanges[keyed[-1]]  # the same request again gets the same answer
        raise ReplayMismatch(self.explain(request, ctx, h, used_up=len(keyed)))

    def explain(self, request: HttpRequest, ctx: CallContext, h: str, *, used_up: int) -> str:
        source = str(self.recording.path) if self.recording.path else "the recording"
        call = describe_call(ctx.step_id, ctx.turn)
        head = (f"replay ({self.mode}): no recorded exchange for {call}"
                f" ({request.method.upper()} {urlsplit(request.url).path}, {h[:19]}…) in {source}")
        if used_up:
            return (f"{head}: its {used_up} matching record(s) were already used; this call "
                    "was made more often than when it was recorded")
        exchanges = self.recording.exchanges
        if not exchanges:
            return f"{head}: the recording is empty"
        same_turn = [e for e in exchanges
                     if e.get("step_id") == ctx.step_id and e.get("turn") == ctx.turn]
        same_step = [e for e in exchanges if e.get("step_id") == ctx.step_id]
        pool = same_turn or same_step or exchanges
        body = _body_value(request.body)
        if self._redactor is not None:
            body = self._redactor.redact_state(body)
        mine = _pretty({**canonical_request(request), "body": body})

        def theirs(e: dict[str, Any]) -> list[str]:
            req = e["request"]
            return _pretty({"method": req.get("method"), "path": req.get("path"),
                            "body": req.get("body")})

        nearest = max(pool, key=lambda e: difflib.SequenceMatcher(
            None, theirs(e), mine, autojunk=False).ratio())
        diff = list(difflib.unified_diff(theirs(nearest), mine, "recorded", "this call",
                                         n=2, lineterm=""))
        if len(diff) > 40:
            diff = [*diff[:40], f"... ({len(diff) - 40} more diff lines)"]
        if not diff:
            diff = ["(bodies look the same after redaction; a redacted value differs)"]
        known = sorted({describe_call(e.get("step_id"), e.get("turn")) for e in exchanges})[:8]
        closest = describe_call(nearest.get("step_id"), nearest.get("turn"))
        return (f"{head}.\nNearest record: {closest}"
                f".\nHow this request differs from it:\n" + "\n".join(diff)
                + f"\nRecorded calls: {', '.join(known)}")
