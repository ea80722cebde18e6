"""A client of the spades.v1 gRPC service (asyncio; ``spades_client.sync`` wraps it).

>>> import spades_client as sc                                   # doctest: +SKIP
>>> async with sc.connect("localhost:50051", operator_token=OP) as client:
...     created = await client.create_match(seats=[sc.human("You"), *sc.bots(3)], seed=7)
...     seat = client.seat(created.seat_tokens[0].token)
...     await seat.claim()
...     async with seat.session() as session:
...         ...

``pb`` is the module of the service's messages (``pb.Action``, ``pb.SeatView``,
...), generated from proto/spades/v1/spades.proto when the package is installed;
``lobby_pb`` the lobby's (``lobby_pb.Table``, ``lobby_pb.Ticket``, ...), from
proto/spades/v1/lobby.proto. A player's lobby calls need its credential:

>>> async with sc.connect("localhost:50051", credential=JWT) as client:  # doctest: +SKIP
...     ticket = await client.quick_play(sc.pb.Ruleset(preset="classic"))
...     seat = client.seat(await client.wait_for_placement(ticket))

Rated play's standings, with the same credential: ``leaderboard(pool,
page_size=, page_token=, around_player_id=)`` (a page, best first; every page
with ``leaderboard_pages``) and ``profile(player_id="")`` (ratings per pool
and the record with humans and with bots):

>>> async with sc.connect("localhost:50051", credential=JWT) as client:  # doctest: +SKIP
...     me = await client.profile()
...     async for page in client.leaderboard_pages("classic", page_size=50):
...         print([(e.rank, e.name) for e in page.entries])
"""

from ._client import DEFAULT_POLL_WAIT_MS, DEFAULT_TIMEOUT, TLS, Client, Seat, connect
from ._errors import (
    ConnectionLost,
    FieldViolation,
    SessionClosed,
    SpadesError,
    TableClosed,
    TicketCancelled,
)
from ._gen.spades.v1 import lobby_pb2 as lobby_pb
from ._gen.spades.v1 import spades_pb2 as pb
from ._helpers import (
    bid,
    bot,
    bots,
    card,
    draw,
    event_kind,
    human,
    is_my_turn,
    play_card,
    seat_token,
)
from ._retry import Backoff, is_transient
from ._session import PendingAction, Session, new_action_id

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_POLL_WAIT_MS",
    "DEFAULT_TIMEOUT",
    "TLS",
    "Backoff",
    "Client",
    "ConnectionLost",
    "FieldViolation",
    "PendingAction",
    "Seat",
    "Session",
    "SessionClosed",
    "SpadesError",
    "TableClosed",
    "TicketCancelled",
    "bid",
    "bot",
    "bots",
    "card",
    "connect",
    "draw",
    "event_kind",
    "human",
    "is_my_turn",
    "is_transient",
    "lobby_pb",
    "new_action_id",
    "pb",
    "play_card",
    "seat_token",
]
