"""Suite-wide settings.

torch defaults to one intra-op thread per core; on the 2 shared cores of CI, two threads
fight whatever else runs and small networks slow down about tenfold (measured: an expert
iteration step took 31.6 s with 2 threads under load, 2.8 s with 1). Training sets its own
``torch_threads``; tests that call policies directly get the same default as training.
"""

from __future__ import annotations

import importlib.util

import pytest


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    if importlib.util.find_spec("torch") is not None:
        import torch

        torch.set_num_threads(1)
    yield
