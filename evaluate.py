"""Evaluate agents against each other: ``python evaluate.py --agents ev greedy --games 1000``.

A thin wrapper over `agents.evaluate_cli.main`; see ``--help``.
"""

import sys

from agents.evaluate_cli import main

if __name__ == "__main__":
    sys.exit(main())
