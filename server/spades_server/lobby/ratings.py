"""The ledger: each player's rating in each pool and their record, and every
finished lobby match applied to them exactly once (issue 26).

It lives on the lobby's store (memory, SQLite or Redis: store/lobby.py),
outside the tables' and tickets' documents: in partitions of that store
(``part``), each a hash tag of its own on a Redis Cluster, so that no
leaderboard or record shares a slot with the lobby, and the pools and
players spread over the shards. Its documents, by partition:

``r.<pool>``: a pool's ratings, its leaderboard and its rated matches
    ``rating:<pool>:<player key>``: a player's rating in a pool (mu, sigma),
    games, wins and losses, the player's id and name (keys hold a hash of
    the id: ``docs.player_key``). ``board:<pool>``: a sorted set of the
    players with at least ``min_games`` games, by their conservative rating
    (``mu - 3 sigma``; stored negated, so that the store's ascending order
    is the leaderboard's). ``played:<match id>``: what a rated match did to
    its players (each one's side, score, turns and rating before and after),
    written in the same commit as those ratings.
``m.<0..15>``: unrated matches' ``played:<match id>``, by a hash of the id.
``p.<16 hex digits of the player key>``: one player's record
    ``stats:<player key>``: the player's record (``player_stats.Record``) in
    matches with humans only and in matches with bots, the pools they are
    rated in, their name, when they last finished a match, and the last
    matches counted.

A match is applied in order: its played record with its ratings, then each
player's record (one commit per player, skipped if the record has counted
the match), so that a record counting a match shows its ratings. A match
whose played record exists is never rated again, whichever replica
finishes it and however often a finish is retried; a finish cut short
before every record counted it is completed by the next try (another
replica's, or the sweeper's), which counts what is missing. The played
records are what the ratings can be recomputed from.

Two matches finishing at once with a player in common both read that
player's documents; the first commit wins and the second reads again and
applies on top of it, so no update is lost or applied twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import zlib
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
# A record remembers the last matches it counted, so that a result applied
# again (another replica, the sweeper) before its played record was written
# counts once: far more than a player finishes while a result waits.
COUNTED_KEPT = 32
PLAYED_PARTS = 16  # the partitions of unrated matches' played records
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
    counted: list[str] = field(default_factory=list)  # the last matches', counted_mark

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
        part = self.store.part(played_part(done.match_id, done.pool))
        played = played_key(done.match_id)
        rated = [p for p in done.participants if p.player not in done.fixed] if done.pool else []
        keys = [played] + [rating_key(done.pool, p.player) for p in rated]
        applied = False
        for _ in range(MAX_ATTEMPTS):
            docs = await part.get(keys)
            if docs[0] is not None:
                break  # applied before: its records may be still to count
            tx = Tx(expect={k: (d.version if d else 0) for k, d in zip(keys, docs, strict=True)})
            changes = self._rate(tx, done, rated, docs[1:]) if done.pool else {}
            tx.put[played] = _played(done, changes)
            if await part.commit(tx) is not None:
                applied = True
                break
        else:
            raise unavailable(
                "RATINGS_CONTENDED", f"match {done.match_id}: ratings kept changing; retry"
            )
        # The records after the ratings, so that a record counting the match
        # shows its ratings; each in its player's partition, counted once.
        counts = [self._count(done, p, r) for p, r in done.records.items()]
        # Every count ends before the first failure is raised: nothing of
        # this call is left running after it.
        for failed in await asyncio.gather(*counts, return_exceptions=True):
            if isinstance(failed, BaseException):
                raise failed
        return applied

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

    async def _count(self, done: Finished, player: str, record: Record) -> None:
        """Add the match to the player's record, unless it is there already."""
        part = self.store.part(player_part(player))
        key, mark = stats_key(player), counted_mark(done.match_id)
        for _ in range(MAX_ATTEMPTS):
            (doc,) = await part.get([key])
            profile = decode_profile(player, doc.data if doc else None)
            if mark in profile.counted:
                return
            profile.record(BOTS if done.with_bots else HUMANS).add(record)
            profile.name = done.names.get(player, profile.name)
            profile.last_ms = max(profile.last_ms, done.ended_ms)
            if done.pool and done.pool not in profile.pools:
                profile.pools.append(done.pool)
            profile.counted = [*profile.counted, mark][-COUNTED_KEPT:]
            tx = Tx(expect={key: doc.version if doc else 0}, put={key: _encode_profile(profile)})
            if await part.commit(tx) is not None:
                return
        raise unavailable(
            "RATINGS_CONTENDED", f"match {done.match_id}: {player}'s record kept changing; retry"
        )

    async def standings(self, pool: str, players: Sequence[str]) -> list[Standing]:
        """Each player's standing in the pool (a player with no rated game has
        the starting rating and no games)."""
        _check_pool(pool)
        return await read_standings(self.store, pool, players)

    async def profile(self, player: str) -> Profile | None:
        """The player's record; None if they never finished a lobby match."""
        (doc,) = await self.store.part(player_part(player)).get([stats_key(player)])
        return None if doc is None else decode_profile(player, doc.data)

    async def top(self, pool: str, offset: int = 0, count: int = 10) -> list[Standing]:
        """A page of the pool's leaderboard, best first."""
        _check_pool(pool)
        if offset < 0 or count < 0:
            raise RatingError("offset and count must be 0 or more")
        part = self.store.part(pool_part(pool))
        members = await part.zrange(board_key(pool), float("-inf"), float("inf"), offset, count)
        docs = await part.get([key for key, _ in members])
        # A match may have moved a player between reading the board and their
        # documents: the page is shown in the order of what it shows.
        page = [_decode(d.data) for d in docs if d is not None]
        return sorted(page, key=lambda s: -s.rating.conservative)

    async def rank(self, pool: str, player: str) -> int | None:
        """The player's place on the pool's leaderboard, from 0; None when
        not on it."""
        _check_pool(pool)
        part = self.store.part(pool_part(pool))
        return await part.zrank(board_key(pool), rating_key(pool, player))

    async def players(self, pool: str) -> int:
        """How many players the pool's leaderboard shows."""
        _check_pool(pool)
        return await self.store.part(pool_part(pool)).zcard(board_key(pool))


async def read_standings(store: LobbyStore, pool: str, players: Sequence[str]) -> list[Standing]:
    """Each player's standing in the pool, read from its partition."""
    docs = await store.part(pool_part(pool)).get([rating_key(pool, p) for p in players])
    return [standing_of(p, d.data if d else None) for p, d in zip(players, docs, strict=True)]


# -- where each document lives: its partition of the lobby's store (store/lobby.py)


def pool_part(pool: str) -> str:
    """A pool's ratings, leaderboard and rated matches."""
    return f"r.{pool}"


def player_part(player: str) -> str:
    """A player's record."""
    return "p." + player_key(player)[2:18]


def played_part(match_id: str, pool: str) -> str:
    """A match's played record: with its pool's ratings when rated (one
    commit writes both), else in one of PLAYED_PARTS partitions by its id."""
    if pool:
        return pool_part(pool)
    return f"m.{zlib.crc32(match_id.encode()) % PLAYED_PARTS}"


def part_of(key: str, data: bytes | None = None) -> str | None:
    """The partition of a ledger document or sorted set named ``key`` (a
    played record's ``data`` says its pool), None if ``key`` is not the
    ledger's: how a store copied from one Redis lays the ledger out on a
    cluster (store/migrate.py)."""
    kind, _, rest = key.partition(":")
    if kind in ("rating", "board"):
        return pool_part(rest.split(":", 1)[0])
    if kind == "stats" and rest.startswith("p:"):
        return "p." + rest[2:18]
    if kind == "played":
        pool = str(json.loads(data).get("pool", "")) if data else ""
        return played_part(rest, pool)
    return None


def played_key(match_id: str) -> str:
    return f"played:{match_id}"


def counted_mark(match_id: str) -> str:
    """What a record keeps of a match it counted: short, as it keeps COUNTED_KEPT."""
    return hashlib.blake2b(match_id.encode(), digest_size=6).hexdigest()


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
    doc["counted"] = p.counted
    return json.dumps(doc, separators=(",", ":")).encode()


def decode_profile(player: str, data: bytes | None) -> Profile:
    if data is None:
        return Profile(player)
    d = json.loads(data)
    records = {b: Record.from_json(r) for b, r in d.get("records", {}).items()}
    counted = [str(m) for m in d.get("counted", [])]
    return Profile(
        str(d["player"]), str(d["name"]), list(d["pools"]), records, int(d["last"]), counted
    )


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
