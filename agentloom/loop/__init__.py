"""The agent loop and its API: run_loop, transcripts, summaries, observers.

Job: THE agent loop and the one `Agent`, the one deadline helper (`Deadline`),
summaries, observers. May import: the layers up to `tools` (tests/test_layers.py holds
the rule). `ConversationResult` and `Transcript` (an `Agent`'s results) and the summary's
pydantic models (`ConversationSummary`, `TurnRecord`) load on first use: a workflow's
steps run the loop without them, and a summary nobody reads is never built.
"""

from typing import TYPE_CHECKING

from agentloom._lazy import lazy_getattr
from agentloom.loop._budget import Deadline as Deadline
from agentloom.loop._budget import no_deadline as no_deadline
from agentloom.loop._contracts import (
    OutputValidator as OutputValidator,
)
from agentloom.loop._journal import LoopJournal as LoopJournal
from agentloom.loop._journal import LoopRestore as LoopRestore
from agentloom.loop._journal import current_journal as current_journal
from agentloom.loop._loop import (
    run_loop as run_loop,
)
from agentloom.loop._loop import (
    status_for_error as status_for_error,
)
from agentloom.loop._options import (
    LoopOptions as LoopOptions,
)
from agentloom.loop._options import (
    LoopResult as LoopResult,
)
from agentloom.loop.collector import SummaryCollector as SummaryCollector
from agentloom.loop.observer import (
    ConversationInfo as ConversationInfo,
)
from agentloom.loop.observer import (
    MultiObserver as MultiObserver,
)
from agentloom.loop.observer import (
    NullObserver as NullObserver,
)
from agentloom.loop.observer import (
    Observer as Observer,
)
from agentloom.loop.observer import (
    current_conversation as current_conversation,
)
from agentloom.loop.status import (
    ConversationStatus as ConversationStatus,
)
from agentloom.loop.status import (
    SummaryOptions as SummaryOptions,
)
from agentloom.tools.contracts import ToolBox as ToolBox
from agentloom.tools.contracts import ToolContext as ToolContext

if TYPE_CHECKING:
    from agentloom.loop.result import ConversationResult as ConversationResult
    from agentloom.loop.summary import ConversationSummary as ConversationSummary
    from agentloom.loop.summary import TurnRecord as TurnRecord
    from agentloom.loop.transcript import Transcript as Transcript

__getattr__ = lazy_getattr(__name__, {"ConversationResult": "agentloom.loop.result",
                                      "ConversationSummary": "agentloom.loop.summary",
                                      "TurnRecord": "agentloom.loop.summary",
                                      "Transcript": "agentloom.loop.transcript"}, globals())
