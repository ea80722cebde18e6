"""Play one whole match of classic Spades through the embedded engine.

Each seat bids the aces and kings it holds (at least 1) and plays a legal card
picked by a seeded RNG, so every run prints the same match.
"""

from __future__ import annotations

import random

from spades_engine import Action, Bid, IllegalAction, Match, Phase, card_name, preset
from spades_engine.events import Event, HandScored, MatchEnded
from spades_engine.record import record_of, replay

SEED = 2024
MAX_HANDS = 200  # a safety bound: classic matches end long before it
TEAMS = ("A", "B")  # side 0 = seats 0 and 2, side 1 = seats 1 and 3


def choose(match: Match, seat: int, rng: random.Random) -> Action:
    view = match.view(seat)  # what this seat may know: its own cards, public facts
    if view.phase is Phase.BIDDING and view.hand is not None:
        honours = sum(1 for c in view.hand if card_name(c)[0] in "AK")
        return Bid(max(1, honours))
    return rng.choice(view.legal_actions)


def deliver(match: Match, events: list[Event], inbox: list[list[Event]]) -> None:
    """Route each event to the seats allowed to see it (a server would send them)."""
    for event in events:
        for seat, box in enumerate(inbox):
            if event.audience.visible_to(seat, match.state.team_of(seat)):
                box.append(event)


def main() -> None:
    match = Match(preset("classic"), seed=SEED)
    rng = random.Random(SEED)

    # A refused action raises IllegalAction with a stable reason; nothing changes.
    other = (match.to_act + 1) % match.rules.players
    try:
        match.apply(other, Bid(3))
    except IllegalAction as e:
        print(f"seat {other} bidding out of turn is refused: {e.reason.value}")

    inbox: list[list[Event]] = [[] for _ in range(match.rules.players)]
    deliver(match, match.opening_events, inbox)  # the first deal
    while not match.is_over and match.hand_number < MAX_HANDS:
        seat = match.to_act  # classic has no blind nil exchange, so one seat acts
        events = match.apply(seat, choose(match, seat, rng))
        deliver(match, events, inbox)
        for event in events:
            if isinstance(event, HandScored):
                sides = " | ".join(
                    f"{TEAMS[r.side]}: bid {r.contract:2} took {r.tricks:2} "
                    f"{r.hand_points:+4d} = {r.score:4}"
                    for r in event.sides
                )
                print(f"hand {event.hand_number + 1:2} | {sides}")
                # Persist and resume: a snapshot restores the match exactly.
                match = Match.from_snapshot(match.to_snapshot())
            elif isinstance(event, MatchEnded):
                print(
                    f"winner: team {TEAMS[event.winner]} with {event.scores[event.winner]} points"
                )

    if not match.is_over:
        raise SystemExit(f"no winner after {MAX_HANDS} hands")
    # The game record replays to the identical state.
    assert replay(record_of(match)).to_snapshot() == match.to_snapshot()
    print(f"{len(match.actions)} actions; events per seat: {[len(b) for b in inbox]}")


if __name__ == "__main__":
    main()
