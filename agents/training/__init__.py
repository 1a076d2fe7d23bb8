"""Self-play PPO training: the config (`config`), one start checked once (`start`), the
trainer loop (`trainer`) and its parts (`warm_start`, `callbacks`, `evaluator`,
`expert_step`, `run_state`), the opponent pool (`pool`), the seeds of a run's parts
(`seeds`), the imitation warm start's data and cloning (`imitation`), expert iteration's
search games and fitting (`expert`) and the reward shaping (`shaping`).

Training uses the network agent (`agents.ppo`), the registry, evaluation and search; none
of those imports this package. Importing `trainer` loads neither torch nor Ray: training does.
"""
