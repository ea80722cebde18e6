"""Fixtures of the end-to-end service tests (see server_harness)."""

from lobby_stores import backend
from redis_harness import (
    make_cluster,
    make_redis,
    redis_cluster,
    redis_prefix,
    redis_server,
    shared_redis,
)
from server_harness import make_server, shared_server

__all__ = [
    "backend",
    "make_cluster",
    "make_redis",
    "make_server",
    "redis_cluster",
    "redis_prefix",
    "redis_server",
    "shared_redis",
    "shared_server",
]
