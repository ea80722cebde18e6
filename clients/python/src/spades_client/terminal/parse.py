"""What a person types at the prompt, read into an action or a command.

:func:`parse_command` reads the text alone (``QS``, ``10h``, ``bid 4``, ``nil``,
``blind nil``, ``look``, ``keep``/``discard``, ``trump H``, ``pass AS KH``,
``exchange``/``no exchange``, ``?``, ``q``...). :func:`resolve` then maps it onto
the seat's legal actions (from the server's ``SeatView.legal_actions``): the
legal action it names, or, when the kind of action is offered but not that
one (a card that does not follow suit, a bid out of range), the action as
typed, for the server to refuse with its reason and rule. Text that names no
action on offer gets a polite line saying what is accepted now.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from .._gen.spades.v1 import spades_pb2 as pb
from .cards import SUIT_NAMES, card_key, parse_card, parse_suit, typed_card

__all__ = ["Act", "Command", "Invalid", "Meta", "accepted_now", "parse_command", "resolve"]

MetaName: TypeAlias = Literal["help", "quit", "table", "last", "scores"]


@dataclass(frozen=True)
class Act:
    """An action to send."""

    action: pb.Action


@dataclass(frozen=True)
class Meta:
    """A command of the terminal itself."""

    name: MetaName


@dataclass(frozen=True)
class Invalid:
    """Input that is no action or command now, and why, for the person."""

    message: str


Command: TypeAlias = Act | Meta | Invalid

_META: Final[dict[str, MetaName]] = {
    "?": "help",
    "h": "help",
    "help": "help",
    "q": "quit",
    "quit": "quit",
    "exit": "quit",
    "t": "table",
    "table": "table",
    "last": "last",
    "s": "scores",
    "score": "scores",
    "scores": "scores",
}
_WORDS = re.compile(r"[\s,]+")
_KIND_NAMES: Final[dict[str, str]] = {
    "bid": "a bid",
    "blind_nil": "blind nil",
    "look": "looking at your cards",
    "pass_cards": "passing cards",
    "play_card": "playing a card",
    "exchange_decision": "an exchange decision",
    "name_trump": "naming trump",
    "draw": "a draw",
}
_EXAMPLES: Final[dict[str, str]] = {
    "blind_nil": "`blind nil`",
    "look": "`look` (see your cards)",
    "name_trump": "`trump H` (C, D, H or S)",
    "draw": "`keep` (the top card) or `discard` (it, and keep the next)",
}


def _bid(n: int) -> pb.Action:
    a = pb.Action()
    a.bid.tricks = n
    a.bid.SetInParent()
    return a


def _draw(keep: bool) -> pb.Action:
    a = pb.Action()
    a.draw.keep = keep
    a.draw.SetInParent()
    return a


def _exchange(take: bool) -> pb.Action:
    a = pb.Action()
    a.exchange_decision.exchange = take
    a.exchange_decision.SetInParent()
    return a


def parse_command(text: str) -> Command:
    """Read one line of input (no knowledge of the table)."""
    t = " ".join(text.strip().lower().split())
    if not t:
        return Invalid("Type an action, or ? for help.")
    if t in _META:
        return Meta(_META[t])
    words = t.replace("_", " ").split(" ")
    head, rest = words[0], words[1:]
    if t in ("blind nil", "blind", "bn", "bid blind nil", "blindnil"):
        return Act(pb.Action(blind_nil=pb.BlindNilAction()))
    if t in ("look", "l", "look at cards", "see"):
        return Act(pb.Action(look=pb.LookAction()))
    if t in ("nil", "bid nil", "bid 0", "0"):
        return Act(_bid(0))
    if head == "bid" or (head.isdigit() and not rest):
        number = rest[0] if head == "bid" and len(rest) == 1 else head
        if not number.isdigit():
            return Invalid("A bid is a number of tricks: `bid 4`, `4`, or `nil`.")
        return Act(_bid(int(number)))
    if t in ("keep", "draw keep", "k"):
        return Act(_draw(True))
    if t in ("discard", "draw discard", "d"):
        return Act(_draw(False))
    if t in ("exchange", "x", "yes exchange", "take exchange"):
        return Act(_exchange(True))
    if t in ("no exchange", "no", "decline", "noexchange", "no x"):
        return Act(_exchange(False))
    if head == "trump":
        suit = parse_suit(" ".join(rest)) if rest else None
        if suit is None:
            return Invalid("Name a suit: `trump C`, `trump D`, `trump H` or `trump S`.")
        return Act(pb.Action(name_trump=pb.NameTrumpAction(suit=suit)))
    if head == "play":
        rest_text = " ".join(rest)
        c = parse_card(rest_text)
        if c is None:
            return Invalid(
                f"{rest_text or 'nothing'!r} is not a card: type e.g. `QS`, `10H`, `AD`."
            )
        return Act(pb.Action(play_card=pb.PlayCardAction(card=c)))
    c = parse_card(t)
    if c is not None:
        return Act(pb.Action(play_card=pb.PlayCardAction(card=c)))
    words = [w for w in _WORDS.split(t) if w]
    looks_like_cards = len(words) > 1 and (
        parse_card(words[0]) is not None or parse_card(words[0] + words[1]) is not None
    )
    if head == "pass" or looks_like_cards:
        names = words[1:] if head == "pass" else words
        cards = _cards_of(names)
        if isinstance(cards, Invalid):
            return cards
        if not cards:
            return Invalid("Say which cards to pass: `pass AS KH`.")
        return Act(pb.Action(pass_cards=pb.PassCardsAction(cards=cards)))
    return Invalid(f"{text.strip()!r} is not something I understand.")


def _cards_of(names: Sequence[str]) -> list[pb.Card] | Invalid:
    """Cards from words; ``10 h`` (rank and suit apart) is read as one card too."""
    cards: list[pb.Card] = []
    i = 0
    while i < len(names):
        c = parse_card(names[i])
        step = 1
        if c is None and i + 1 < len(names):
            c, step = parse_card(names[i] + names[i + 1]), 2
        if c is None:
            return Invalid(f"{names[i]!r} is not a card: type e.g. `QS`, `10H`, `AD`.")
        cards.append(c)
        i += step
    return cards


def _kind(action: pb.Action) -> str:
    return action.WhichOneof("kind") or ""


def _same(a: pb.Action, b: pb.Action) -> bool:
    if _kind(a) != _kind(b):
        return False
    if _kind(a) == "pass_cards":
        return sorted(map(card_key, a.pass_cards.cards)) == sorted(
            map(card_key, b.pass_cards.cards)
        )
    return a == b


def resolve(command: Act, legal: Sequence[pb.Action]) -> Act | Invalid:
    """The action to send for what was typed, given the legal actions now."""
    action = command.action
    kinds = {_kind(a) for a in legal}
    # One card where a pass of one card is wanted, and the other way round.
    if _kind(action) == "play_card" and "play_card" not in kinds and "pass_cards" in kinds:
        action = pb.Action(pass_cards=pb.PassCardsAction(cards=[action.play_card.card]))
    if (
        _kind(action) == "pass_cards"
        and "pass_cards" not in kinds
        and "play_card" in kinds
        and len(action.pass_cards.cards) == 1
    ):
        action = pb.Action(play_card=pb.PlayCardAction(card=action.pass_cards.cards[0]))
    for a in legal:
        if _same(a, action):
            return Act(a)
    if _kind(action) in kinds:
        return Act(action)  # offered, but not this one: the server says why
    if not legal:
        return Invalid("It is not your turn: wait for the others.")
    what = _KIND_NAMES.get(_kind(action), "that")
    return Invalid(f"Now is not the time for {what}. {accepted_now(legal)}")


def accepted_now(legal: Sequence[pb.Action]) -> str:
    """What may be typed now, in one sentence, from the legal actions."""
    parts: list[str] = []
    kinds: list[str] = []
    for a in legal:
        if _kind(a) not in kinds:
            kinds.append(_kind(a))
    for kind in kinds:
        of_kind = [a for a in legal if _kind(a) == kind]
        if kind == "bid":
            values = sorted(a.bid.tricks for a in of_kind)
            parts.append(_bids_text(values))
        elif kind == "play_card":
            cards = ", ".join(typed_card(a.play_card.card) for a in of_kind)
            parts.append(f"a card to play: {cards}")
        elif kind == "pass_cards":
            n = len(of_kind[0].pass_cards.cards)
            parts.append(f"{n} card{'s' if n != 1 else ''} to pass: `pass AS KH`")
        elif kind == "exchange_decision":
            parts.append("`exchange` or `no exchange`")
        elif kind == "name_trump":
            suits = [SUIT_NAMES.get(a.name_trump.suit, "?") for a in of_kind]
            parts.append(f"`trump H` ({', '.join(suits)})")
        else:
            parts.append(_EXAMPLES.get(kind, kind))
    if not parts:
        return "Nothing to do now: wait for the others."
    return "Accepted now: " + "; ".join(parts) + ". (? for help, q to quit)"


def _bids_text(values: Sequence[int]) -> str:
    """``a bid 1-13 (`bid 4` or `4`) or `nil```; with gaps (suicide) the numbers themselves."""
    numbers = [v for v in values if v > 0]
    nil = "`nil`" if 0 in values else ""
    if not numbers:
        return nil
    low, high = numbers[0], numbers[-1]
    if numbers == list(range(low, high + 1)):
        example = min(max(low, 4), high)
        span = (
            f"`bid {low}`"
            if low == high
            else f"a bid {low}-{high} (`bid {example}` or `{example}`)"
        )
    else:
        span = "a bid of " + ", ".join(map(str, numbers))
    return f"{span} or {nil}" if nil else span


HELP: Final = """\
Cards are typed rank then suit: QS, 10h (or th), ah, 2c; jokers BJ and LJ.
  QS / play QS     play the queen of spades
  bid 4 / 4        bid four tricks;  nil  bids nil (0)
  blind nil        bid blind nil (before looking);  look  to see your cards
  pass AS KH       pass cards to your partner (blind nil exchange)
  exchange / no exchange   take or decline the optional exchange
  trump H          name the hand's trump suit (auction trump)
  keep / discard   two-player draw: keep the top card, or discard it and take the next
  t  the table again;  last  the last trick;  s  the scores by hand
  ?  this help;  q  quit"""
