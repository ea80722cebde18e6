"""``spades-server``: configuration, start-up, and graceful shutdown."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import secrets
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import grpc
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import start_http_server

from .gen.spades.v1 import spades_pb2 as pb
from .matches import Registry
from .metrics import observe_gc_pauses
from .service import SpadesService, add_to_server
from .session import SessionLimits
from .store import Store
from .store.memory import MemoryStore
from .store.sqlite import SqliteStore
from .symbols import MethodAwarePool

GC_GEN0_THRESHOLD = 20_000
SERVICE_NAME = pb.DESCRIPTOR.services_by_name["SpadesService"].full_name
log = structlog.get_logger("spades.server")


@dataclass(frozen=True)
class _Opt:
    flag: str
    env: str
    default: str
    help: str
    kind: type = str


OPTIONS = (
    _Opt("--host", "SPADES_HOST", "127.0.0.1", "address to listen on (0.0.0.0 in a container)"),
    _Opt("--port", "SPADES_PORT", "50051", "gRPC port (0: any free port)", int),
    _Opt(
        "--metrics-port", "SPADES_METRICS_PORT", "9464", "Prometheus /metrics port (-1: off)", int
    ),
    _Opt("--store", "SPADES_STORE", "sqlite", "where matches live: sqlite (durable) or memory"),
    _Opt("--db", "SPADES_DB", "spades.db", "SQLite database file (with --store sqlite)"),
    _Opt(
        "--sqlite-synchronous",
        "SPADES_SQLITE_SYNCHRONOUS",
        "FULL",
        "SQLite synchronous mode: FULL survives power loss, NORMAL only process crashes",
    ),
    _Opt(
        "--sqlite-busy-timeout-ms",
        "SPADES_SQLITE_BUSY_TIMEOUT_MS",
        "5000",
        "how long a write waits while another process holds the database's lock (a backup, "
        "the sqlite3 shell) before its action fails with UNAVAILABLE STORE_FAILED",
        int,
    ),
    _Opt(
        "--operator-token",
        "SPADES_OPERATOR_TOKEN",
        "",
        "the operator credential; a random one is made and printed when empty",
    ),
    _Opt(
        "--max-matches",
        "SPADES_MAX_MATCHES",
        "20000",
        "matches one process holds in memory (finished ones leave, see below)",
        int,
    ),
    _Opt(
        "--max-message-bytes",
        "SPADES_MAX_MESSAGE_BYTES",
        "1048576",
        "largest request accepted (snapshots included)",
        int,
    ),
    _Opt("--streams-per-match", "SPADES_STREAMS_PER_MATCH", "64", "open streams per match", int),
    _Opt(
        "--actions-per-second",
        "SPADES_ACTIONS_PER_SECOND",
        "20",
        "sustained actions per second per seat token (bursts of twice that)",
        float,
    ),
    _Opt("--snapshot-every", "SPADES_SNAPSHOT_EVERY", "64", "actions between match snapshots", int),
    _Opt(
        "--unload-after-seconds",
        "SPADES_UNLOAD_AFTER_SECONDS",
        "300",
        "how long a match that is over stays in memory (longer while a stream is open on it); "
        "it is loaded from the store again when asked for. Negative: never unload",
        float,
    ),
    _Opt(
        "--bot-delay-ms",
        "SPADES_BOT_DELAY_MS",
        "0",
        "pause before a bot acts, for humans to follow",
        int,
    ),
    _Opt(
        "--grace-seconds",
        "SPADES_GRACE_SECONDS",
        "10",
        "on SIGTERM, how long in-flight calls may take to finish",
        float,
    ),
    _Opt("--log-level", "SPADES_LOG_LEVEL", "info", "debug, info, warning or error"),
)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="spades-server",
        description="The spades.v1 gRPC service. Every flag can also be set by the "
        "environment variable named in its help; a flag wins over the variable.",
    )
    for o in OPTIONS:
        default = o.kind(os.environ.get(o.env, o.default))
        p.add_argument(
            o.flag, type=o.kind, default=default, help=f"{o.help} [{o.env}, default {o.default}]"
        )
    args = p.parse_args(argv)
    if args.store not in ("sqlite", "memory"):
        p.error("--store must be sqlite or memory")
    return args


def configure_logging(level: str) -> None:
    logging.basicConfig(format="%(message)s", stream=sys.stderr, level=level.upper())
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )


def make_store(args: argparse.Namespace) -> Store:
    if args.store == "memory":
        return MemoryStore()
    return SqliteStore(
        args.db,
        synchronous=args.sqlite_synchronous,
        busy_timeout_ms=args.sqlite_busy_timeout_ms,
    )


async def serve(args: argparse.Namespace) -> None:
    limits = SessionLimits(
        streams_per_match=args.streams_per_match,
        actions_per_second=args.actions_per_second,
        action_burst=max(1, int(args.actions_per_second * 2)),
        snapshot_every=args.snapshot_every,
        bot_delay_s=args.bot_delay_ms / 1000.0,
    )
    store = make_store(args)
    registry = Registry(store, limits, args.max_matches, args.unload_after_seconds)
    restored = await registry.restore_all()
    operator_token = args.operator_token or secrets.token_urlsafe(24)

    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", args.max_message_bytes),
            ("grpc.max_send_message_length", 64 * 1024 * 1024),
        ]
    )
    add_to_server(SpadesService(registry, operator_token), server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME),
        server,
        pool=MethodAwarePool(),  # duck-typed: the lookups reflection makes
    )
    port = server.add_insecure_port(f"{args.host}:{args.port}")
    await server.start()
    for name in ("", SERVICE_NAME):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)

    metrics_url = "off"
    if args.metrics_port >= 0:
        httpd, _ = start_http_server(args.metrics_port, addr=args.host)
        metrics_url = f"http://{args.host}:{httpd.server_port}/metrics"
    log.info(
        "server started",
        grpc=f"{args.host}:{port}",
        metrics=metrics_url,
        store=args.store,
        restored_matches=restored,
    )
    print(
        f"spades-server listening on {args.host}:{port} (gRPC); metrics at {metrics_url}",
        flush=True,
    )
    if not args.operator_token:
        print(f"operator token: {operator_token}", flush=True)

    observe_gc_pauses()
    tune_gc()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()

    log.info("draining", grace_seconds=args.grace_seconds)
    for name in ("", SERVICE_NAME):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
    await registry.close()  # refuse new actions, end streams with UNAVAILABLE
    await server.stop(args.grace_seconds)
    await store.close()
    log.info("stopped")


def tune_gc() -> None:
    """Collect young objects less often and never rescan what start-up built.

    Every RPC allocates short-lived container objects (futures, tasks, call
    state); at the default gen-0 threshold of 700 the cyclic collector ran
    every few RPCs and took about 7% of the event loop under load (py-spy,
    bench/server.py). Nearly all of them are freed by reference counting, so a
    larger threshold costs little memory. Objects restored at start-up (every
    loaded match) are frozen out of future collections.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_GEN0_THRESHOLD, 20, 20)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging(args.log_level)
    asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
