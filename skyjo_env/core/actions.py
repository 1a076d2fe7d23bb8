"""The fixed action table and the decision phases.

With ``S = rows * cols`` grid slots (slot ``s`` is row ``s // cols``, column ``s % cols``),
action ids are laid out as:

========================  ==================  ==========================================
ids                       kind                meaning
========================  ==================  ==========================================
``0 .. S-1``              ``REVEAL``          turn face-down slot ``s`` face up
``S``                     ``DRAW``            draw the top card of the draw pile
``S+1``                   ``TAKE_DISCARD``    take the top card of the discard pile
``S+2 .. 2S+1``           ``PLACE``           swap the held card into slot ``s``
``2S+2``                  ``DISCARD_DRAWN``   discard the drawn card (then reveal)
========================  ==================  ==========================================

The official 3x4 grid has 27 actions. Which of them are legal depends on the phase; the
only source of legality is `skyjo_env.core.engine.legal_action_mask`.
"""

from __future__ import annotations

from enum import IntEnum


class Phase(IntEnum):
    """The decision the current player faces."""

    INITIAL_REVEAL = 0
    """Turn one face-down card up at the start of a round (``choice`` mode)."""
    CHOOSE_SOURCE = 1
    """Draw from the draw pile or take the discard top."""
    PLACE_DRAWN = 2
    """Swap the drawn card into a slot, or discard it."""
    PLACE_DISCARD = 3
    """Swap the taken discard card into a slot (putting it back is illegal)."""
    REVEAL_AFTER_DISCARD = 4
    """Turn one face-down card up after discarding the drawn card."""
    GAME_OVER = 5
    """The game has ended (or was truncated); no action is legal."""


class ActionKind(IntEnum):
    """What an action does; see the module docstring for the id layout."""

    REVEAL = 0
    DRAW = 1
    TAKE_DISCARD = 2
    PLACE = 3
    DISCARD_DRAWN = 4


#: Passed for a game in a batch step to leave that game untouched.
NO_ACTION = -1


def num_actions(num_slots: int) -> int:
    """Size of the action space for grids of ``num_slots`` slots (27 for 3x4)."""
    return 2 * num_slots + 3


def action_id(kind: ActionKind, slot: int | None, num_slots: int) -> int:
    """The id of an action.

    Args:
        kind: The action kind.
        slot: The grid slot for ``REVEAL`` and ``PLACE``; must be None for the others.
        num_slots: Slots in a grid (rows * cols).

    Raises:
        ValueError: A slot is missing, out of range, or given for a kind without one.
    """
    kind = ActionKind(kind)
    needs_slot = kind in (ActionKind.REVEAL, ActionKind.PLACE)
    if needs_slot and (slot is None or not 0 <= slot < num_slots):
        raise ValueError(f"{kind.name} needs a slot in 0..{num_slots - 1}, got {slot!r}")
    if not needs_slot and slot is not None:
        raise ValueError(f"{kind.name} takes no slot, got {slot!r}")
    if kind == ActionKind.REVEAL:
        return slot
    if kind == ActionKind.DRAW:
        return num_slots
    if kind == ActionKind.TAKE_DISCARD:
        return num_slots + 1
    if kind == ActionKind.PLACE:
        return num_slots + 2 + slot
    return 2 * num_slots + 2


def decode_action(action: int, num_slots: int) -> tuple[ActionKind, int | None]:
    """``(kind, slot)`` of an action id (slot is None for kinds without one).

    Raises:
        ValueError: The id is outside ``0 .. 2S+2``.
    """
    if not 0 <= int(action) < num_actions(num_slots):
        raise ValueError(
            f"action {action!r} is out of range: ids are 0..{num_actions(num_slots) - 1} "
            f"for {num_slots}-slot grids"
        )
    action = int(action)
    if action < num_slots:
        return ActionKind.REVEAL, action
    if action == num_slots:
        return ActionKind.DRAW, None
    if action == num_slots + 1:
        return ActionKind.TAKE_DISCARD, None
    if action < 2 * num_slots + 2:
        return ActionKind.PLACE, action - num_slots - 2
    return ActionKind.DISCARD_DRAWN, None


def describe_action(action: int, num_slots: int = 12, cols: int = 4) -> str:
    """A short human-readable name, e.g. ``"PLACE slot 5 (row 1, col 1)"``.

    Args:
        action: The action id.
        num_slots: Slots in a grid (rows * cols); the official 12 by default.
        cols: Grid columns, used to name the row and column of a slot.
    """
    kind, slot = decode_action(action, num_slots)
    if slot is None:
        return f"{kind.name} (action {action})"
    return f"{kind.name} slot {slot} (row {slot // cols}, col {slot % cols}; action {action})"


def action_table(num_slots: int = 12, cols: int = 4) -> list[tuple[int, str, int | None, str]]:
    """Every action as ``(id, kind name, slot, description)``, for docs and logs."""
    table = []
    for action in range(num_actions(num_slots)):
        kind, slot = decode_action(action, num_slots)
        table.append((action, kind.name, slot, describe_action(action, num_slots, cols)))
    return table
