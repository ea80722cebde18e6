"""What the lobby's modules share: the store, the feed, the match registry,
the seat-token key, the settings; and the loop every change runs in."""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from ..errors import exhausted, unavailable
from ..gen.spades.v1 import spades_pb2 as pb
from ..matches import Registry
from ..metrics import REJECTIONS
from ..players import Player
from ..rating import RatedBots
from ..store.lobby import LobbyStore, Tx
from . import shards
from .docs import player_key
from .feed import Feed
from .matchmaker import Band
from .seat_keys import SeatKeys

_R = TypeVar("_R")
# How often a change is decided again after another one won the race
# (another call, another replica) before the caller is told to retry.
MAX_TRIES = 8


class Raced(Exception):
    """Raised by a ``transact`` decision whose first commit (a player's
    claim) lost its race: it is decided again, as a refused commit is."""


@dataclass(frozen=True, slots=True)
class Settings:
    table_wait_s: int = 600  # the longest (and default) wait of an opened table
    bot_level: int = pb.BOT_LEVEL_NORMAL  # bots that fill seats, unless a table says
    rematch_s: int = 60  # how long a rematch waits for every human
    quickplay_bot_wait_s: float = 20.0  # a ticket waits this long before bots fill its table
    quickplay_bot_level: int = pb.BOT_LEVEL_NORMAL
    quickplay_timer_ms: int = 30_000  # quick play tables' turn timer
    quickplay_lanes: int = 1  # queues a ruleset is split into (shards.lane)
    party_wait_s: int = 120  # how long a party's first player waits for the partner
    start_lease_ms: int = 5_000  # a replica starting a table has this long before another may
    keep_s: int = 86_400  # finished tables and tickets stay readable this long
    player_calls_per_second: float = 5.0  # lobby changes per player (a burst of 4×)
    poll_max_wait_ms: int = 25_000
    max_waiting_tables: int = 100_000
    # Rated play: whether bots may sit at rated tables (at fixed ratings), the
    # pools ("preset": one per preset; "one": one for every table), the rated
    # games a player needs to be on a leaderboard, and the share of a human's
    # turns a stand-in may play before they count as having left.
    rated_bots: RatedBots = field(default_factory=RatedBots)
    rating_pools: str = "preset"
    rating_min_games: int = 3
    leaver_share: float = 0.5
    # Rated quick play seats players whose ratings (mu) lie within this band,
    # widening as they wait (matchmaker.Band).
    rating_band: Band = field(default_factory=Band)
    # A started match's result is recorded when a replica sees it end; if
    # none did (it died first), the sweeper looks this long after the start.
    result_check_ms: int = 600_000
    # Testing only: every table is dealt from this seed (0: a random one each),
    # so that a scenario through the lobby deals the same cards every run.
    table_seed: int = 0


@dataclass(slots=True)
class Context:
    store: LobbyStore
    feed: Feed
    registry: Registry
    seat_keys: SeatKeys
    settings: Settings

    def shard(self, shard: int) -> LobbyStore:
        return self.store.shard(shards.shard_name(shard))

    def players(self, player_id: str) -> LobbyStore:
        """Where the player's document is."""
        return self.shard(shards.of_player(player_id))

    def at(self, ident: str) -> LobbyStore:
        """Where the table or ticket with this id is (``shards``)."""
        place = shards.place_of(ident)
        return self.store if place == shards.HOME else self.shard(place)

    def queue(self, queue: str) -> LobbyStore:
        """Where a quick-play queue, its tickets and their tables are."""
        return self.shard(shards.of_queue(queue))

    def places(self) -> list[LobbyStore]:
        """The lobby's partition and every shard, each once (one store when
        shards are the store itself)."""
        return shards.places(self.store)

    def new_seed(self) -> int:
        return self.settings.table_seed or secrets.randbits(63)

    @staticmethod
    def now_ms() -> int:
        return int(time.time() * 1000)

    async def transact(
        self,
        decide: Callable[[], Awaitable[tuple[Tx | None, _R]]],
        at: LobbyStore | Callable[[], LobbyStore] | None = None,
    ) -> _R:
        """Run ``decide`` (which reads what it needs and returns the commit to
        make, or None, and its result) until its commit is written ``at``
        (the lobby's partition by default; a function: where the decision
        just made says)."""
        for _ in range(MAX_TRIES):
            try:
                tx, result = await decide()
            except Raced:
                continue
            where = self.store if at is None else at() if callable(at) else at
            if tx is None or await where.commit(tx) is not None:
                return result
        raise unavailable("CONTENDED", "other calls kept changing the same table; retry")

    async def check_rate(self, player: Player) -> None:
        """One of the player's lobby changes (shared by every replica)."""
        rate = self.settings.player_calls_per_second
        key = f"calls:{player_key(player.id)}"
        if not await self.store.take_token(key, rate, max(1, int(rate * 4))):
            REJECTIONS.labels("RATE_LIMITED").inc()
            raise exhausted(
                "RATE_LIMITED", f"more than {rate:g} lobby changes per second from this player"
            )

    def seat_token(self, table_id: str, seat: int, nonce: str) -> str:
        return self.seat_keys.token(table_id, seat, nonce)
