"""Evaluate agents against each other: ``python evaluate.py --agents ev greedy --games 1000``.

A thin wrapper over `agents.cli.evaluate.main`; see ``--help``.
"""

import sys

from agents.cli.evaluate import main

if __name__ == "__main__":
    sys.exit(main())
