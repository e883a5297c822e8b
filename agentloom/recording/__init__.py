"""Recordings of model exchanges: the file format, the record and replay transports that
sit on the `Transport` seam, and the public AgentLoom's mock-response files.

Job: recordings of model exchanges and the record/replay transports. May import: types,
`http`, `providers`, `pricing`, `routing` (tests/test_layers.py holds the rule).

Only the call context (which step and turn a model call belongs to, read by the loop on
every call) loads with the package; the file format and the transports load when a run
records, replays or checkpoints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentloom._lazy import lazy_getattr
from agentloom.recording._context import CallContext, call_context, current_call_context

if TYPE_CHECKING:
    from agentloom.recording._format import (
        FORMAT,
        MAX_RECORDING_BYTES,
        VERSION,
        Matcher,
        Recorder,
        Recording,
        RecordingError,
        ReplayMode,
        canonical_json,
        canonical_request,
        decode_bytes,
        describe_call,
        encode_bytes,
        request_hash,
    )
    from agentloom.recording._model_hash import model_request_hash
    from agentloom.recording._record import RecordTransport
    from agentloom.recording._replay import ReplayTransport

__all__ = [
    "FORMAT",
    "MAX_RECORDING_BYTES",
    "VERSION",
    "CallContext",
    "Matcher",
    "RecordTransport",
    "Recorder",
    "Recording",
    "RecordingError",
    "ReplayMode",
    "ReplayTransport",
    "call_context",
    "canonical_json",
    "canonical_request",
    "current_call_context",
    "decode_bytes",
    "describe_call",
    "encode_bytes",
    "model_request_hash",
    "request_hash",
]

_FORMAT_NAMES = ("FORMAT", "MAX_RECORDING_BYTES", "VERSION", "Matcher", "Recorder",
                 "Recording", "RecordingError", "ReplayMode", "canonical_json",
                 "canonical_request", "decode_bytes", "describe_call", "encode_bytes",
                 "request_hash")
_LAZY = {
    **dict.fromkeys(_FORMAT_NAMES, "agentloom.recording._format"),
    "model_request_hash": "agentloom.recording._model_hash",
    "RecordTransport": "agentloom.recording._record",
    "ReplayTransport": "agentloom.recording._replay",
}


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
