"""`cache: auto` in a workflow: on an llm_call step, on an agent definition and through a
profile, against the fake Anthropic server (which keeps a prompt cache as the API does)."""

from __future__ import annotations

from servers_for_steps import bodies, run_example, served

from agentloom.workflow import load_workflow

SYSTEM = "You answer questions about weaving, briefly and exactly. " * 30

FLOW = f"""\
name: cached
profiles:
  cached: {{cache: auto}}
agents:
  weaver: {{instructions: "{SYSTEM}", cache: auto}}
steps:
  - {{id: one, type: llm_call, system_prompt: "{SYSTEM}", prompt: What is a loom?,
     cache: auto}}
  - {{id: two, type: llm_call, system_prompt: "{SYSTEM}", prompt: What is a shuttle?,
     profile: cached, depends_on: [one]}}
  - {{id: three, type: agent, agent: weaver, prompt: What is a heddle?, depends_on: [two]}}
  - {{id: plain, type: llm_call, system_prompt: "{SYSTEM}", prompt: What is warp?,
     depends_on: [three]}}
"""


async def test_cache_auto_marks_requests_and_later_steps_read_the_cache() -> None:
    async with served("anthropic") as (server, runtime):
        server.script("A frame.", "A carrier.", "A wire.", "Lengthwise threads.")
        result = await run_example("anthropic", server, runtime, load_workflow(FLOW))
        sent = bodies(server)
    assert result.status.value == "success", result.error
    for body in sent[:3]:
        assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
        assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert isinstance(sent[3]["system"], str)  # no cache: auto, no marks
    one, two, three = (result.steps[s].usage for s in ("one", "two", "three"))
    assert one is not None and one.cache_write_tokens and not one.cache_read_tokens
    # The second step shares the system prompt: it reads what the first wrote.
    assert two is not None and two.cache_read_tokens and two.cache_read_tokens >= 300
    assert three is not None and three.cache_read_tokens
