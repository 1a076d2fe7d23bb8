"""Rule-based baselines: the compiled `greedy` and `ev` heuristics (`random` lives in
`skyjo_env.protocol`, since the envs use it as their default opponent)."""
