"""A step's model name is chosen once, by one precedence: the step's own (an agent step's:
its agent's), its profile's, then `config.model` (which `--model` replaces)."""

from __future__ import annotations

from agentloom.workflow import load_workflow_text

FLOW = """
name: models
config: {model: cfg-model}
profiles:
  fast: {model: profile-model}
agents:
  writer: {model: agent-model, instructions: hi}
  plain: {instructions: hi}
  profiled: {profile: fast, instructions: hi}
steps:
  - {id: own, type: llm_call, model: step-model, profile: fast, prompt: hi}
  - {id: by_profile, type: llm_call, profile: fast, prompt: hi}
  - {id: by_config, type: llm_call, prompt: hi}
  - {id: agent_own, type: agent, agent: writer, prompt: hi}
  - {id: agent_profile, type: agent, agent: profiled, prompt: hi}
  - {id: agent_config, type: agent, agent: plain, prompt: hi}
"""


def test_each_step_gets_its_model_by_one_precedence() -> None:
    wf = load_workflow_text(FLOW)
    assert wf.models == {
        "own": "step-model", "by_profile": "profile-model", "by_config": "cfg-model",
        "agent_own": "agent-model", "agent_profile": "profile-model",
        "agent_config": "cfg-model",
    }


def test_an_override_of_the_default_is_chosen_again_and_steps_keep_their_own() -> None:
    wf = load_workflow_text(FLOW).with_overrides(model="cli-model")
    assert wf.models["by_config"] == "cli-model"
    assert wf.models["agent_config"] == "cli-model"
    assert wf.models["own"] == "step-model" and wf.models["by_profile"] == "profile-model"


def test_no_model_anywhere_leaves_it_to_the_runtime() -> None:
    wf = load_workflow_text("name: x\nsteps:\n  - {id: a, type: llm_call, prompt: hi}\n")
    assert wf.models == {"a": None}
