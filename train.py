"""Train a Skyjo agent: ``python train.py [--config configs/strong_2p.yaml] [--run-dir DIR]``.

A thin entry point over `agents.cli.train.main`; see ``python train.py --help``.
"""

import sys

from agents.cli.train import main

if __name__ == "__main__":
    sys.exit(main())
