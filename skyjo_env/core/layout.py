"""Index constants for the engine's state arrays (struct of arrays over a batch of games).

The compiled kernels read these as compile-time constants. Card values never double as
markers: a slot's visibility lives in ``slot_state`` beside the ``grid`` of values.
"""

# slot_state values
HIDDEN = 0
FACE_UP = 1
CLEARED = 2

# game[b, FIELD]: per-game scalars, int32
PHASE = 0
CURRENT = 1  # seat to act
HELD = 2  # the held card's value (meaningful in PLACE_DRAWN / PLACE_DISCARD only)
FINISHER = 3  # seat that ended this round, -1 while none
ROUND = 4  # rounds completed so far (0 during the first round)
TURN = 5  # completed turns in this round
REVEALS_DONE = 6  # initial-reveal decisions made this round (choice mode)
DRAW_SIZE = 7
DISCARD_SIZE = 8
STARTER = 9  # seat that starts (started) this round's turns
PREV_FINISHER = 10  # finisher of the previous round, -1 if none
TRUNCATED = 11  # 1 if the game ended by hitting max_turns_per_round
DECISIONS = 12  # decisions taken in this game
NUM_GAME_FIELDS = 13

# seat[b, p, FIELD]: per-seat counters, int32
TOTAL = 0  # total score so far
ROUND_SCORE = 1  # score of the last completed round, penalty included
RAW_SCORE = 2  # raw score of the last completed round
ROUNDS_FINISHED = 3  # rounds this seat ended (was the finisher)
TIMES_PENALISED = 4  # rounds in which this seat's finisher score was penalised
LINES_ELIMINATED = 5  # columns and rows this seat eliminated (final reveals included)
NUM_SEAT_FIELDS = 6

# params[FIELD]: the rules as int64, built by engine.rules_params
P_PLAYERS = 0
P_ROWS = 1
P_COLS = 2
P_SLOTS = 3
P_DECK_SIZE = 4
P_INITIAL_REVEALS = 5
P_REVEAL_RANDOM = 6
P_NEXT_STARTER_PREVIOUS = 7
P_COLUMN_ELIMINATION = 8
P_ROW_ELIMINATION = 9
P_RESHUFFLE_ALL = 10
P_FINAL_REVEAL_ELIMINATION = 11
P_PENALTY_MODE = 12  # index into rules.FINISHER_PENALTY_MODES
P_MULTIPLIER = 13
P_FLAT = 14
P_CONDITION_LT = 15
P_ONLY_IF_POSITIVE = 16
P_TARGET = 17
P_MAX_ROUNDS = 18  # rules_params fills in rules.MAX_ROUNDS for None; 0 = no cap
P_MAX_TURNS = 19  # rules_params fills in rules.MAX_TURNS_PER_ROUND for None; 0 = no cap
NUM_PARAMS = 20

# penalty modes, in rules.FINISHER_PENALTY_MODES order
PENALTY_MULTIPLIER = 0
PENALTY_FLAT = 1
PENALTY_FLAT_THEN_MULTIPLIER = 2
PENALTY_MULTIPLIER_THEN_FLAT = 3
PENALTY_NONE = 4

# events[b] bits returned by a step
EVENT_ROUND_ENDED = 1
EVENT_GAME_ENDED = 2
EVENT_TRUNCATED = 4
