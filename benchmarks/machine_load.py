"""The machine's load average as one line, for benchmark reports (shared machines are noisy)."""

from __future__ import annotations

import os


def load_average() -> str:
    """``"1.00 / 2.00 / 3.00 (1 / 5 / 15 min)"``, or ``"unavailable"`` where the OS has none."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "unavailable"
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min)"
