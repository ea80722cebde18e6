"""The rating ledger: each player's rating in each pool, and every finished
rated match applied to them exactly once (issue 26).

It lives on the lobby's store (memory, SQLite or Redis: store/lobby.py) and
uses its one primitive, a compare-and-set commit:

``rated:<match id>``
    what a match did to its players (the pool and each player's rating
    before and after), written in the same commit as those ratings. A match
    whose document exists is never applied again, whichever replica finishes
    it and however often a finish is retried; and the documents are the
    record the ratings can be recomputed from.
``rating:<pool>:<player key>``
    a player's rating in a pool (mu, sigma), games, wins and losses, and the
    player's id (keys hold a hash of it: ``docs.player_key``).
``board:<pool>``
    a sorted set of the players with at least ``min_games`` games, by their
    conservative rating (``mu - 3 sigma``; stored negated, so that the
    store's ascending order is the leaderboard's).

Two matches finishing at once with a player in common both read that
player's rating; the first commit wins and the second reads again and
rates on top of it, so no update is lost or applied twice.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import unavailable
from ..rating import DEFAULT, Participant, Rating, RatingError, RatingRules, rank_of, rate
from ..store.lobby import LobbyStore, Tx
from .docs import player_key

POOL = re.compile(r"[a-z0-9_-]{1,32}")
MAX_MATCH_ID = 64
# Commits lost to another match's update of a common player before giving up.
MAX_ATTEMPTS = 16


@dataclass(frozen=True, slots=True)
class Standing:
    """A player's place in one pool."""

    player: str
    rating: Rating
    games: int = 0
    wins: int = 0
    losses: int = 0


class Ledger:
    def __init__(self, store: LobbyStore, rules: RatingRules | None = None, min_games: int = 0):
        if min_games < 0:
            raise RatingError("min_games must be 0 or more")
        self.store = store
        self.rules = rules or RatingRules()
        self.min_games = min_games

    async def apply(self, match_id: str, pool: str, participants: Sequence[Participant]) -> bool:
        """Rate a finished match; False if it was rated already (nothing
        changes then). Raises ``RatingError`` for a match that cannot be rated."""
        _check_pool(pool)
        _check_match(match_id)
        keys = [f"rated:{match_id}"] + [_key(pool, p.player) for p in participants]
        for _ in range(MAX_ATTEMPTS):
            docs = await self.store.get(keys)
            if docs[0] is not None:
                return False
            before = {
                p.player: _standing(p.player, d.data if d else None)
                for p, d in zip(participants, docs[1:], strict=True)
            }
            after = rate({k: s.rating for k, s in before.items()}, participants, self.rules)
            tx = Tx(expect={k: (d.version if d else 0) for k, d in zip(keys, docs, strict=True)})
            tx.put[keys[0]] = _record(pool, participants, before, after)
            won = rank_of(participants)
            for p, key in zip(participants, keys[1:], strict=True):
                old = before[p.player]
                new = Standing(
                    p.player,
                    after[p.player],
                    old.games + 1,
                    old.wins + (won[p.player] == 1),
                    old.losses + (won[p.player] != 1),
                )
                tx.put[key] = _encode(new)
                if new.games >= self.min_games:
                    tx.zadd.append((f"board:{pool}", key, -new.rating.conservative))
            if await self.store.commit(tx) is not None:
                return True
        raise unavailable("RATINGS_CONTENDED", f"match {match_id}: ratings kept changing; retry")

    async def standings(self, pool: str, players: Sequence[str]) -> list[Standing]:
        """Each player's standing in the pool (a player with no rated game has
        the starting rating and no games)."""
        _check_pool(pool)
        docs = await self.store.get([_key(pool, p) for p in players])
        return [_standing(p, d.data if d else None) for p, d in zip(players, docs, strict=True)]

    async def top(self, pool: str, offset: int = 0, count: int = 10) -> list[Standing]:
        """A page of the pool's leaderboard, best first."""
        _check_pool(pool)
        if offset < 0 or count < 0:
            raise RatingError("offset and count must be 0 or more")
        members = await self.store.zrange(
            f"board:{pool}", float("-inf"), float("inf"), offset, count
        )
        docs = await self.store.get([key for key, _ in members])
        return [_decode(d.data) for d in docs if d is not None]

    async def players(self, pool: str) -> int:
        """How many players the pool's leaderboard shows."""
        _check_pool(pool)
        return await self.store.zcard(f"board:{pool}")


def _check_pool(pool: str) -> None:
    if not POOL.fullmatch(pool):
        raise RatingError(f"a pool is 1 to 32 of a-z, 0-9, '_' and '-', got {pool!r}")


def _check_match(match_id: str) -> None:
    if not 0 < len(match_id) <= MAX_MATCH_ID or not match_id.isprintable() or " " in match_id:
        raise RatingError("a match id is 1 to 64 printable characters without spaces")


def _key(pool: str, player: str) -> str:
    return f"rating:{pool}:{player_key(player)}"


def _standing(player: str, data: bytes | None) -> Standing:
    return Standing(player, DEFAULT) if data is None else _decode(data)


def _encode(s: Standing) -> bytes:
    doc = {"player": s.player, "mu": s.rating.mu, "sigma": s.rating.sigma}
    doc |= {"games": s.games, "wins": s.wins, "losses": s.losses}
    return json.dumps(doc, separators=(",", ":")).encode()


def _decode(data: bytes) -> Standing:
    d = json.loads(data)
    rating = Rating(float(d["mu"]), float(d["sigma"]))
    return Standing(str(d["player"]), rating, int(d["games"]), int(d["wins"]), int(d["losses"]))


def _record(
    pool: str,
    participants: Sequence[Participant],
    before: dict[str, Standing],
    after: dict[str, Rating],
) -> bytes:
    doc = {
        "pool": pool,
        "players": [
            {
                "player": p.player,
                "side": p.side,
                "score": p.score,
                "turns": p.turns,
                "bot_turns": p.bot_turns,
                "before": [before[p.player].rating.mu, before[p.player].rating.sigma],
                "after": [after[p.player].mu, after[p.player].sigma],
            }
            for p in participants
        ],
    }
    return json.dumps(doc, separators=(",", ":")).encode()
