"""The sync face of an `Agent`: each method runs its async twin on the agent's private
event loop (`_sync.Portal`), so a caller without an event loop gets the same run.

`Agent` inherits it; `AsyncFace` is what these methods use of the agent.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator, Sequence
from typing import Protocol

from agentloom.loop._sync import Portal
from agentloom.loop.result import ConversationResult
from agentloom.loop.stream import AgentEvent
from agentloom.loop.transcript import Transcript
from agentloom.messages import Message


class AsyncFace(Protocol):
    """An Agent's async face and its portal, as the sync face calls them."""

    _portal: Portal

    def astream(self, prompt: str | Transcript | Sequence[Message], *,
                correlation_id: str | None = None, parent_id: str | None = None,
                conversation_id: str | None = None) -> AsyncGenerator[AgentEvent, None]: ...

    async def arun_result(self, prompt: str, *, correlation_id: str | None = None,
                          parent_id: str | None = None, conversation_id: str | None = None
                          ) -> ConversationResult: ...

    async def arun(self, prompt: str, **ids: str | None) -> str: ...

    async def aconverse_result(self, messages: Transcript | Sequence[Message], *,
                               correlation_id: str | None = None,
                               parent_id: str | None = None,
                               conversation_id: str | None = None) -> ConversationResult: ...

    async def aconverse(self, messages: Transcript | Sequence[Message],
                        **ids: str | None) -> Transcript: ...

    async def arun_conversation_result(
        self, transcript: Transcript | Sequence[Message], prompt: str | None = None, *,
        correlation_id: str | None = None, parent_id: str | None = None,
        conversation_id: str | None = None,
    ) -> ConversationResult: ...

    async def arun_conversation(self, transcript: Transcript | Sequence[Message],
                                prompt: str | None = None, **ids: str | None
                                ) -> Transcript: ...


class SyncFace:
    """`run`, `run_result`, `converse`, ... and `stream`: the async face, run to its end
    on the agent's portal loop."""

    def stream(self: AsyncFace, prompt: str | Transcript | Sequence[Message],
               **ids: str | None) -> Iterator[AgentEvent]:
        """`astream` for callers that are not async: the run goes on on the agent's
        loop while you read its events; leaving the loop early cancels it."""
        events = self.astream(prompt, **ids)

        async def step() -> AgentEvent | None:
            try:
                return await anext(events)
            except StopAsyncIteration:
                return None

        async def close() -> None:
            await events.aclose()

        try:
            while True:
                event = self._portal.run(step, name="Agent.stream", twin="agent.astream")
                if event is None:
                    return
                yield event
        finally:
            self._portal.run(close, name="Agent.stream", twin="agent.astream")

    def run_result(self: AsyncFace, prompt: str, **ids: str | None) -> ConversationResult:
        return self._portal.run(lambda: self.arun_result(prompt, **ids),
                                name="Agent.run_result", twin="agent.arun_result")

    def run(self: AsyncFace, prompt: str, **ids: str | None) -> str:
        return self._portal.run(lambda: self.arun(prompt, **ids),
                                name="Agent.run", twin="agent.arun")

    def converse_result(self: AsyncFace, messages: Transcript | Sequence[Message],
                        **ids: str | None) -> ConversationResult:
        return self._portal.run(lambda: self.aconverse_result(messages, **ids),
                                name="Agent.converse_result", twin="agent.aconverse_result")

    def converse(self: AsyncFace, messages: Transcript | Sequence[Message],
                 **ids: str | None) -> Transcript:
        return self._portal.run(lambda: self.aconverse(messages, **ids),
                                name="Agent.converse", twin="agent.aconverse")

    def run_conversation_result(self: AsyncFace, transcript: Transcript | Sequence[Message],
                                prompt: str | None = None,
                                **ids: str | None) -> ConversationResult:
        return self._portal.run(
            lambda: self.arun_conversation_result(transcript, prompt, **ids),
            name="Agent.run_conversation_result", twin="agent.arun_conversation_result")

    def run_conversation(self: AsyncFace, transcript: Transcript | Sequence[Message],
                         prompt: str | None = None, **ids: str | None) -> Transcript:
        return self._portal.run(
            lambda: self.arun_conversation(transcript, prompt, **ids),
            name="Agent.run_conversation", twin="agent.arun_conversation")
