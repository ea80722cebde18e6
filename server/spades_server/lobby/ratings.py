"""The ledger: each player's rating in each pool and their record, and every
finished lobby match applied to them exactly once (issue 26).

It lives on the lobby's store (memory, SQLite or Redis: store/lobby.py) and
uses its one primitive, a compare-and-set commit:

``played:<match id>``
    what a match did to its players (the pool, each player's side, score,
    turns and rating before and after), written in the same commit as those
    ratings and records. A match whose document exists is never applied
    again, whichever replica finishes it and however often a finish is
    retried; and the documents are the record the ratings can be recomputed
    from.
``rating:<pool>:<player key>``
    a player's rating in a pool (mu, sigma), games, wins and losses, the
    player's id and name (keys hold a hash of the id: ``docs.player_key``).
``board:<pool>``
    a sorted set of the players with at least ``min_games`` games, by their
    conservative rating (``mu - 3 sigma``; stored negated, so that the
    store's ascending order is the leaderboard's).
``stats:<player key>``
    a player's record (``player_stats.Record``) in matches with humans only
    and in matches with bots, the pools they are rated in, their name and
    when they last finished a match.

Two matches finishing at once with a player in common both read that
player's documents; the first commit wins and the second reads again and
applies on top of it, so no update is lost or applied twice.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import unavailable
from ..player_stats import Record
from ..rating import DEFAULT, Participant, Rating, RatingError, RatingRules, rank_of, rate
from ..store.lobby import Doc, LobbyStore, Tx
from .docs import player_key

POOL = re.compile(r"[a-z0-9_-]{1,32}")
MAX_MATCH_ID = 64
# Commits lost to another match's update of a common player before giving up.
MAX_ATTEMPTS = 16
HUMANS, BOTS = "humans", "bots"  # a record's buckets: with humans only, with a bot


@dataclass(frozen=True, slots=True)
class Standing:
    """A player's place in one pool."""

    player: str
    rating: Rating
    games: int = 0
    wins: int = 0
    losses: int = 0
    name: str = ""


@dataclass(slots=True)
class Profile:
    """What ``stats:<player key>`` holds."""

    player: str
    name: str = ""
    pools: list[str] = field(default_factory=list)
    records: dict[str, Record] = field(default_factory=dict)  # by bucket
    last_ms: int = 0

    def record(self, bucket: str) -> Record:
        return self.records.setdefault(bucket, Record())


@dataclass(frozen=True, slots=True)
class Finished:
    """A finished match as the ledger applies it."""

    match_id: str
    pool: str  # "": not rated
    participants: Sequence[Participant]  # rated: every seat's player (bots too)
    records: Mapping[str, Record] = field(default_factory=dict)  # each human's
    names: Mapping[str, str] = field(default_factory=dict)
    with_bots: bool = False
    ended_ms: int = 0
    fixed: Mapping[str, Rating] = field(default_factory=dict)  # bots': used, never changed


class Ledger:
    def __init__(self, store: LobbyStore, rules: RatingRules | None = None, min_games: int = 0):
        if min_games < 0:
            raise RatingError("min_games must be 0 or more")
        self.store = store
        self.rules = rules or RatingRules()
        self.min_games = min_games

    async def apply(self, match_id: str, pool: str, participants: Sequence[Participant]) -> bool:
        """Rate a finished match; False if it was applied already (nothing
        changes then). Raises ``RatingError`` for a match that cannot be rated."""
        _check_pool(pool)
        return await self.record(Finished(match_id, pool, participants))

    async def record(self, done: Finished) -> bool:
        """Apply a finished match: its ratings when rated, and its players'
        records; False if it was applied already (nothing changes then)."""
        if done.pool:
            _check_pool(done.pool)
        _check_match(done.match_id)
        rated = [p for p in done.participants if p.player not in done.fixed] if done.pool else []
        keys = [f"played:{done.match_id}"] + [rating_key(done.pool, p.player) for p in rated]
        keys += [stats_key(player) for player in done.records]
        for _ in range(MAX_ATTEMPTS):
            docs = await self.store.get(keys)
            if docs[0] is not None:
                return False
            tx = Tx(expect={k: (d.version if d else 0) for k, d in zip(keys, docs, strict=True)})
            rating_docs = docs[1 : 1 + len(rated)]
            changes = self._rate(tx, done, rated, rating_docs) if done.pool else {}
            self._count(tx, done, keys[1 + len(rated) :], docs[1 + len(rated) :])
            tx.put[keys[0]] = _played(done, changes)
            if await self.store.commit(tx) is not None:
                return True
        raise unavailable(
            "RATINGS_CONTENDED", f"match {done.match_id}: ratings kept changing; retry"
        )

    def _rate(
        self, tx: Tx, done: Finished, rated: list[Participant], docs: Sequence[Doc | None]
    ) -> dict[str, tuple[Rating, Rating]]:
        before = {
            p.player: standing_of(p.player, d.data if d else None)
            for p, d in zip(rated, docs, strict=True)
        }
        ratings = {k: s.rating for k, s in before.items()} | dict(done.fixed)
        after = rate(ratings, done.participants, self.rules)
        won = rank_of(done.participants)
        for p in rated:
            old = before[p.player]
            new = Standing(
                p.player,
                after[p.player],
                old.games + 1,
                old.wins + (won[p.player] == 1),
                old.losses + (won[p.player] != 1),
                done.names.get(p.player, old.name),
            )
            key = rating_key(done.pool, p.player)
            tx.put[key] = encode_standing(new)
            if new.games >= self.min_games:
                tx.zadd.append((board_key(done.pool), key, -new.rating.conservative))
        return {
            p.player: (ratings.get(p.player, DEFAULT), after[p.player]) for p in done.participants
        }

    @staticmethod
    def _count(tx: Tx, done: Finished, keys: list[str], docs: Sequence[Doc | None]) -> None:
        for (player, record), key, doc in zip(done.records.items(), keys, docs, strict=True):
            profile = decode_profile(player, doc.data if doc else None)
            profile.record(BOTS if done.with_bots else HUMANS).add(record)
            profile.name = done.names.get(player, profile.name)
            profile.last_ms = max(profile.last_ms, done.ended_ms)
            if done.pool and done.pool not in profile.pools:
                profile.pools.append(done.pool)
            tx.put[key] = _encode_profile(profile)

    async def standings(self, pool: str, players: Sequence[str]) -> list[Standing]:
        """Each player's standing in the pool (a player with no rated game has
        the starting rating and no games)."""
        _check_pool(pool)
        docs = await self.store.get([rating_key(pool, p) for p in players])
        return [standing_of(p, d.data if d else None) for p, d in zip(players, docs, strict=True)]

    async def profile(self, player: str) -> Profile | None:
        """The player's record; None if they never finished a lobby match."""
        (doc,) = await self.store.get([stats_key(player)])
        return None if doc is None else decode_profile(player, doc.data)

    async def top(self, pool: str, offset: int = 0, count: int = 10) -> list[Standing]:
        """A page of the pool's leaderboard, best first."""
        _check_pool(pool)
        if offset < 0 or count < 0:
            raise RatingError("offset and count must be 0 or more")
        members = await self.store.zrange(
            board_key(pool), float("-inf"), float("inf"), offset, count
        )
        docs = await self.store.get([key for key, _ in members])
        # A match may have moved a player between reading the board and their
        # documents: the page is shown in the order of what it shows.
        page = [_decode(d.data) for d in docs if d is not None]
        return sorted(page, key=lambda s: -s.rating.conservative)

    async def rank(self, pool: str, player: str) -> int | None:
        """The player's place on the pool's leaderboard, from 0; None when
        not on it."""
        _check_pool(pool)
        return await self.store.zrank(board_key(pool), rating_key(pool, player))

    async def players(self, pool: str) -> int:
        """How many players the pool's leaderboard shows."""
        _check_pool(pool)
        return await self.store.zcard(board_key(pool))


def board_key(pool: str) -> str:
    return f"board:{pool}"


def stats_key(player: str) -> str:
    return f"stats:{player_key(player)}"


def _check_pool(pool: str) -> None:
    if not POOL.fullmatch(pool):
        raise RatingError(f"a pool is 1 to 32 of a-z, 0-9, '_' and '-', got {pool!r}")


def _check_match(match_id: str) -> None:
    if not 0 < len(match_id) <= MAX_MATCH_ID or not match_id.isprintable() or " " in match_id:
        raise RatingError("a match id is 1 to 64 printable characters without spaces")


def rating_key(pool: str, player: str) -> str:
    return f"rating:{pool}:{player_key(player)}"


def standing_of(player: str, data: bytes | None) -> Standing:
    return Standing(player, DEFAULT) if data is None else _decode(data)


def encode_standing(s: Standing) -> bytes:
    doc = {"player": s.player, "mu": s.rating.mu, "sigma": s.rating.sigma}
    doc |= {"games": s.games, "wins": s.wins, "losses": s.losses, "name": s.name}
    return json.dumps(doc, separators=(",", ":")).encode()


def _decode(data: bytes) -> Standing:
    d = json.loads(data)
    rating = Rating(float(d["mu"]), float(d["sigma"]))
    counts = int(d["games"]), int(d["wins"]), int(d["losses"])
    return Standing(str(d["player"]), rating, *counts, name=str(d.get("name", "")))


def _encode_profile(p: Profile) -> bytes:
    doc: dict[str, Any] = {"player": p.player, "name": p.name, "pools": p.pools, "last": p.last_ms}
    doc["records"] = {bucket: r.to_json() for bucket, r in p.records.items()}
    return json.dumps(doc, separators=(",", ":")).encode()


def decode_profile(player: str, data: bytes | None) -> Profile:
    if data is None:
        return Profile(player)
    d = json.loads(data)
    records = {b: Record.from_json(r) for b, r in d.get("records", {}).items()}
    return Profile(str(d["player"]), str(d["name"]), list(d["pools"]), records, int(d["last"]))


def _played(done: Finished, changes: dict[str, tuple[Rating, Rating]]) -> bytes:
    players = []
    for p in done.participants:
        line: dict[str, Any] = {"player": p.player, "side": p.side, "score": p.score}
        line |= {"turns": p.turns, "bot_turns": p.bot_turns, "fixed": p.player in done.fixed}
        if p.player in changes:
            was, now = changes[p.player]
            line |= {"before": [was.mu, was.sigma], "after": [now.mu, now.sigma]}
        players.append(line)
    doc = {"pool": done.pool, "players": players, "ended": done.ended_ms}
    return json.dumps(doc, separators=(",", ":")).encode()
