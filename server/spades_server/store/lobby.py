"""The lobby's store: documents with versions, sorted sets, a change feed.

Tables, tickets and players (lobby.py and its neighbours) are small JSON
documents. Every change to them is one ``commit``: a compare-and-set on the
versions of the documents it read, and the writes that follow from them, all
or nothing. That one primitive is what makes a table's seat taken once, a
ticket placed once, and a player hold one ticket, whichever replica decides:
two replicas deciding on the same documents cannot both commit.

The same contract on the three stores (``MemoryLobby``, ``SqliteLobby`` and
``RedisLobby``, in the modules beside this one):

- A document is ``key -> (version, data)``. A key that is absent has version
  0. A commit's ``expect`` maps keys to the version each must have now; if
  any differs, nothing at all is written and ``commit`` returns None.
- ``put`` writes each key's data and raises its version by one (from 0 to 1
  for a new key), whether or not the key is in ``expect``. ``delete`` removes
  keys (version 0 again). ``ttl_ms`` gives put keys a lifetime (from this
  commit): once it runs out the key reads as absent. A put without a ttl
  keeps no earlier ttl.
- Sorted sets: ``zadd`` sets a member's score (adding it), ``zrem`` removes
  it; ``zrange`` reads members by score, ascending, ties by member, ascending
  (bytewise). A set with no member does not exist.
- The feed: ``events`` of a commit are appended to one log, numbered from 1
  up by one per event over the whole store, in commit order, only if the
  commit is written. ``commit`` returns the number of its last event (or the
  feed's last number when it has none). The store keeps at least the last
  ``feed_keep`` events (older ones may be dropped).
- ``follow(callback, after)``: every event numbered above ``after`` (None:
  appended from then on), by any writer (any replica, on Redis), is passed to
  ``callback`` in feed order, each once, on the event loop that called
  ``follow``; a gap (events dropped before this process read them, or a lost
  connection it could not fill) is reported as ``callback([], reset=True)``
  so that readers list again. A reader that read the feed's last number
  first and then follows after it misses nothing in between.
- ``take_token``: a token bucket per key (``rate`` tokens a second, at most
  ``burst``), shared by every replica; True if a token was taken.
- Partitions: ``part(name)`` is a store of its own whose commits are atomic
  over its own keys; no commit crosses partitions. A partition has no feed
  (a commit with events, ``feed_after`` and ``follow`` raise ``StoreError``)
  and shares the store's token buckets. On a Redis Cluster each partition is
  a hash tag of its own (``{lobby.<name>}``), so that what need not commit
  with the tables and tickets spreads over every shard; on memory, SQLite
  and one Redis it is the store itself under a partition's limits, so the
  same key read through two partitions may be one document there and two on
  a cluster: callers give each key one partition, always the same one.
- Shards: ``shard(name)`` is a partition with a feed of its own (numbered
  from 1, as the store's): on a Redis Cluster a hash tag of its own
  (``{lobby.<name>}``) whose commits may carry events, ``follow`` and
  ``feed_after`` reading its feed alone; elsewhere the store itself (one feed
  for every shard). The same name gives the same object, so that a process
  follows a shard's feed once.
- A commit is durable when it returns (as ``Store.append``); every failure of
  the store itself raises ``StoreError`` (then the commit may or may not have
  been written: read again).

Keys are printable ASCII without spaces, at most 200 characters; the callers
make them (``table:<id>``, ``ticket:<id>``, ``player:<id>``), never clients.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

DEFAULT_FEED_KEEP = 10_000
# A partition's name: part of a Redis hash tag, so never a brace.
PART_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


@dataclass(frozen=True, slots=True)
class Doc:
    version: int  # 1 or more
    data: bytes


@dataclass(slots=True)
class Tx:
    """One commit: the versions it read, and what it writes if they still hold."""

    expect: dict[str, int] = field(default_factory=dict)
    put: dict[str, bytes] = field(default_factory=dict)
    ttl_ms: dict[str, int] = field(default_factory=dict)  # keys of ``put`` that expire
    delete: list[str] = field(default_factory=list)
    zadd: list[tuple[str, str, float]] = field(default_factory=list)  # (set, member, score)
    zrem: list[tuple[str, str]] = field(default_factory=list)  # (set, member)
    events: list[bytes] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class FeedPage:
    entries: list[tuple[int, bytes]]  # (number, event), oldest first
    first: int  # the oldest number still kept (last + 1 when none is kept)
    last: int  # the latest number (0: none ever)


# callback(entries, reset): entries in feed order; reset=True (with no
# entries) when some may have been missed.
FeedCallback = Callable[[list[tuple[int, bytes]], bool], None]


class LobbyStore(Protocol):
    async def get(self, keys: Sequence[str]) -> list[Doc | None]:
        """The documents of ``keys``, in order (None: absent), read together."""

    async def commit(self, tx: Tx) -> int | None:
        """Apply ``tx`` if every expected version holds; None if one did not."""

    async def zrange(
        self, name: str, low: float, high: float, offset: int = 0, count: int = -1
    ) -> list[tuple[str, float]]:
        """Members with ``low <= score <= high``, ascending, skipping
        ``offset`` and returning at most ``count`` (-1: all)."""

    async def zcard(self, name: str) -> int:
        """How many members the set has."""

    async def zrank(self, name: str, member: str) -> int | None:
        """The member's place in the set's ascending order (score, then
        member), from 0; None when it is not in the set."""

    async def feed_after(self, after: int, limit: int) -> FeedPage:
        """At most ``limit`` events numbered above ``after``, oldest first."""

    def follow(self, callback: FeedCallback, after: int | None = None) -> None:
        """Pass every event after ``after`` (None: from now on) to ``callback``
        (see above)."""

    async def take_token(self, key: str, rate: float, burst: int) -> bool:
        """Take one token of ``key``'s bucket; False when it is empty."""

    def part(self, name: str) -> LobbyStore:
        """The partition ``name`` (see above); ``StoreError`` for a name that
        is not ``PART_NAME``."""

    def shard(self, name: str) -> LobbyStore:
        """The shard ``name``: a partition with a feed (see above)."""

    async def close(self) -> None:
        """Stop following; later calls raise StoreError. (The match store
        that the lobby store shares a connection or file with closes it.)"""
