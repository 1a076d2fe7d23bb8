"""Writing small ``--games-csv`` files for the pairing tests (imported by basename from
any test folder: pytest puts ``tests/``, the folder of the suite's conftest, on
``sys.path``)."""

from __future__ import annotations

from pathlib import Path

HEADER = ("seed,game,deal,rotation,rounds,truncated,agent_0_total,agent_0_win_share,"
          "agent_1_total,agent_1_win_share")


def games_csv(path: Path, seed: int, rows: list[tuple[int, int, float]]) -> Path:
    """Write a --games-csv file of two agents to ``path`` and return ``path``.

    Args:
        path: The file to write.
        seed: The master seed written on every row.
        rows: One ``(deal, rotation, agent 0's win share)`` per game, in game order.
            Agent 0's total is 50 where its share is above 0 and 90 where it is 0;
            agent 1's is the other.
    """
    lines = [HEADER] + [
        f"{seed},{g},{deal},{rotation},3,0,{50 if share else 90},{share},"
        f"{90 if share else 50},{1 - share}"
        for g, (deal, rotation, share) in enumerate(rows)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path
