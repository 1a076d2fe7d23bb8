"""PPO agents: checkpoints, the policy adapter, grid features, imitation, shaping, the
opponent pool and the self-play training loop.

`load_ppo_agent` is exported here because the agent registry loads ``ppo:PATH`` specs
through ``agents.ppo`` (torch and SB3 load only when a checkpoint does).
"""

from agents.ppo.checkpoint import CheckpointError
from agents.ppo.policy import PPOAgent, load_ppo_agent

__all__ = ["CheckpointError", "PPOAgent", "load_ppo_agent"]
