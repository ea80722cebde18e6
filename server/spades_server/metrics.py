"""Prometheus metrics, served on their own HTTP port."""

from __future__ import annotations

import gc
import time
from typing import Any

from prometheus_client import Counter, Gauge, Histogram

_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

RPCS = Counter("spades_rpcs_total", "RPCs handled, by method and status code", ["method", "code"])
RPC_LATENCY = Histogram(
    "spades_rpc_latency_seconds",
    "RPC latency (unary; streams until the first message)",
    ["method"],
    buckets=_LATENCY_BUCKETS,
)
ACTIVE_MATCHES = Gauge("spades_active_matches", "Matches loaded in this process and not over")
LOADED_MATCHES = Gauge(
    "spades_loaded_matches", "Matches held in this process's memory, over or not"
)
OPEN_STREAMS = Gauge("spades_open_streams", "Event streams open (seats and spectators)")
ACTIONS = Counter("spades_actions_total", "Actions applied, by type and by whom", ["type", "by"])
REJECTIONS = Counter("spades_rejections_total", "Requests refused, by reason", ["reason"])
STORE_LATENCY = Histogram(
    "spades_store_latency_seconds", "Store call latency", ["op"], buckets=_LATENCY_BUCKETS
)
BOT_THINK = Histogram(
    "spades_bot_think_seconds", "Bot decision time", ["level"], buckets=_LATENCY_BUCKETS
)
BOT_FAILURES = Counter(
    "spades_bot_failures_total",
    "Bot decisions that failed (an unknown level, an exception, an action the rules refuse) "
    "and were replaced by a legal action, by level",
    ["level"],
)
REPLICA_EVENTS = Counter(
    "spades_replica_events_total",
    "On a shared store (Redis): catch_up (another replica's appends read), conflict (an "
    "append lost a race and the match was rebuilt), takeover (a due match driven here)",
    ["kind"],
)
GC_PAUSE = Histogram(
    "spades_gc_pause_seconds",
    "Collections of the cyclic garbage collector, which stop the event loop, by generation",
    ["generation"],
    buckets=_LATENCY_BUCKETS,
)


def observe_gc_pauses() -> None:
    """Time every collection: a pause of the event loop shows in every RPC's
    latency, so a tail an operator sees may be the collector's."""
    started = [0.0]
    generations = [GC_PAUSE.labels(str(g)) for g in range(3)]

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            generations[info["generation"]].observe(time.perf_counter() - started[0])

    gc.callbacks.append(on_gc)
