"""``spades-server``: configuration, start-up, and graceful shutdown."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import re
import secrets
import signal
import ssl
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import grpc
import structlog
from grpc_health.v1 import health, health_pb2
from grpc_reflection.v1alpha import reflection, reflection_pb2
from prometheus_client import start_http_server

from . import calls, tracing
from .allowance import SessionLimits
from .edge_link import EdgeListener
from .gen.spades.v1 import lobby_pb2 as lpb
from .gen.spades.v1 import spades_pb2 as pb
from .lobby.assemble import start_lobby
from .lobby.context import Settings
from .lobby.matchmaker import Band
from .lobby.seat_keys import SeatKeys
from .matches import Registry
from .metrics import observe_gc_pauses
from .players import player_auth
from .rating import RatedBots, Rating
from .rpc import add_to_server
from .service import SpadesService
from .store import Store
from .store.memory import MemoryStore
from .store.sqlite import MAX_COMMIT_LINGER_MS, SqliteStore
from .symbols import MethodAwarePool

GC_GEN0_THRESHOLD = 20_000
SERVICE_NAME = pb.DESCRIPTOR.services_by_name["SpadesService"].full_name
LOBBY_SERVICE_NAME = lpb.DESCRIPTOR.services_by_name["LobbyService"].full_name
BOT_LEVEL_NAMES = {
    pb.BotLevel.Name(v).removeprefix("BOT_LEVEL_").lower(): v
    for v in pb.BotLevel.values()
    if v != pb.BOT_LEVEL_UNSPECIFIED
}
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
    _Opt(
        "--store",
        "SPADES_STORE",
        "sqlite",
        "where matches live: sqlite (durable, one replica), redis (shared by replicas) or memory",
    ),
    _Opt(
        "--redis-url",
        "SPADES_REDIS_URL",
        "redis://127.0.0.1:6379/0",
        "the Redis server (with --store redis); rediss:// for TLS",
    ),
    _Opt(
        "--redis-mode",
        "SPADES_REDIS_MODE",
        "single",
        "with --store redis: single (one primary, perhaps with replicas) or cluster (a Redis "
        "Cluster: --redis-url names any node of it; a redis+cluster:// URL says the same)",
    ),
    _Opt(
        "--redis-prefix",
        "SPADES_REDIS_PREFIX",
        "spades",
        "the prefix of every Redis key (with --store redis): deployments sharing a Redis differ",
    ),
    _Opt(
        "--redis-wait-replicas",
        "SPADES_REDIS_WAIT_REPLICAS",
        "0",
        "with --store redis: acknowledge an action only once this many Redis replicas "
        "have it (WAIT), so that a failover cannot lose it; 0: the primary alone",
        int,
    ),
    _Opt(
        "--redis-wait-timeout-ms",
        "SPADES_REDIS_WAIT_TIMEOUT_MS",
        "1000",
        "how long an action waits for those replicas before it fails with UNAVAILABLE",
        int,
    ),
    _Opt(
        "--redis-max-connections",
        "SPADES_REDIS_MAX_CONNECTIONS",
        "64",
        "with --store redis: connections to Redis per replica (the pub/sub one aside); "
        "past them a call waits for one",
        int,
    ),
    _Opt(
        "--takeover-ms",
        "SPADES_TAKEOVER_MS",
        "3000",
        "with --store redis: how long past a bot's move or a turn deadline another replica "
        "waits before it takes the match over from one that is gone",
        int,
    ),
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
        "--sqlite-commit-linger-ms",
        "SPADES_SQLITE_COMMIT_LINGER_MS",
        "0",
        "with --store sqlite: wait this long after the first write of a commit for others to "
        "join it (0 to 100 ms): fewer commits and fsyncs at low load, as much more latency",
        float,
    ),
    _Opt(
        "--operator-token",
        "SPADES_OPERATOR_TOKEN",
        "",
        "the operator credential; a random one is made and printed when empty",
    ),
    # TLS: docs/security.md.
    _Opt(
        "--tls-cert",
        "SPADES_TLS_CERT",
        "",
        "PEM certificate chain of the server: with --tls-key the gRPC port speaks TLS only",
    ),
    _Opt("--tls-key", "SPADES_TLS_KEY", "", "PEM private key of --tls-cert"),
    _Opt(
        "--tls-client-ca",
        "SPADES_TLS_CLIENT_CA",
        "",
        "PEM certificates of the CA that signs operators' client certificates: operator calls "
        "are then served only on --operator-port, over mutual TLS (needs --tls-cert)",
    ),
    _Opt(
        "--operator-port",
        "SPADES_OPERATOR_PORT",
        "50052",
        "with --tls-client-ca: the port that requires a client certificate (0: any free port)",
        int,
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
        "--chat-per-hand",
        "SPADES_CHAT_PER_HAND",
        "40",
        "chat lines one seat may send in one hand (besides 20 a minute)",
        int,
    ),
    _Opt(
        "--seat-changes-per-hand",
        "SPADES_SEAT_CHANGES_PER_HAND",
        "16",
        "ClaimSeat/LeaveSeat changes of one seat's control in one hand",
        int,
    ),
    # Limits on calls and connections: docs/api.md, "Limits".
    _Opt(
        "--request-timeout-seconds",
        "SPADES_REQUEST_TIMEOUT_SECONDS",
        "10",
        "how long a call may take to send its request (a Play call: its `open`) before it "
        "is ended with INVALID_ARGUMENT REQUEST_EXPECTED (OPEN_EXPECTED)",
        float,
    ),
    _Opt(
        "--max-calls",
        "SPADES_MAX_CALLS",
        "20000",
        "open calls of the service, streams included, before new ones are refused with "
        "RESOURCE_EXHAUSTED TOO_MANY_CALLS",
        int,
    ),
    _Opt(
        "--max-waiting-calls",
        "SPADES_MAX_WAITING_CALLS",
        "500",
        "calls open at once that have not sent their request yet (a Play call: its `open`); "
        "one more ends the call that has waited longest with INVALID_ARGUMENT "
        "REQUEST_EXPECTED (OPEN_EXPECTED)",
        int,
    ),
    _Opt(
        "--max-pending-calls",
        "SPADES_MAX_PENDING_CALLS",
        "1000",
        "calls of one method that gRPC holds before the server has taken them up; past it, "
        "gRPC cancels new ones (CANCELLED)",
        int,
    ),
    _Opt(
        "--max-calls-per-connection",
        "SPADES_MAX_CALLS_PER_CONNECTION",
        "1000",
        "concurrent calls (HTTP/2 streams) on one client connection; the client queues the rest",
        int,
    ),
    _Opt(
        "--connection-idle-seconds",
        "SPADES_CONNECTION_IDLE_SECONDS",
        "300",
        "a connection with no call open this long is closed (gracefully; the client's channel "
        "reconnects when it next calls). 0: never",
        float,
    ),
    _Opt(
        "--connection-age-seconds",
        "SPADES_CONNECTION_AGE_SECONDS",
        "0",
        "a connection this old is asked to reconnect (GOAWAY), then closed after "
        "--connection-age-grace-seconds, open calls and streams included. 0: never",
        float,
    ),
    _Opt(
        "--connection-age-grace-seconds",
        "SPADES_CONNECTION_AGE_GRACE_SECONDS",
        "300",
        "how long the calls of a connection past --connection-age-seconds may go on",
        float,
    ),
    _Opt(
        "--keepalive-seconds",
        "SPADES_KEEPALIVE_SECONDS",
        "60",
        "the server pings a connection after this long without traffic; 0: never",
        float,
    ),
    _Opt(
        "--keepalive-timeout-seconds",
        "SPADES_KEEPALIVE_TIMEOUT_SECONDS",
        "20",
        "a connection that does not answer a ping in this time is closed, its calls ended",
        float,
    ),
    _Opt(
        "--min-client-ping-seconds",
        "SPADES_MIN_CLIENT_PING_SECONDS",
        "10",
        "clients may ping (keepalive) this often, calls open or not; a client that pings "
        "more often is disconnected (GOAWAY too_many_pings) after 2 such pings",
        float,
    ),
    _Opt(
        "--actions-per-second",
        "SPADES_ACTIONS_PER_SECOND",
        "20",
        "sustained actions per second per seat token (bursts of twice that)",
        float,
    ),
    _Opt(
        "--poll-max-wait-ms",
        "SPADES_POLL_MAX_WAIT_MS",
        "25000",
        "the longest a PollEvents call waits for an event before answering empty (a larger "
        "wait_ms is cut to this); below the idle timeouts of common proxies (30 s and more)",
        int,
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
        "--edge-link",
        "SPADES_EDGE_LINK",
        "",
        "also serve Play calls held by an edge process, which connects here "
        "(host:port, port 0 for any, or unix:PATH; docs/architecture.md). Empty: off",
    ),
    _Opt(
        "--grace-seconds",
        "SPADES_GRACE_SECONDS",
        "10",
        "on SIGTERM, how long in-flight calls may take to finish",
        float,
    ),
    # The lobby: tables, quick play, rematch (docs/lobby.md).
    _Opt(
        "--lobby",
        "SPADES_LOBBY",
        "serve",
        "serve: this replica serves LobbyService, follows the lobby's feed and runs the "
        "matchmaker and the sweeper; off: it serves matches only (LobbyService is "
        "UNIMPLEMENTED here) and still records the results of the lobby's matches that end "
        "here. On Redis, a few replicas that serve the lobby keep its slot's load from "
        "growing with every replica (docs/capacity.md)",
    ),
    _Opt(
        "--seat-token-key",
        "SPADES_SEAT_TOKEN_KEY",
        "",
        "the key the seat tokens of tables are derived with (every replica the same); "
        "empty: derived from the operator token",
    ),
    _Opt(
        "--table-wait-seconds",
        "SPADES_TABLE_WAIT_SECONDS",
        "600",
        "how long an opened table waits for players before bots fill it or it closes "
        "(a table may ask for less)",
        int,
    ),
    _Opt(
        "--bot-level",
        "SPADES_BOT_LEVEL",
        "normal",
        "the level of the bots that fill tables: random, easy, normal, hard or expert",
    ),
    _Opt(
        "--quickplay-bot-wait-seconds",
        "SPADES_QUICKPLAY_BOT_WAIT_SECONDS",
        "20",
        "how long a quick play ticket waits for other players before bots fill its table",
        float,
    ),
    _Opt(
        "--quickplay-turn-timer-ms",
        "SPADES_QUICKPLAY_TURN_TIMER_MS",
        "30000",
        "the turn timer of quick play tables (0: none)",
        int,
    ),
    _Opt(
        "--quickplay-lanes",
        "SPADES_QUICKPLAY_LANES",
        "1",
        "queues each quick play ruleset is split into, by player (a party by its pair), each "
        "matched apart: on a Redis Cluster each lane may be on another shard, so that one "
        "ruleset's players spread over several cores (docs/capacity.md); 1 to 64",
        int,
    ),
    _Opt(
        "--rating-pools",
        "SPADES_RATING_POOLS",
        "preset",
        "rated play's pools: preset (one per ruleset preset) or one (every table in one)",
    ),
    _Opt(
        "--rating-min-games",
        "SPADES_RATING_MIN_GAMES",
        "3",
        "rated games a player needs to appear on a leaderboard",
        int,
    ),
    _Opt(
        "--leaver-share",
        "SPADES_LEAVER_SHARE",
        "0.5",
        "a human whose stand-in played more than this share of their turns left a rated "
        "match (ranked below everyone at the table)",
        float,
    ),
    _Opt(
        "--rating-band",
        "SPADES_RATING_BAND",
        "5",
        "rated quick play seats players whose ratings (mu) differ by at most this at first",
        float,
    ),
    _Opt(
        "--rating-band-widen",
        "SPADES_RATING_BAND_WIDEN",
        "0.25",
        "how much wider the rating band grows each second a rated ticket waits",
        float,
    ),
    _Opt(
        "--result-check-seconds",
        "SPADES_RESULT_CHECK_SECONDS",
        "600",
        "a lobby match whose end no replica recorded (it died first) is looked at this "
        "long after its start, then again as long as it has run",
        float,
    ),
    _Opt(
        "--rated-bots",
        "SPADES_RATED_BOTS",
        "off",
        "bots at rated tables: off (a bot makes a table unrated), on (at their default "
        "fixed ratings, easy=13,normal=24,hard=28,expert=35), or each level's fixed mu, "
        "e.g. easy=12,expert=36",
    ),
    _Opt(
        "--party-wait-seconds",
        "SPADES_PARTY_WAIT_SECONDS",
        "120",
        "how long a party's first player waits for the partner to ask too",
        int,
    ),
    _Opt(
        "--rematch-seconds",
        "SPADES_REMATCH_SECONDS",
        "60",
        "how long a rematch waits for every human of the finished match to accept",
        int,
    ),
    _Opt(
        "--lobby-calls-per-second",
        "SPADES_LOBBY_CALLS_PER_SECOND",
        "5",
        "lobby changes (open, join, leave, quick play, cancel) per player per second, "
        "bursts of four times that",
        float,
    ),
    _Opt(
        "--start-lease-ms",
        "SPADES_START_LEASE_MS",
        "5000",
        "how long a replica has to deal a table whose seats are taken before another replica "
        "deals it (one that died meanwhile leaves it half started)",
        int,
    ),
    _Opt(
        "--table-seed",
        "SPADES_TABLE_SEED",
        "0",
        "testing only: deal every table of the lobby from this seed (conformance scenarios "
        "through the lobby); 0: a random seed per table, as players need",
        int,
    ),
    _Opt(
        "--max-waiting-tables",
        "SPADES_MAX_WAITING_TABLES",
        "100000",
        "tables waiting for players (or being dealt) before OpenTable is refused",
        int,
    ),
    _Opt("--log-level", "SPADES_LOG_LEVEL", "info", "debug, info, warning or error"),
    # Player credentials (JWTs of the game's identity provider): docs/security.md.
    _Opt(
        "--player-issuer",
        "SPADES_PLAYER_ISSUER",
        "",
        "the iss every player credential must carry (needed with a player key source)",
    ),
    _Opt(
        "--player-audience",
        "SPADES_PLAYER_AUDIENCE",
        "",
        "the aud every player credential must carry (needed with a player key source)",
    ),
    _Opt(
        "--player-public-key",
        "SPADES_PLAYER_PUBLIC_KEY",
        "",
        "PEM public key (or certificate) that signs player credentials: RSA (RS*/PS*), EC "
        "(ES256/384/512 by curve) or Ed25519/Ed448 (EdDSA). One key source at most; none: "
        "player credentials are off",
    ),
    _Opt(
        "--player-jwks",
        "SPADES_PLAYER_JWKS",
        "",
        "JWKS file of the keys that sign player credentials, chosen by kid; read again when "
        "it changes (rotate keys by rewriting it)",
    ),
    _Opt(
        "--player-hs256-secret",
        "SPADES_PLAYER_HS256_SECRET",
        "",
        "HMAC secret (at least 32 bytes) of player credentials signed HS256/384/512; for "
        "development, prefer a key pair",
    ),
    _Opt(
        "--player-id-claim",
        "SPADES_PLAYER_ID_CLAIM",
        "sub",
        "the claim that holds the player id (1 to 128 characters)",
    ),
    _Opt(
        "--player-name-claim",
        "SPADES_PLAYER_NAME_CLAIM",
        "name",
        "the claim that holds the name other players see (when absent: the player id)",
    ),
    _Opt(
        "--player-leeway-seconds",
        "SPADES_PLAYER_LEEWAY_SECONDS",
        "30",
        "clock skew allowed when checking a player credential's exp, nbf and iat",
        float,
    ),
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
    if args.store not in ("sqlite", "redis", "memory"):
        p.error("--store must be sqlite, redis or memory")
    if not 0 <= args.sqlite_commit_linger_ms <= MAX_COMMIT_LINGER_MS:
        p.error(f"--sqlite-commit-linger-ms must be 0 to {MAX_COMMIT_LINGER_MS:g}")
    _check_tls(p, args)
    if args.redis_mode not in ("single", "cluster"):
        p.error("--redis-mode must be single or cluster")
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", args.redis_prefix):
        p.error("--redis-prefix must be 1 to 64 letters, digits, '_', '.' or '-'")
    for flag in (
        "max_calls",
        "max_waiting_calls",
        "max_pending_calls",
        "max_calls_per_connection",
        "max_matches",
        "max_message_bytes",
        "streams_per_match",
        "chat_per_hand",
        "seat_changes_per_hand",
        "snapshot_every",
        "redis_wait_timeout_ms",
        "redis_max_connections",
    ):
        if getattr(args, flag) < 1:
            p.error(f"--{flag.replace('_', '-')} must be at least 1")
    for flag in (
        "actions_per_second",
        "request_timeout_seconds",
        "keepalive_timeout_seconds",
        "connection_age_grace_seconds",
    ):
        if not getattr(args, flag) > 0:
            p.error(f"--{flag.replace('_', '-')} must be more than 0")
    for flag in (
        "connection_idle_seconds",
        "connection_age_seconds",
        "keepalive_seconds",
        "min_client_ping_seconds",
        "poll_max_wait_ms",
        "redis_wait_replicas",
        "takeover_ms",
    ):
        if getattr(args, flag) < 0:
            p.error(f"--{flag.replace('_', '-')} must be 0 or more")
    _check_lobby(p, args)
    try:
        tracing.check(os.environ)  # the OTEL_* variables (docs/operations.md, "Traces")
    except tracing.TracingConfigError as e:
        p.error(str(e))
    from .players import PlayerAuthConfigError, player_auth

    try:
        player_auth(args)  # reads the key files now, so that a bad one stops the start
    except PlayerAuthConfigError as e:
        p.error(str(e))
    return args


def _check_lobby(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.lobby not in ("serve", "off"):
        p.error("--lobby must be serve or off")
    if args.bot_level not in BOT_LEVEL_NAMES:
        p.error(f"--bot-level must be one of {', '.join(BOT_LEVEL_NAMES)}")
    for flag in ("table_wait_seconds", "rematch_seconds", "party_wait_seconds"):
        if not 1 <= getattr(args, flag) <= 86_400:
            p.error(f"--{flag.replace('_', '-')} must be 1 to 86400")
    if not 0 <= args.quickplay_bot_wait_seconds <= 3600:
        p.error("--quickplay-bot-wait-seconds must be 0 to 3600")
    if not 0 <= args.quickplay_turn_timer_ms <= 3_600_000:
        p.error("--quickplay-turn-timer-ms must be 0 to 3600000")
    if not 1 <= args.quickplay_lanes <= 64:
        p.error("--quickplay-lanes must be 1 to 64")
    if not args.lobby_calls_per_second > 0:
        p.error("--lobby-calls-per-second must be more than 0")
    if args.max_waiting_tables < 1:
        p.error("--max-waiting-tables must be at least 1")
    if not 100 <= args.start_lease_ms <= 600_000:
        p.error("--start-lease-ms must be 100 to 600000")
    if not 0 <= args.table_seed < 2**63:
        p.error("--table-seed must be 0 to 2**63-1")
    if args.rating_pools not in ("preset", "one"):
        p.error("--rating-pools must be preset or one")
    if not 0 <= args.rating_min_games <= 1000:
        p.error("--rating-min-games must be 0 to 1000")
    if not 0 <= args.leaver_share <= 1:
        p.error("--leaver-share must be 0 to 1")
    if not 0.1 <= args.result_check_seconds <= 86_400:
        p.error("--result-check-seconds must be 0.1 to 86400")
    if not 0 <= args.rating_band <= 1000 or not 0 <= args.rating_band_widen <= 1000:
        p.error("--rating-band and --rating-band-widen must be 0 to 1000")
    try:
        rated_bots(args.rated_bots)
    except ValueError as e:
        p.error(f"--rated-bots: {e}")


def rated_bots(text: str) -> RatedBots:
    """``--rated-bots``: off, on, or level=mu pairs (the levels not named
    keep their default rating)."""
    if text == "off":
        return RatedBots()
    ratings = dict(RatedBots().ratings)
    if text != "on":
        for part in text.split(","):
            name, _, mu = part.partition("=")
            if name.strip() not in BOT_LEVEL_NAMES:
                raise ValueError(f"{name.strip()!r} is not a bot level")
            value = float(mu)
            if not 0 <= value <= 100:
                raise ValueError("a bot's mu must be 0 to 100")
            ratings[BOT_LEVEL_NAMES[name.strip()]] = Rating(value, 1.0)
    return RatedBots(True, ratings)


def lobby_settings(args: argparse.Namespace) -> Settings:
    level = BOT_LEVEL_NAMES[args.bot_level]
    return Settings(
        table_wait_s=args.table_wait_seconds,
        bot_level=level,
        rematch_s=args.rematch_seconds,
        quickplay_bot_wait_s=args.quickplay_bot_wait_seconds,
        quickplay_bot_level=level,
        quickplay_timer_ms=args.quickplay_turn_timer_ms,
        quickplay_lanes=args.quickplay_lanes,
        party_wait_s=args.party_wait_seconds,
        player_calls_per_second=args.lobby_calls_per_second,
        poll_max_wait_ms=args.poll_max_wait_ms,
        max_waiting_tables=args.max_waiting_tables,
        table_seed=args.table_seed,
        start_lease_ms=args.start_lease_ms,
        rated_bots=rated_bots(args.rated_bots),
        rating_pools=args.rating_pools,
        rating_min_games=args.rating_min_games,
        leaver_share=args.leaver_share,
        rating_band=Band(args.rating_band, args.rating_band_widen),
        result_check_ms=int(args.result_check_seconds * 1000),
    )


def _check_tls(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse a TLS setting that cannot work before anything listens."""
    if bool(args.tls_cert) != bool(args.tls_key):
        p.error("--tls-cert and --tls-key go together")
    if args.tls_client_ca and not args.tls_cert:
        p.error("--tls-client-ca needs --tls-cert and --tls-key (mutual TLS is TLS)")
    for flag in ("tls_cert", "tls_key", "tls_client_ca"):
        path = getattr(args, flag)
        if path and not os.access(path, os.R_OK):
            p.error(f"--{flag.replace('_', '-')}: cannot read {path}")
    # The standard library's TLS reads the files as gRPC will, and says what
    # is wrong with them (gRPC would only fail to bind the port).
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    if args.tls_cert:
        try:
            context.load_cert_chain(args.tls_cert, args.tls_key)
        except ssl.SSLError as e:
            p.error(f"--tls-cert {args.tls_cert} and --tls-key {args.tls_key}: {e.reason or e}")
    if args.tls_client_ca:
        try:
            context.load_verify_locations(cafile=args.tls_client_ca)
        except ssl.SSLError as e:
            p.error(f"--tls-client-ca {args.tls_client_ca}: {e.reason or e}")
    if not 0 <= args.operator_port <= 65535:
        p.error("--operator-port must be 0 to 65535")


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def add_ports(server: grpc.aio.Server, args: argparse.Namespace) -> tuple[int, int | None]:
    """Listen on the gRPC port (TLS with --tls-cert) and, with
    --tls-client-ca, on the operator port, where the TLS handshake requires a
    client certificate that CA signed. gRPC's Python API cannot ask for a
    certificate without requiring one, hence a port of its own: players have
    no certificate. Returns the ports bound (the operator's: None if off)."""
    address = f"{args.host}:{args.port}"
    if not args.tls_cert:
        return server.add_insecure_port(address), None
    pair = [(_read(args.tls_key), _read(args.tls_cert))]
    port = server.add_secure_port(address, grpc.ssl_server_credentials(pair))
    if not args.tls_client_ca:
        return port, None
    mutual = grpc.ssl_server_credentials(
        pair, root_certificates=_read(args.tls_client_ca), require_client_auth=True
    )
    return port, server.add_secure_port(f"{args.host}:{args.operator_port}", mutual)


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def grpc_options(args: argparse.Namespace) -> list[tuple[str, int]]:
    """The gRPC core settings of the server's connections (see docs/api.md, Limits)."""
    options = [
        ("grpc.max_receive_message_length", args.max_message_bytes),
        ("grpc.max_send_message_length", 64 * 1024 * 1024),
        ("grpc.max_concurrent_streams", args.max_calls_per_connection),
        # Calls gRPC queues before the event loop takes them up (per method): a
        # flood past the loop's pace is cancelled there, before any Python runs
        # for it, instead of holding memory (gRPC's own 1000 to 3000 held about
        # 30 MB more of 10,000 calls over 100 connections: bench/hung_calls.py).
        ("grpc.server.max_pending_requests", args.max_pending_calls),
        ("grpc.server.max_pending_requests_hard_limit", args.max_pending_calls),
        # Clients may keep idle connections alive with pings this far apart.
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_ping_interval_without_data_ms", _ms(args.min_client_ping_seconds)),
        ("grpc.http2.max_ping_strikes", 2),
        # The server's own pings go on however long a stream stays quiet (a Play
        # call between actions), so a vanished client's calls end.
        ("grpc.http2.max_pings_without_data", 0),
    ]
    if args.keepalive_seconds > 0:
        options += [
            ("grpc.keepalive_time_ms", _ms(args.keepalive_seconds)),
            ("grpc.keepalive_timeout_ms", _ms(args.keepalive_timeout_seconds)),
        ]
    if args.connection_idle_seconds > 0:
        options.append(("grpc.max_connection_idle_ms", _ms(args.connection_idle_seconds)))
    if args.connection_age_seconds > 0:
        options += [
            ("grpc.max_connection_age_ms", _ms(args.connection_age_seconds)),
            ("grpc.max_connection_age_grace_ms", _ms(args.connection_age_grace_seconds)),
        ]
    return options


def log_processors() -> list[structlog.typing.Processor]:
    """The server's log line: JSON, with the call's fields (and, with tracing
    on, the ids of the current span)."""
    return [
        structlog.contextvars.merge_contextvars,
        *tracing.log_processors(),
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
        structlog.processors.JSONRenderer(),
    ]


def configure_logging(level: str) -> None:
    logging.basicConfig(format="%(message)s", stream=sys.stderr, level=level.upper())
    structlog.configure(
        processors=log_processors(),
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )


def make_store(args: argparse.Namespace) -> Store:
    if args.store == "memory":
        return MemoryStore()
    if args.store == "redis":
        from .store.redis import RedisStore  # redis-py is needed only here
        from .store.redis_cluster import redis_target

        url, cluster = redis_target(args.redis_url, args.redis_mode)
        return RedisStore(
            url,
            args.redis_prefix,
            cluster=cluster,
            wait_replicas=args.redis_wait_replicas,
            wait_timeout_ms=args.redis_wait_timeout_ms,
            max_connections=args.redis_max_connections,
        )
    return SqliteStore(
        args.db,
        synchronous=args.sqlite_synchronous,
        busy_timeout_ms=args.sqlite_busy_timeout_ms,
        commit_linger_ms=args.sqlite_commit_linger_ms,
    )


async def serve(args: argparse.Namespace, stop: asyncio.Event | None = None) -> None:
    """Serve until SIGTERM or SIGINT (or until ``stop`` is set, when given:
    an in-process server of the tests), then drain."""
    limits = SessionLimits(
        streams_per_match=args.streams_per_match,
        actions_per_second=args.actions_per_second,
        action_burst=max(1, int(args.actions_per_second * 2)),
        chat_per_hand=args.chat_per_hand,
        seat_changes_per_hand=args.seat_changes_per_hand,
        snapshot_every=args.snapshot_every,
        bot_delay_s=args.bot_delay_ms / 1000.0,
        takeover_ms=args.takeover_ms,
    )
    store = make_store(args)
    registry = Registry(store, limits, args.max_matches, args.unload_after_seconds)
    restored = await registry.restore_all()
    registry.start()
    operator_token = args.operator_token or secrets.token_urlsafe(24)

    calls.configure(
        request_timeout_s=args.request_timeout_seconds,
        max_calls=args.max_calls,
        max_waiting=args.max_waiting_calls,
    )
    server = grpc.aio.server(
        options=grpc_options(args), interceptors=tracing.server_interceptors() or None
    )
    spades = SpadesService(
        registry,
        operator_token,
        args.poll_max_wait_ms,
        operator_needs_client_cert=bool(args.tls_client_ca),
    )
    add_to_server(spades, server)
    lobby = await start_lobby(
        store,
        registry,
        player_auth(args),
        SeatKeys.from_settings(args.seat_token_key, operator_token),
        lobby_settings(args),
        serve=args.lobby == "serve",
    )
    if lobby.service is not None:
        add_to_server(lobby.service, server, "LobbyService")
    served = (SERVICE_NAME, LOBBY_SERVICE_NAME) if lobby.service else (SERVICE_NAME,)
    health_servicer = health.aio.HealthServicer()
    calls.add_service(server, health_pb2.DESCRIPTOR.services_by_name["Health"], health_servicer)
    calls.add_service(
        server,
        reflection_pb2.DESCRIPTOR.services_by_name["ServerReflection"],
        reflection.aio.ReflectionServicer(
            (*served, health.SERVICE_NAME, reflection.SERVICE_NAME),
            pool=MethodAwarePool(),  # duck-typed: the lookups reflection makes
        ),
    )
    port, operator_port = add_ports(server, args)
    await server.start()
    for name in ("", *served):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)

    metrics_url = "off"
    if args.metrics_port >= 0:
        httpd, _ = start_http_server(args.metrics_port, addr=args.host)
        metrics_url = f"http://{args.host}:{httpd.server_port}/metrics"
    log.info(
        "server started",
        grpc=f"{args.host}:{port}",
        tls=bool(args.tls_cert),
        operator_port=operator_port,
        metrics=metrics_url,
        store=args.store,
        restored_matches=restored,
        traces=tracing.described(),
    )
    if operator_port is not None:  # before the line harnesses wait for
        print(f"operator port {args.host}:{operator_port} (mutual TLS)", flush=True)
    print(
        f"spades-server listening on {args.host}:{port} (gRPC); metrics at {metrics_url}"
        + (" (gRPC over TLS)" if args.tls_cert else ""),
        flush=True,
    )
    if not args.operator_token:
        print(f"operator token: {operator_token}", flush=True)
    edges = EdgeListener(spades)
    if args.edge_link:
        print(f"edge link at {await edges.start(args.edge_link)}", flush=True)

    observe_gc_pauses()
    tune_gc()
    await (stop or _stop_on_signals()).wait()

    log.info("draining", grace_seconds=args.grace_seconds)
    for name in ("", *served):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
    await lobby.close()  # no more matchmaking or sweeping here
    await registry.close()  # refuse new actions, end streams with UNAVAILABLE
    log.info("matches closed")
    await server.stop(args.grace_seconds)
    await edges.stop()
    log.info("calls ended")
    calls.REQUEST_WAIT.stop()
    await store.close()
    if tracing.ON:
        await asyncio.to_thread(tracing.shutdown)  # the spans still held, exported
    log.info("stopped")


def _stop_on_signals() -> asyncio.Event:
    """An event that SIGTERM or SIGINT sets."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop


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
    tracing.configure()  # the OTEL_* variables, checked by parse_args
    configure_logging(args.log_level)
    asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
