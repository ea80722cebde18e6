"""Leaderboards and profiles as the API shows them (GetLeaderboard, GetProfile).

A leaderboard page is read from the pool's sorted set by place. Its page
tokens hold the place the next (or previous) page starts from, its pool and
a signature (``SeatKeys.mac``): a token this server did not give, or another
pool's, is refused. While ratings move, walking on from a token never goes
back up the board; a player whose place changed across a page's edge
meanwhile may show on two pages, or on none, as on any leaderboard read a
page at a time.
"""

from __future__ import annotations

import re

import grpc

from spades_engine import PRESETS

from .. import page_tokens
from ..errors import ServiceError, invalid
from ..gen.spades.v1 import lobby_pb2 as lpb
from ..player_stats import Record
from .context import Context
from .quickplay import MAX_PLAYER_ID
from .ratings import BOTS, HUMANS, POOL, Ledger, Standing

DEFAULT_PAGE = 25
MAX_PAGE = 200
_TOKEN = re.compile(r"([np])\.(0|[1-9][0-9]{0,8})\.([0-9a-f]{16})")


class Standings:
    def __init__(self, ctx: Context, ledger: Ledger) -> None:
        self.ctx = ctx
        self.ledger = ledger

    @property
    def default_pool(self) -> str:
        return "all" if self.ctx.settings.rating_pools == "one" else "classic"

    def _pool(self, pool: str) -> str:
        pool = pool or self.default_pool
        if len(pool) > 32 or not POOL.fullmatch(pool):
            raise invalid("BAD_POOL", "pool is 1 to 32 of a-z, 0-9, '_' and '-'", "pool")
        known = {"all"} if self.ctx.settings.rating_pools == "one" else set(PRESETS)
        if pool not in known:
            raise _missing(
                "POOL_NOT_FOUND", f"no rating pool {pool!r}: pools are {', '.join(sorted(known))}"
            )
        return pool

    async def leaderboard(self, req: lpb.GetLeaderboardRequest) -> lpb.GetLeaderboardResponse:
        pool = self._pool(req.pool)
        if not 0 <= req.page_size <= MAX_PAGE:
            raise invalid("BAD_PAGE_SIZE", f"page_size must be 0 to {MAX_PAGE}", "page_size")
        size = req.page_size or DEFAULT_PAGE
        if req.page_token and req.around_player_id:
            raise invalid(
                "TOKEN_AND_PLAYER", "give page_token or around_player_id, not both", "page_token"
            )
        start = 0
        if req.page_token:
            start = self._from_token(pool, req.page_token, size)
        elif req.around_player_id:
            check_player_id(req.around_player_id, "around_player_id")
            rank = await self.ledger.rank(pool, req.around_player_id)
            if rank is None:
                raise _missing(
                    "PLAYER_NOT_RATED", f"{req.around_player_id!r} is not on the {pool} leaderboard"
                )
            start = rank - rank % size
        page = await self.ledger.top(pool, start, size)
        total = await self.ledger.players(pool)
        out = lpb.GetLeaderboardResponse(
            pool=pool, total_players=total, min_games=self.ledger.min_games
        )
        for i, s in enumerate(page):
            out.entries.append(
                lpb.LeaderboardEntry(
                    rank=start + i + 1,
                    player_id=s.player,
                    name=s.name,
                    rating=rating_pb(pool, s, start + i + 1),
                )
            )
        if page and start + len(page) < total:
            out.next_page_token = self._token("n", pool, start + len(page))
        if start > 0:
            out.previous_page_token = self._token("p", pool, start)
        return out

    def _token(self, direction: str, pool: str, place: int) -> str:
        body = f"{direction}.{place}"
        return page_tokens.encode(f"{body}.{self.ctx.seat_keys.mac(f'{pool}.{body}')}")

    def _from_token(self, pool: str, token: str, size: int) -> int:
        """The first place of the page a token asks for: the next page
        starts where its page ended, the previous one ends where it began."""
        direction, place, mac = page_tokens.decode(token, _TOKEN).groups()
        if mac != self.ctx.seat_keys.mac(f"{pool}.{direction}.{place}"):
            raise page_tokens.bad_token()
        return int(place) if direction == "n" else max(0, int(place) - size)

    async def profile(self, player: str) -> lpb.PlayerProfile:
        check_player_id(player, "player_id")
        found = await self.ledger.profile(player)
        if found is None:
            raise _missing("PLAYER_NOT_FOUND", f"{player!r} has finished no match here")
        out = lpb.PlayerProfile(
            player_id=found.player,
            name=found.name,
            last_played_ms=found.last_ms,
            with_humans=found.records.get(HUMANS, Record()).to_pb(),
            with_bots=found.records.get(BOTS, Record()).to_pb(),
        )
        for pool in sorted(found.pools):
            (standing,) = await self.ledger.standings(pool, [player])
            rank = None
            if standing.games >= self.ledger.min_games:
                rank = await self.ledger.rank(pool, player)
            out.ratings.append(rating_pb(pool, standing, 0 if rank is None else rank + 1))
        return out


def _missing(reason: str, message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.NOT_FOUND, reason, message)


def check_player_id(player: str, field: str) -> None:
    if not 0 < len(player) <= MAX_PLAYER_ID:
        raise invalid("BAD_PLAYER_ID", f"{field} is 1 to {MAX_PLAYER_ID} characters", field)


def rating_pb(pool: str, s: Standing, rank: int) -> lpb.PlayerRating:
    return lpb.PlayerRating(
        pool=pool,
        mu=s.rating.mu,
        sigma=s.rating.sigma,
        conservative=s.rating.conservative,
        games=s.games,
        wins=s.wins,
        losses=s.losses,
        rank=rank,
    )
