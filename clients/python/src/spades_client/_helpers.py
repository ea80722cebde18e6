"""Small builders of the messages a player sends, and readers of what comes back."""

from __future__ import annotations

from ._gen.spades.v1 import spades_pb2 as pb

__all__ = [
    "bid",
    "bot",
    "bots",
    "card",
    "draw",
    "event_kind",
    "human",
    "is_my_turn",
    "play_card",
    "seat_token",
]


def human(name: str) -> pb.SeatConfig:
    """A human seat for ``create_match`` (it gets a seat token)."""
    return pb.SeatConfig(name=name)


def bot(name: str, level: pb.BotLevel.ValueType = pb.BOT_LEVEL_NORMAL) -> pb.SeatConfig:
    """A bot seat for ``create_match``."""
    return pb.SeatConfig(name=name, bot=True, bot_level=level)


def bots(n: int, level: pb.BotLevel.ValueType = pb.BOT_LEVEL_NORMAL) -> list[pb.SeatConfig]:
    """``n`` bot seats of one level, named "Bot 1", "Bot 2", ..."""
    return [bot(f"Bot {i}", level) for i in range(1, n + 1)]


def seat_token(response: pb.CreateMatchResponse | pb.ImportMatchResponse, seat: int) -> str:
    """The token of human seat ``seat`` in a ``CreateMatch``/``ImportMatch`` response."""
    for t in response.seat_tokens:
        if t.seat == seat:
            return t.token
    raise KeyError(f"no seat token for seat {seat} (bot seats have none)")


def card(suit: pb.Suit.ValueType, rank: pb.Rank.ValueType) -> pb.Card:
    return pb.Card(suit=suit, rank=rank)


def bid(tricks: int) -> pb.Action:
    """Bid ``tricks`` (0 for nil)."""
    action = pb.Action()
    action.bid.tricks = tricks
    action.bid.SetInParent()
    return action


def play_card(c: pb.Card) -> pb.Action:
    return pb.Action(play_card=pb.PlayCardAction(card=c))


def draw(keep: bool) -> pb.Action:
    """Two players' draw: keep the stock's top card (True) or the next one."""
    action = pb.Action()
    action.draw.keep = keep
    action.draw.SetInParent()
    return action


def event_kind(event: pb.MatchEvent) -> str:
    """The event's kind, the ``MatchEvent`` oneof name (``"trick_won"``, ...)."""
    return event.WhichOneof("kind") or ""


def is_my_turn(view: pb.SeatView) -> bool:
    """Whether the view's seat may act now (it has legal actions)."""
    return len(view.legal_actions) > 0
