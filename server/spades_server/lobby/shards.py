"""Where the lobby's documents live: the lobby's own partition, and shards.

On a Redis Cluster every key of one commit must be on one slot. The lobby
keeps there (its store itself, ``{lobby}``) the tables players open, the
rematches, invite codes and the public listing, with the feed the listing is
read from. Quick play goes to ``SHARDS`` shards (``LobbyStore.shard``: a hash
tag and a feed each, ``{lobby.s<n>}``): a queue is in the shard its name
hashes to, with its tickets, the tables they are placed at, and the pair keys
of its parties, so that a placement (tickets and table) is one commit on one
slot. Players' documents (``presence``) are spread over the same shards by
their key, each commit of them on its own. On memory, SQLite and one Redis a
shard is the store itself.

A table or ticket names its place: its id is drawn until its hash gives it
(``new_id``), so that anyone holding an id reads the right shard without a
lookup. The number of shards is therefore fixed for the life of a
deployment's data, as a cluster's 16,384 slots are.
"""

from __future__ import annotations

import secrets
import zlib

from ..store.lobby import LobbyStore
from .docs import player_key

SHARDS = 16
HOME = SHARDS  # the place of the lobby's own partition


def _hash(text: str) -> int:
    return zlib.crc32(text.encode())


def shard_name(shard: int) -> str:
    return f"s{shard}"


def of_player(player_id: str) -> int:
    """The shard that holds the player's document."""
    return _hash(player_key(player_id)) % SHARDS


def of_queue(queue: str) -> int:
    """The shard of a quick-play queue (``TicketDoc.queue``)."""
    return _hash(queue) % SHARDS


def lane(who: str, lanes: int) -> int:
    """The lane of a ruleset's queue a player (or a party, by its pair key)
    waits in: the same one each time, so that a player's tickets meet the
    same players, and partners asking for each other name one queue."""
    return _hash(who) % lanes if lanes > 1 else 0


def place_of(ident: str) -> int:
    """Where the table or ticket with this id is: a shard, or ``HOME``."""
    return _hash(ident) % (SHARDS + 1)


def places(store: LobbyStore) -> list[LobbyStore]:
    """The lobby's partition and every shard, each once: one store where
    shards are the store itself."""
    found: dict[int, LobbyStore] = {id(store): store}
    for n in range(SHARDS):
        part = store.shard(shard_name(n))
        found.setdefault(id(part), part)
    return list(found.values())


def new_id(place: int) -> str:
    """A new table or ticket id whose place is ``place`` (17 draws on average)."""
    while True:
        ident = secrets.token_hex(8)
        if place_of(ident) == place:
            return ident


# The lobby's sorted sets that every place has, each member in the place it
# names (a due or playing table or ticket, a queue).
PER_PLACE_SETS = ("due", "playing", "queues")


def part_of(name: str) -> str | None:
    """The shard a lobby document or sorted set named ``name`` lives in on a
    cluster, None for the lobby's own partition: how a store laid out before
    the shards (or on one Redis) is laid out on a cluster (store/migrate.py).
    A table's or ticket's place is its id's, even if it was drawn before
    ids named their place."""
    kind, _, rest = name.partition(":")
    if kind == "p":  # a player's document: "p:" and the hash of their id
        return shard_name(_hash(name) % SHARDS)
    if kind in ("k", "t"):
        place = place_of(rest)
        return None if place == HOME else shard_name(place)
    if kind == "q":
        return shard_name(of_queue(rest))
    return None


def member_part(set_name: str, member: str) -> str | None:
    """Where a member of one of ``PER_PLACE_SETS`` belongs (as ``part_of``)."""
    if set_name == "queues":
        return shard_name(of_queue(member))
    if set_name == "due":
        return part_of(member)  # "t:<id>" or "k:<id>"
    return part_of(f"t:{member}")  # playing: a match id, its table's
