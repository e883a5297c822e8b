"""The agent loop and its API: run_loop, summaries, observers."""

from agentloom.loop._contracts import (
    OutputValidator as OutputValidator,
    ToolBox as ToolBox,
    ToolContext as ToolContext,
)
from agentloom.loop._loop import (
    LoopOptions as LoopOptions,
    LoopResult as LoopResult,
    run_loop as run_loop,
)
