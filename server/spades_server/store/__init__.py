"""Stores behind one interface: in-memory (tests) and SQLite (the embedded default)."""

from .base import (
    LoadedMatch,
    MatchExists,
    MatchNotFound,
    SeqConflict,
    Store,
    StoredAction,
    StoredEvent,
    StoreError,
)
from .memory import MemoryStore
from .sqlite import SqliteStore, StoreStats

__all__ = [
    "LoadedMatch",
    "MatchExists",
    "MatchNotFound",
    "MemoryStore",
    "SeqConflict",
    "SqliteStore",
    "Store",
    "StoreError",
    "StoreStats",
    "StoredAction",
    "StoredEvent",
]
