"""A player's Spades record, counted from the hands of their finished matches.

What a profile shows besides ratings (issue 26): contracts made and set,
bids and tricks, bags, nils and blind nils bid and made. Counted per seat
from a match's public ``HandScored`` events, and summed over matches; the
shares and means are worked out when shown, so that sums stay exact.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields

from .gen.spades.v1 import lobby_pb2 as lpb
from .gen.spades.v1 import spades_pb2 as pb


@dataclass(slots=True)
class Record:
    matches: int = 0
    wins: int = 0
    hands: int = 0
    contracts: int = 0  # hands the seat's side bid above nil
    contracts_made: int = 0
    sets: int = 0
    bids: int = 0  # the seat's bids, summed (nil: 0)
    tricks: int = 0  # the seat's tricks, summed
    bags: int = 0  # the side's bags, summed over its hands
    nils_bid: int = 0
    nils_made: int = 0
    blind_nils_bid: int = 0
    blind_nils_made: int = 0

    def add(self, other: Record) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def to_json(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, int] | None) -> Record:
        known = {f.name for f in fields(cls)}
        return cls(**{k: int(v) for k, v in (d or {}).items() if k in known})

    def to_pb(self) -> lpb.PlayerStats:
        hands = self.hands or 1  # the means of no hand are 0
        return lpb.PlayerStats(
            matches=self.matches,
            wins=self.wins,
            hands=self.hands,
            contracts=self.contracts,
            contracts_made=self.contracts_made,
            sets=self.sets,
            contracts_made_share=self.contracts_made / self.contracts if self.contracts else 0.0,
            mean_bid=self.bids / hands,
            mean_tricks=self.tricks / hands,
            bags=self.bags,
            bags_per_hand=self.bags / hands,
            nils_bid=self.nils_bid,
            nils_made=self.nils_made,
            blind_nils_bid=self.blind_nils_bid,
            blind_nils_made=self.blind_nils_made,
        )


def side_of(seat: int, partnerships: bool) -> int:
    """A seat's side as HandScored and MatchEnded number them."""
    return seat % 2 if partnerships else seat


def seat_records(
    hands: Iterable[pb.HandScored], seats: int, partnerships: bool, winners: Iterable[int]
) -> list[Record]:
    """Each seat's record of one finished match: its hands, and a match won
    when the seat's side is among ``winners``."""
    won = set(winners)
    records = [Record(matches=1, wins=int(side_of(s, partnerships) in won)) for s in range(seats)]
    for hand in hands:
        by_side = {side.side: side for side in hand.sides}
        for seat, r in enumerate(records):
            _count_hand(r, hand, seat, by_side.get(side_of(seat, partnerships)))
    return records


def _count_hand(r: Record, hand: pb.HandScored, seat: int, side: pb.SideScore | None) -> None:
    r.hands += 1
    bid = hand.bids[seat] if seat < len(hand.bids) else 0
    tricks = hand.tricks[seat] if seat < len(hand.tricks) else 0
    blind = seat < len(hand.blind) and hand.blind[seat]
    r.bids += bid
    r.tricks += tricks
    if bid == 0 and blind:
        r.blind_nils_bid += 1
        r.blind_nils_made += tricks == 0
    elif bid == 0:
        r.nils_bid += 1
        r.nils_made += tricks == 0
    if side is None:
        return
    r.bags += side.bags_taken
    if side.contract > 0:
        r.contracts += 1
        # The contract's points say whether the rules counted it made; 0 points
        # (a variant without a set penalty) falls back to the tricks.
        made = side.contract_points > 0 or (
            side.contract_points == 0 and side.tricks >= side.contract
        )
        r.contracts_made += made
        r.sets += not made
