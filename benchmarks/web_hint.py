"""Time skyjo-web's hint endpoint with the default search, on one core.

    taskset -c 0 python benchmarks/web_hint.py [--repeats 5] [--players 2]

Starts the app in process (the framework's test client, no network), plays games against
the default network to decisions of each kind (draw or take the discard: 2 moves; place a
drawn card: up to 13), and times ``POST /api/games/{id}/hint`` there. Prints the median
and the slowest time of each kind, and how many sampled deals each hint searched (128
means the search finished before its time cap). The first hint of a process also loads
the network and compiles the rollout kernels; it is timed apart ("warm-up").
"""

from __future__ import annotations

import argparse
import statistics
import time

from fastapi.testclient import TestClient

from agents.web.server import WebSettings, create_app


def _decisions(client, players: int, seeds: range):
    """(game id, phase) at decisions of the person, over a few games."""
    for seed in seeds:
        view = client.post("/api/games", json={"players": players, "seed": seed}).json()
        moves = 0
        while not view["over"] and moves < 60:
            if view["phase"] in ("choose_source", "place_drawn"):
                yield view["id"], view["phase"]
            kinds = {entry["kind"]: entry["action"] for entry in view["legal"]}
            # draw (so that a drawn card comes next), else swap into a slot / turn one up
            action = kinds.get("draw", kinds.get("place", view["legal"][0]["action"]))
            view = client.post(f"/api/games/{view['id']}/moves", json={"action": action}).json()
            moves += 1
        client.delete(f"/api/games/{view['id']}")


def main(argv=None) -> None:
    """Run the benchmark and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="hints per kind (default 5)")
    parser.add_argument("--players", type=int, default=2, help="table size (default 2)")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    times: dict[str, list[float]] = {"choose_source": [], "place_drawn": []}
    samples: dict[str, list[int]] = {"choose_source": [], "place_drawn": []}
    with TestClient(create_app(WebSettings(max_games=4))) as client:
        warm_up = None
        for game_id, phase in _decisions(client, args.players, range(100)):
            if len(times[phase]) >= args.repeats:
                if all(len(t) >= args.repeats for t in times.values()):
                    break
                continue
            started = time.perf_counter()
            hint = client.post(f"/api/games/{game_id}/hint").json()
            elapsed = time.perf_counter() - started
            if warm_up is None:
                warm_up = elapsed
                continue
            times[phase].append(elapsed)
            samples[phase].append(hint["samples"])
    print(f"web hint, {args.players} players, default search over "
          f"{hint['base']}, torch threads 1")
    print(f"warm-up (network load, kernel compilation): {warm_up * 1000:.0f} ms")
    for phase, found in times.items():
        print(f"{phase:14s} median {statistics.median(found) * 1000:6.0f} ms, slowest "
              f"{max(found) * 1000:6.0f} ms over {len(found)} hints; samples searched: "
              f"{sorted(set(samples[phase]))}")


if __name__ == "__main__":
    main()
