"""``Match``: the public entry point of the engine.

It routes an action to the handler of the current phase and keeps the list
of applied actions (the game record).  The rules themselves live in the
bidding, exchange, play, hand and scoring modules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from .actions import (
    BIDS,
    PLAYS,
    Action,
    Bid,
    BlindNil,
    Draw,
    ExchangeDecision,
    Look,
    NameTrump,
    PassCards,
    Play,
)
from .bidding import apply_bid, apply_blind_nil, apply_look, legal_bidding_actions
from .deck import check_dealer, check_seed, deal_masks, first_dealer
from .draw import apply_draw, legal_draw_actions
from .errors import IllegalAction, Reason, show
from .events import Event
from .exchange import (
    apply_decision,
    apply_pass,
    exchange_done,
    exchange_seats,
    legal_exchange_actions,
    open_exchange,
)
from .hand import deal_hand, finish_hand
from .play import begin_play, legal_play_actions, play_card
from .ruleset import Ruleset, RulesetError
from .state import HandState, MatchState, Phase
from .trump import apply_name_trump, legal_trump_actions, open_naming
from .view import SeatView, make_view

# Enum members are slow to look up on Python 3.11 (about 0.1 us each), and
# legal_actions/apply run once per action: the hot paths use these aliases
# (Final: compiled by mypyc, C statics rather than module dict lookups).
_BIDDING: Final = Phase.BIDDING
_EXCHANGE: Final = Phase.EXCHANGE
_PLAYING: Final = Phase.PLAYING
_DRAW: Final = Phase.DRAW
_MATCH_OVER: Final = Phase.MATCH_OVER

_PHASE_NAMES: Final = {
    Bid: (Phase.BIDDING,),
    BlindNil: (Phase.BIDDING,),
    Look: (Phase.BIDDING,),
    PassCards: (Phase.EXCHANGE,),
    ExchangeDecision: (Phase.EXCHANGE,),
    # refused with TRUMP_ALREADY_NAMED rather than WRONG_PHASE once named
    NameTrump: (Phase.BIDDING, Phase.EXCHANGE, Phase.PLAYING),
    Draw: (Phase.DRAW,),
    Play: (Phase.PLAYING,),
}


class Match:
    """One match, from the first deal to the match result.

    >>> m = Match(Ruleset(), seed=7)
    >>> seat = m.to_act
    >>> events = m.apply(seat, m.legal_actions(seat)[0])
    """

    # The public methods type what a caller may pass wrongly as ``object``: so
    # that compiled by mypyc they get it as it is and refuse it with the
    # engine's own error, as they do uncompiled (a parameter typed ``int``
    # would refuse a str with a TypeError first, and take True for 1).
    def __init__(
        self,
        rules: object = None,
        *,
        seed: object = 0,
        deals: Sequence[Sequence[Sequence[int]]] = (),
        dealer: object = None,
    ) -> None:
        """Start a match; the first hand is dealt at once (see ``opening_events``).

        ``deals`` are explicit hands (card indices by seat) for the first hands,
        so a deal from elsewhere can be replayed; later hands come from ``seed``,
        an ``int`` below 2**256 in absolute value (its low 64 bits decide the
        deals).  ``dealer`` is the first dealer, drawn from the seed when not given.

        Raises ``RulesetError`` when ``rules`` is not a ``Ruleset``, and
        ``DealError`` for a bad seed, deal or dealer.  A two-player match has no
        deal (its hands come from drawing the seed's stock), so ``deals`` must be
        empty for it.
        """
        if rules is None:
            r = Ruleset()
        elif isinstance(rules, Ruleset):
            r = rules
        else:
            raise RulesetError(
                f"rules must be a Ruleset (e.g. preset('classic')), not {type(rules).__name__}", ()
            )
        seed = check_seed(seed)
        masks = deal_masks(r, deals)
        dealer = first_dealer(seed, r.players) if dealer is None else check_dealer(r, dealer)
        self._st = MatchState(
            rules=r,
            seed=seed,
            deals=masks,
            first_dealer=dealer,
            phase=Phase.BIDDING,
            hand=_EMPTY_HAND,
            scores=[0] * r.sides,
            bags=[0] * r.sides,
        )
        self.actions: list[tuple[int, Action]] = []
        self.opening_events: list[Event] = deal_hand(self._st, 0, dealer)

    # -- reading ---------------------------------------------------------------
    @property
    def rules(self) -> Ruleset:
        return self._st.rules

    @property
    def seed(self) -> int:
        return self._st.seed

    @property
    def phase(self) -> Phase:
        return self._st.phase

    @property
    def is_over(self) -> bool:
        return self._st.phase is Phase.MATCH_OVER

    @property
    def to_act(self) -> int:
        """The seat whose turn it is; -1 during the exchange (its seats act in any
        order, the optional exchange's decisions included) and once the match is over."""
        return self._st.hand.to_act

    @property
    def hand_number(self) -> int:
        return self._st.hand.number

    @property
    def scores(self) -> tuple[int, ...]:
        return tuple(self._st.scores)

    @property
    def bags(self) -> tuple[int, ...]:
        return tuple(self._st.bags)

    @property
    def winner(self) -> int | None:
        return self._st.winner

    @property
    def state(self) -> MatchState:
        """The full state, every hand included: for the server and tests, never a client."""
        return self._st

    def seats_to_act(self) -> list[int]:
        """Every seat with at least one legal action now."""
        return [s for s in range(self.rules.players) if self.legal_actions(s)]

    def legal_actions(self, seat: object) -> list[Action]:
        """The actions ``seat`` may take now: none for a seat number that is not at
        the table.  A ``seat`` that is not an ``int`` (a ``bool`` included) raises
        ``IllegalAction`` with reason ``INVALID_SEAT``, as ``view`` and ``apply`` do."""
        st = self._st
        if type(seat) is not int or not 0 <= seat < st.rules.players:
            if type(seat) is not int:
                raise IllegalAction(Reason.INVALID_SEAT, f"{show(seat)} is not a seat number", None)
            return []
        phase = st.phase
        if phase is _PLAYING:
            return legal_play_actions(st, seat)
        if phase is _BIDDING:
            if st.hand.trump_namer >= 0:
                return legal_trump_actions(st, seat)
            return legal_bidding_actions(st, seat)
        if phase is _EXCHANGE:
            return legal_exchange_actions(st, seat)
        if phase is _DRAW:
            return legal_draw_actions(st, seat)
        return []

    def view(self, seat: object) -> SeatView:
        """What ``seat`` may know now; ``None`` for a spectator.  Any other value
        than a seat of this table or ``None`` raises ``IllegalAction`` (``INVALID_SEAT``)."""
        if seat is None:
            return make_view(self._st, None, [])
        if type(seat) is not int or not 0 <= seat < self.rules.players:
            valid = seat if type(seat) is int else None
            raise IllegalAction(Reason.INVALID_SEAT, f"no seat {show(seat)} at this table", valid)
        return make_view(self._st, seat, self.legal_actions(seat))

    # -- acting ----------------------------------------------------------------
    def apply(self, seat: object, action: object) -> list[Event]:
        """Apply one seat's action and return the events it caused.

        Raises ``IllegalAction`` (with a stable ``reason``) and changes nothing
        when the rules do not allow it.
        """
        st = self._st
        if type(seat) is not int or not 0 <= seat < st.rules.players:
            raise IllegalAction(Reason.INVALID_SEAT, f"no seat {show(seat)} at this table", None)
        phase = st.phase
        kind = type(action)
        act: Any = action  # an action once its kind is one (no typing.cast call: a hot path)
        if kind is Play and phase is _PLAYING:
            card: object = act.card  # read once: an attribute of a Python class
            events, hand_done = play_card(st, seat, card)
            if hand_done:
                events.extend(finish_hand(st))
            c: int = card  # type: ignore[assignment]  # play_card took it: a card index
            st.action_count += 1
            # a shared Play gets its shared entry
            self.actions.append(_PLAY_ENTRIES[seat << 6 | c] if PLAYS[c] is act else (seat, act))
            return events
        elif phase is _MATCH_OVER:
            raise IllegalAction(Reason.MATCH_OVER, "the match is over", seat)
        elif kind not in _PHASE_NAMES:
            raise IllegalAction(Reason.UNKNOWN_ACTION, f"{show(action)} is not an action", seat)
        elif phase not in _PHASE_NAMES[kind]:
            raise IllegalAction(
                Reason.WRONG_PHASE, f"{kind.__name__} is not allowed during {phase.value}", seat
            )
        else:
            events = self._apply_other(seat, act)
        st.action_count += 1
        self.actions.append(_entry(seat, act))
        return events

    def _apply_other(self, seat: int, action: Action) -> list[Event]:
        st = self._st
        if isinstance(action, Bid):
            events = apply_bid(st, seat, action)
        elif isinstance(action, BlindNil):
            events = apply_blind_nil(st, seat, action)
        elif isinstance(action, Look):
            return apply_look(st, seat, action)
        elif isinstance(action, PassCards | ExchangeDecision):
            if isinstance(action, PassCards):
                events = apply_pass(st, seat, action)
            else:
                events = apply_decision(st, seat, action)
            if exchange_done(st):
                begin_play(st)
            return events
        elif isinstance(action, Draw):
            return apply_draw(st, seat, action)
        elif isinstance(action, NameTrump):
            events = apply_name_trump(st, seat, action)
            events.extend(_after_bidding(st))
            return events
        else:  # a Play outside the playing phase is caught by the caller
            raise AssertionError(action)
        if st.phase is _BIDDING and all(b is not None for b in st.hand.bids):
            if st.rules.auction_trump:
                open_naming(st)  # trump first, then the exchange if any
            else:
                events.extend(_after_bidding(st))
        return events

    # -- persistence -------------------------------------------------------------
    def to_snapshot(self) -> bytes:
        from .snapshot import dump_snapshot

        return dump_snapshot(self)

    @classmethod
    def from_snapshot(cls, data: object) -> Match:
        """The match a snapshot holds, rebuilt by replaying its actions from its
        deal; ``SnapshotError`` unless the replay gives exactly its state."""
        from .snapshot import load_snapshot

        return load_snapshot(data)


def _after_bidding(st: MatchState) -> list[Event]:
    """Bidding (and with auction trump, the naming) is over: the exchange or the play."""
    events: list[Event] = []
    seats = exchange_seats(st)
    if seats:
        st.phase = Phase.EXCHANGE
        events.extend(open_exchange(st, seats))
    else:
        begin_play(st)
    return events


# Their items typed Any: compiled by mypyc, an item typed as a tuple would be
# unpacked into a C struct and packed into a new tuple again when stored.
_PLAY_ENTRIES: Final[tuple[Any, ...]] = tuple(
    (seat, PLAYS[c]) for seat in range(8) for c in range(64)
)
"""``(seat, PLAYS[card])`` at ``seat << 6 | card``: the entry of ``Match.actions``
for a play of a shared action.  A tuple per action played would be one more
object the garbage collector tracks for the match's life (the list keeps them
all), and full collections walk every one: about a fifth of the time of a
match played through the public API, compiled."""

_BID_ENTRIES: Final[tuple[Any, ...]] = tuple((seat, b) for seat in range(8) for b in BIDS)
"""``(seat, BIDS[n])`` at ``seat * len(BIDS) + n``: as ``_PLAY_ENTRIES``, for bids."""


def _entry(seat: int, action: Any) -> Any:
    """The entry of ``Match.actions`` for an applied action other than a play: a
    shared one for a shared bid (typed Any, as ``_PLAY_ENTRIES``' items)."""
    if type(action) is Bid:
        n = action.tricks  # applied: a whole number of tricks
        if n < len(BIDS) and BIDS[n] is action:
            return _BID_ENTRIES[seat * len(BIDS) + n]
    return (seat, action)


_EMPTY_HAND: Final = HandState(0, 0, (), [], [], [], [], [], 0)
