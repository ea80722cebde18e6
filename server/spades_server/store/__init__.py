"""Stores behind one interface: in-memory (tests) and SQLite (the embedded default);
the lobby's beside them (``lobby.py``). The Redis ones are imported where used."""

from .base import (
    ActionToken,
    LoadedMatch,
    MatchExists,
    MatchNotFound,
    NoActionToken,
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
    "ActionToken",
    "LoadedMatch",
    "MatchExists",
    "MatchNotFound",
    "MemoryLobby",
    "MemoryStore",
    "NoActionToken",
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
