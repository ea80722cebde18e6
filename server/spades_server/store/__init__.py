"""Stores behind one interface: in-memory (tests) and SQLite (the embedded default)."""

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
from .memory import MemoryStore
from .sqlite import SqliteStore, StoreStats

__all__ = [
    "LoadedMatch",
    "MatchExists",
    "MatchNotFound",
    "MemoryStore",
    "SeqConflict",
    "SharedStore",
    "SqliteStore",
    "Store",
    "StoreError",
    "StoreStats",
    "StoredAction",
    "StoredEvent",
    "as_shared",
]
