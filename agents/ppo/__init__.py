"""The PPO network agent: checkpoints (`checkpoint`), the policy adapter (`policy`), fast
inference (`inference`), the network's description (`architecture`) and its grid features
(`features`). Training them is `agents.training`'s, which this package never imports.

`load_ppo_agent` is exported here because the agent registry loads ``ppo:PATH`` specs
through ``agents.ppo`` (torch and SB3 load only when a checkpoint does).
"""

from agents.ppo.checkpoint import CheckpointError
from agents.ppo.policy import PPOAgent, load_ppo_agent

__all__ = ["CheckpointError", "PPOAgent", "load_ppo_agent"]
