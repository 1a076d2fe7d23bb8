"""``skyjo-play``: a person plays Skyjo in the terminal against chosen agents.

    skyjo-play --opponents ev                 # you against the ev heuristic
    skyjo-play --opponents ppo:models/ppo_2p.zip greedy --seat 1

Each of your decisions shows the table (the ansi rendering) and a numbered menu of the
legal actions; type the number, or a slot as ``row,col`` where a slot is asked for.
Anything else is answered with a hint and asked again.

Exit status: 0 when the game ends or you quit (``q`` or Ctrl-D / end of input, answered
"Bye."), 130 on Ctrl-C ("Interrupted.", the shell's convention for SIGINT), 2 for a bad
argument (unknown opponent spec, rules, seat or a negative seed) and 1 when an opponent
agent fails (its ``act`` raises or returns an illegal action); errors are one line on
stderr naming the input or the agent, never a traceback. A game stopped by the turn cap
(``max_turns_per_round``) is reported as truncated, with no winner.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import numpy as np

from agents.cli import EXIT_INTERRUPTED, quiet_on_closed_stdout
from agents.evaluation.games import AgentActionError, act_checked, agent_label, agent_seed
from agents.registry import make_agent
from skyjo_env.core import (
    ActionKind,
    Phase,
    SkyjoRules,
    decode_action,
    layout,
    legal_action_mask,
    load_rules,
    new_batch,
    reset,
    step,
    winners,
)
from skyjo_env.encoding import ObservationEncoder
from skyjo_env.render import render_ansi

PROG = "skyjo-play"
EXIT_USAGE = 2
EXIT_RUNTIME = 1


class QuitGame(Exception):
    """The player asked to stop."""


def menu_entries(state, rules: SkyjoRules) -> list[tuple[int, str]]:
    """``(action id, text)`` for every legal action of game 0, in id order."""
    mask = legal_action_mask(state)[0]
    discard_top = int(state.discard_pile_of(0)[-1]) if state.discard_pile_of(0).size else None
    entries = []
    for action in np.flatnonzero(mask):
        kind, slot = decode_action(int(action), rules.num_slots)
        where = "" if slot is None else f" at row {slot // rules.cols + 1}, col {slot % rules.cols + 1}"
        text = {
            ActionKind.REVEAL: f"turn up the card{where}",
            ActionKind.DRAW: "draw from the draw pile",
            ActionKind.TAKE_DISCARD: f"take the discard top ({discard_top})",
            ActionKind.PLACE: f"swap your card into the slot{where}",
            ActionKind.DISCARD_DRAWN: "discard the drawn card (then turn a card up)",
        }[kind]
        entries.append((int(action), text))
    return entries


#: Longest answer read at the prompt (a menu number or ``row,col`` takes a few characters).
MAX_ANSWER_LENGTH = 40

#: Most digits a number at the prompt may have (a menu holds fewer than 1,000 entries).
_MAX_DIGITS = 4


def _is_number(text: str) -> bool:
    """Plain ASCII digits, few enough for `int`: ``"²"`` and other Unicode digits pass
    `str.isdigit` but not `int`, and `int` refuses thousands of digits."""
    return text.isascii() and text.isdigit() and len(text) <= _MAX_DIGITS


def parse_choice(text: str, entries: list[tuple[int, str]], rules: SkyjoRules) -> int | None:
    """The action picked by ``text`` (a menu number or ``row,col``), or None if unclear
    (anything else, a Unicode digit or a huge number included)."""
    text = text.strip().lower()
    if len(text) > MAX_ANSWER_LENGTH:
        return None
    if _is_number(text) and 1 <= int(text) <= len(entries):
        return entries[int(text) - 1][0]
    parts = text.replace(" ", ",").split(",")
    parts = [p for p in parts if p]
    if len(parts) == 2 and all(_is_number(p) for p in parts):
        row, col = int(parts[0]) - 1, int(parts[1]) - 1
        if 0 <= row < rules.rows and 0 <= col < rules.cols:
            slot = row * rules.cols + col
            for action, _ in entries:
                if decode_action(action, rules.num_slots)[1] == slot:
                    return action
    return None


def ask_action(state, rules: SkyjoRules, read: Callable[[str], str], write) -> int:
    """Show the table and menu, read until a legal choice; raises QuitGame on q / EOF."""
    write(render_ansi(state, 0))
    entries = menu_entries(state, rules)
    write(f"Your move ({Phase(int(state.phase[0])).name.replace('_', ' ').lower()}):")
    for number, (_, text) in enumerate(entries, start=1):
        write(f"  {number}) {text}")
    while True:
        try:
            answer = read("> ")
        except EOFError:
            raise QuitGame from None
        except UnicodeDecodeError:  # bytes the terminal's encoding cannot read
            answer = ""
        if answer.strip().lower() in ("q", "quit", "exit"):
            raise QuitGame
        choice = parse_choice(answer, entries, rules)
        if choice is not None:
            return choice
        write(
            f"Hint: type a number from 1 to {len(entries)}"
            + (", or a slot as row,col (e.g. 2,3)" if rules.num_slots > 1 else "")
            + "; q quits."
        )


def play_game(rules: SkyjoRules, agents: dict, human_seat: int, seed: int,
              read: Callable[[str], str] = input, write=print,
              specs: dict | None = None) -> list[int]:
    """Play one game with a person at ``human_seat``; returns the final totals.

    Args:
        rules: The rules.
        agents: seat -> agent for every other seat.
        human_seat: The person's seat.
        seed: Deal seed (non-negative int).
        read: Reads one answer (like `input`).
        write: Shows one line (like `print`).
        specs: seat -> spec of each agent, for error messages.

    Raises:
        QuitGame: The person quit. AgentActionError: an agent's ``act`` raised or chose an
        illegal action (the message names it).
    """
    state = new_batch(rules, 1)
    reset(state, [seed])
    encoder = ObservationEncoder(rules)
    only_game = np.zeros(1, np.int64)
    while not state.all_over:
        seat = int(state.current_player[0])
        if seat == human_seat:
            action = ask_action(state, rules, read, write)
        else:
            agent = agents[seat]
            label = agent_label(agent.name, (specs or {}).get(seat))
            observation = encoder.encode(state, [seat])
            mask = legal_action_mask(state)
            action = int(act_checked(agent, f"{label} at seat {seat}", observation, mask,
                                     only_game, state)[0])
        events = step(state, np.array([action]))
        if events[0] & layout.EVENT_ROUND_ENDED:
            scores = state.seat[0, :, layout.ROUND_SCORE].tolist()
            totals = state.seat[0, :, layout.TOTAL].tolist()
            write(f"Round over. Round scores {scores}, totals {totals}.")
    totals = state.seat[0, :, layout.TOTAL].tolist()
    if state.truncated[0]:
        write(
            f"Game over: truncated by the turn cap ({rules.max_turns_per_round} turns in a "
            f"round); the round is not scored and nobody wins. Totals {totals}."
        )
        return totals
    best = winners(state, 0)
    outcome = "You win!" if best == [human_seat] else (
        "Shared win!" if human_seat in best else f"Seat(s) {best} win."
    )
    write(f"Game over. Totals {totals}. {outcome}")
    return totals


def build_parser() -> argparse.ArgumentParser:
    """The argument parser."""
    parser = argparse.ArgumentParser(prog="skyjo-play", description=__doc__.split("\n")[0])
    parser.add_argument("--opponents", nargs="+", default=["ev"],
                        help="agent specs for the other seats (default: ev); ppo:best is "
                        "the strongest shipped network for the table size, search:ppo:best "
                        "the search over it")
    parser.add_argument("--seat", type=int, default=0, help="your seat (default 0)")
    parser.add_argument("--rules", default="official", help="rules preset or YAML path")
    parser.add_argument("--seed", type=int, default=None,
                        help="deal seed, a non-negative int (default: random)")
    return parser


def _fail(message: str, status: int) -> int:
    print(f"{PROG}: error: {' '.join(str(message).split())}", file=sys.stderr)
    return status


@quiet_on_closed_stdout
def main(argv: list[str] | None = None, read: Callable[[str], str] = input, write=print) -> int:
    """Run the command line; returns the exit code (see the module docstring)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:  # argparse has printed its message already
        return int(exit_.code or 0)
    players = len(args.opponents) + 1  # the rules check below decides how many the deck allows
    if args.seed is not None and args.seed < 0:
        return _fail(f"--seed must be >= 0, got {args.seed}", EXIT_USAGE)
    try:
        rules = load_rules(args.rules, num_players=players)
    except (ValueError, TypeError, OSError) as error:
        return _fail(f"--rules {args.rules!r}: {error}", EXIT_USAGE)
    if not 0 <= args.seat < players:
        return _fail(f"--seat must be in 0..{players - 1}, got {args.seat}", EXIT_USAGE)
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy % 2**32)
    opponent_seats = [s for s in range(players) if s != args.seat]
    specs = dict(zip(opponent_seats, args.opponents, strict=True))
    try:
        # each agent's generator spawned from the deal seed, as evaluate.py does
        agents = {seat: make_agent(spec, rules, seed=agent_seed(seed, seat))
                  for seat, spec in specs.items()}
    except ValueError as error:  # AgentSpecError, or a bad value the agent rejected
        return _fail(str(error), EXIT_USAGE)
    write(f"Skyjo, {players} players; you are seat {args.seat}. Deal seed {seed}.")
    try:
        play_game(rules, agents, args.seat, seed, read, write, specs=specs)
    except QuitGame:
        write("Bye.")
    except KeyboardInterrupt:
        write("Interrupted.")
        return EXIT_INTERRUPTED
    except AgentActionError as error:
        return _fail(str(error), EXIT_RUNTIME)
    return 0


if __name__ == "__main__":
    sys.exit(main())
