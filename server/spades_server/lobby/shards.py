"""Where the lobby's documents live, apart from its tables and tickets.

A player's document (``presence``) is in one of ``SHARDS`` partitions of the
lobby's store, chosen by the hash of its key: on a Redis Cluster each is a
hash tag of its own (``{lobby.s<n>}``), so that the players spread over every
primary; on memory, SQLite and one Redis a partition is the store itself.
The number is fixed for the life of a deployment's data (a player's document
is looked for in the partition its key hashes to), as a cluster's 16,384
slots are.
"""

from __future__ import annotations

import zlib

from .docs import player_key

SHARDS = 16


def shard_of(key: str) -> int:
    return zlib.crc32(key.encode()) % SHARDS


def shard_name(shard: int) -> str:
    return f"s{shard}"


def of_player(player_id: str) -> str:
    """The partition that holds the player's document."""
    return shard_name(shard_of(player_key(player_id)))
