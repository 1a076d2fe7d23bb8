"""Fixtures shared by the agent tests."""

from __future__ import annotations

import signal

import pytest


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray (2 CPUs, about 4 s to start) for the whole test file; the caller's
    SIGTERM handler kept (Ray installs its own)."""
    ray = pytest.importorskip("ray")
    previous = signal.getsignal(signal.SIGTERM)
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    signal.signal(signal.SIGTERM, previous)
    yield ray
    ray.shutdown()
