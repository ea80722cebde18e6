"""Fixtures of the end-to-end service tests (see server_harness)."""

from redis_harness import make_redis, redis_prefix, redis_server
from server_harness import make_server, shared_server

__all__ = ["make_redis", "make_server", "redis_prefix", "redis_server", "shared_server"]
