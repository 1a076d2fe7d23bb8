"""Hyperparameter sweeps: Optuna over `TrainConfig` fields, trials on Ray workers.

`agents.sweep.space` reads a space file (no optuna import); `agents.sweep.runner` runs the
study (imports optuna; ray only with more than one worker). ``skyjo-sweep`` is the
command line (`agents.cli.sweep`). Training alone never imports this package.
"""
