"""Fixtures of the end-to-end service tests (see server_harness)."""

from lobby_stores import backend
from redis_harness import make_redis, redis_prefix, redis_server
from server_harness import make_server, shared_server

__all__ = ["backend", "make_redis", "make_server", "redis_prefix", "redis_server", "shared_server"]
