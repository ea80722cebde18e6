"""Stores behind one interface: in-memory (tests) and SQLite (the embedded default);
the lobby's beside them (``lobby.py``). The Redis ones are imported where used."""

from .base import (
    LoadedMatch,
    MatchExists,
    MatchNotFound,
    SeqConflict,
    SharedStore,
    Store,
    StoredAction,
    StoredEvent,
    StoreError,
    as_shared,
)
from .lobby_memory import MemoryLobby
from .lobby_sqlite import SqliteLobby
from .memory import MemoryStore
from .sqlite import SqliteStore, StoreStats

__all__ = [
    "LoadedMatch",
    "MatchExists",
    "MatchNotFound",
    "MemoryLobby",
    "MemoryStore",
    "SeqConflict",
    "SharedStore",
    "SqliteLobby",
    "SqliteStore",
    "Store",
    "StoreError",
    "StoreStats",
    "StoredAction",
    "StoredEvent",
    "as_shared",
]
