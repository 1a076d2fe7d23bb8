"""Rule-based baselines: the compiled `greedy` and `ev` heuristics (`random` lives in
`skyjo_env.protocol`, since the envs use it as their default opponent).

``greedy.py`` and ``ev.py`` hold one rule each, ``common.py`` what they share (decoding,
legal choices, the agent shell); ``heuristics.py`` re-exports the agents.
"""
