"""Playing the tricks of a hand."""

from __future__ import annotations

from .actions import PLAYS, Action
from .cards import SPADES, SUIT_NAMES, TWO_OF_CLUBS, Card, card_name, is_card
from .errors import IllegalAction, Reason, show
from .events import EVERYONE, CardPlayed, Event, TrickWon
from .ruleset import FirstLead, SpadesBroken
from .state import MatchState, Phase
from .trick import (
    SUIT_RANKS,
    deuces_legal_play_mask,
    deuces_suit,
    deuces_trick_winner_index,
    legal_play_mask,
    trick_winner_index,
)


def begin_play(st: MatchState) -> None:
    h, r = st.hand, st.rules
    if r.first_lead is FirstLead.DEALER:
        leader = h.dealer
    elif r.first_lead is FirstLead.TWO_OF_CLUBS:
        leader = next(s for s in range(r.players) if h.hands[s] >> TWO_OF_CLUBS & 1)
    else:
        leader = (h.dealer + 1) % r.players
    st.phase = Phase.PLAYING
    h.leader = h.to_act = leader


def legal_play_actions(st: MatchState, seat: int) -> list[Action]:
    h = st.hand
    if seat != h.to_act:
        return []
    if st.rules.deuces_high:
        m = deuces_legal_play_mask(h.hands[seat], h.led_suit, h.spades_broken)
    else:
        m = legal_play_mask(h.hands[seat], h.led_suit, h.spades_broken, h.trump)
    out: list[Action] = []
    base = 0
    while m:  # suit by suit through a table, lowest card first: this runs once per card played
        for rank in SUIT_RANKS[m & 0x7FFF]:
            out.append(PLAYS[base + rank])
        m >>= 16
        base += 16
    return out


def play_card(st: MatchState, seat: int, card: object) -> tuple[list[Event], bool]:
    """Play a card: a ``Play`` whose field is ``card``, whatever it is (see
    actions._python_class); ``Match.apply`` reads the field once, for its own
    use too, and passes it here.  Returns the events and whether the hand is
    now finished."""
    h = st.hand
    if seat != h.to_act:
        raise IllegalAction(
            Reason.NOT_YOUR_TURN, f"it is seat {h.to_act}'s turn to play, not seat {seat}'s", seat
        )
    hand = h.hands[seat]
    if type(card) is not int:
        raise IllegalAction(Reason.CARD_NOT_IN_HAND, f"you do not hold {_name(card)}", seat)
    c: Card = card  # type: ignore[assignment]  # an int: compiled, native from here on
    if not 0 <= c < 64 or not hand >> c & 1:
        raise IllegalAction(Reason.CARD_NOT_IN_HAND, f"you do not hold {_name(c)}", seat)
    if st.rules.deuces_high:
        return _apply_play_deuces(st, seat, c, hand)
    trump = h.trump
    led = h.led_suit
    broken = h.spades_broken
    trick = h.trick
    if not legal_play_mask(hand, led, broken, trump) >> c & 1:
        raise _why_illegal(led, seat, trump)
    h.hands[seat] = hand ^ 1 << c  # c is in hand
    if c >> 4 == trump and not broken and _breaks(st, led, trump):
        h.spades_broken = True
    if not trick:
        h.led_suit = c >> 4
    trick.append(c)
    events: list[Event] = [CardPlayed(EVERYONE, seat, c)]
    n = st.rules.players
    if len(trick) < n:
        h.to_act = (seat + 1) % n
        return events, False
    cards = tuple(trick)
    return _end_trick(st, events, cards, (h.leader + trick_winner_index(cards, trump)) % n)


def _end_trick(
    st: MatchState, events: list[Event], cards: tuple[Card, ...], winner: int
) -> tuple[list[Event], bool]:
    """The trick in progress, ``cards``, is complete and ``winner`` takes it."""
    h = st.hand
    h.tricks_won[winner] += 1
    h.completed.append((h.leader, cards, winner))
    events.append(TrickWon(EVERYONE, len(h.completed), winner, cards, h.leader))
    h.trick = []
    h.led_suit = -1
    h.leader = h.to_act = winner
    return events, len(h.completed) == st.rules.tricks_per_hand


def _apply_play_deuces(st: MatchState, seat: int, c: Card, hand: int) -> tuple[list[Event], bool]:
    """:func:`play_card` under deuces high, once ``c`` is known to be in hand:
    the 2 of diamonds plays as a spade (it follows, trumps and breaks spades)."""
    h = st.hand
    if not deuces_legal_play_mask(hand, h.led_suit, h.spades_broken) >> c & 1:
        raise _why_illegal(h.led_suit, seat, SPADES)
    h.hands[seat] = hand ^ 1 << c
    suit = deuces_suit(c)
    if suit == SPADES and not h.spades_broken and _breaks(st, h.led_suit, SPADES):
        h.spades_broken = True
    if not h.trick:
        h.led_suit = suit
    trick = h.trick
    trick.append(c)
    events: list[Event] = [CardPlayed(EVERYONE, seat, c)]
    n = st.rules.players
    if len(trick) < n:
        h.to_act = (seat + 1) % n
        return events, False
    cards = tuple(trick)
    return _end_trick(st, events, cards, (h.leader + deuces_trick_winner_index(cards)) % n)


def _breaks(st: MatchState, led_suit: int, trump: int) -> bool:
    """Whether a trump (a spade, or the suit named under auction trump) played
    to a trick led with ``led_suit`` (-1: the lead itself) breaks trump: any
    trump does, or with ``spades_broken=trumping`` only one played by a seat
    that cannot follow a side suit led."""
    return st.rules.spades_broken is SpadesBroken.ANY_SPADE or (led_suit >= 0 and led_suit != trump)


def _name(c: object) -> str:
    return card_name(c) if is_card(c) else show(c)


def _why_illegal(led_suit: int, seat: int, trump: int) -> IllegalAction:
    if led_suit >= 0:
        return IllegalAction(Reason.MUST_FOLLOW_SUIT, "you must follow the suit led", seat)
    # the reason keeps its name when auction trump makes another suit trump
    if trump == SPADES:
        message = "spades cannot be led until spades are broken, unless you hold only spades"
    else:
        name = SUIT_NAMES[trump]
        message = f"trump ({name}) cannot be led until trump is broken, unless you hold only {name}"
    return IllegalAction(Reason.SPADES_NOT_BROKEN, message, seat)
