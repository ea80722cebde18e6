"""The lobby put together for one server process: its store (beside the match
store, on the same SQLite file or Redis), the feed, the matchmaker loop and
the sweeper, and the servicer."""

from __future__ import annotations

from dataclasses import dataclass

from ..matches import Registry
from ..players import PlayerAuth
from ..rating import RatingRules
from ..store import Store
from ..store.lobby import LobbyStore
from ..store.lobby_memory import MemoryLobby
from ..store.lobby_sqlite import SqliteLobby
from ..store.sqlite import SqliteStore
from . import shards
from .board import Board
from .context import Context, Settings
from .feed import Feed
from .listing import Listing
from .quickplay import Matchmaker, QuickPlay
from .ratings import Ledger
from .rematch import Rematches
from .results import Results
from .seat_keys import SeatKeys
from .service import LobbyService
from .standings import Standings
from .sweeper import Sweeper
from .tables import Tables


def lobby_store(store: Store) -> LobbyStore:
    """The lobby's store on the same storage as ``store``'s matches."""
    if isinstance(store, SqliteStore):
        return SqliteLobby(store)
    if getattr(store, "shared", False):
        from ..store.lobby_redis import RedisLobby  # redis-py is needed only here
        from ..store.redis import RedisStore

        assert isinstance(store, RedisStore)
        return RedisLobby(store)
    return MemoryLobby()


@dataclass(slots=True)
class Lobby:
    service: LobbyService | None  # None: the lobby is served elsewhere
    ctx: Context
    matchmaker: Matchmaker | None
    sweeper: Sweeper | None
    results: Results
    board: Board | None = None  # None: the lobby is served elsewhere

    async def close(self) -> None:
        if self.board is not None:
            await self.board.close()
        if self.matchmaker is not None:
            await self.matchmaker.close()
        if self.sweeper is not None:
            await self.sweeper.close()
        await self.results.close()
        await self.ctx.store.close()


async def start_lobby(
    store: Store,
    registry: Registry,
    players: PlayerAuth,
    seat_keys: SeatKeys,
    settings: Settings,
    serve: bool = True,
) -> Lobby:
    """The lobby of one replica. ``serve=False``: a replica of matches only
    (``--lobby off``), which neither follows the lobby's feed nor runs the
    matchmaker or the sweeper (the replicas that serve the lobby do), and
    still records the result of a lobby match that ends here, as any
    replica must (its ratings, its players' records)."""
    lstore = lobby_store(store)
    feed = Feed(lstore, shards.places(lstore))
    board = Board(lstore, feed)  # subscribed before the feed starts: it misses no change
    if serve:
        await feed.start()
    ctx = Context(lstore, feed, registry, seat_keys, settings)
    tables = Tables(ctx)
    ledger = Ledger(lstore, RatingRules(settings.leaver_share), min_games=settings.rating_min_games)
    results = Results(ctx, ledger, settings.rated_bots)
    registry.pending_table = tables.pending
    registry.match_over = results.on_over
    if not serve:
        return Lobby(None, ctx, None, None, results)
    quickplay = QuickPlay(ctx, tables)
    matchmaker = Matchmaker(ctx, quickplay)
    sweeper = Sweeper(ctx, tables, quickplay, results)
    service = LobbyService(
        ctx,
        players,
        registry,
        tables,
        quickplay,
        Rematches(ctx, tables),
        Listing(ctx, board),
        Standings(ctx, ledger),
    )
    board.start()
    matchmaker.start()
    sweeper.start()
    return Lobby(service, ctx, matchmaker, sweeper, results, board)
