#!/usr/bin/env python3
"""The capacity model of docs/capacity.md, computed from its measured inputs.

Every input below is a figure a bench script printed (named beside it) or
the workload the model assumes; the table it prints is the model's table
in docs/capacity.md, row for row (tests/project/test_capacity_model.py
checks that the document shows what this prints), and the lines after it
are where the busiest quick-play shard reaches half a core and a full one.

    python3 bench/capacity_model.py [--slot-per-replica-us 90] [--lanes 4]

Change an input with its option to see the model move (``--help`` lists
them); the document shows the defaults.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, fields

TABLES = (10_000, 100_000, 1_000_000)
GIB = 1024**3


@dataclass
class Inputs:
    # The workload (assumed): a table of people acts every 4 s, a match
    # lasts 30 minutes, each table has its four seats' streams open.
    actions_per_table_s: float = 0.25
    match_s: float = 1800.0
    streams_per_table: int = 4
    tickets_per_table: int = 4
    # bench/capacity.py, shards part: server CPU per action with a table's
    # seats on one replica (together) and on three (spread).
    server_us_together: float = 700.0
    server_us_spread: float = 1500.0
    replica_core_share: float = 0.6  # planning level of a replica's core
    # bench/capacity.py: Redis CPU, network bytes both ways, per action.
    redis_us: float = 75.0
    redis_bytes: float = 660.0
    primary_core_share: float = 0.5  # planning level of a primary's core
    least_primaries: int = 3  # a Redis Cluster's least
    # bench/capacity.py, idle; bench/replicas.py, memory part.
    redis_kib_idle_table: float = 6.3
    redis_kib_hand: float = 5.7
    hands_in_play: float = 4.0  # on average, half of a ten-hand match
    replica_kib_table: float = 215.0  # with its four streams (an upper bound)
    # bench/lobby_slot.py: Redis CPU per quick-play ticket on the primary
    # that holds its queue's shard, with players in a crowd, and what each
    # replica that follows the lobby adds (fanout part).
    slot_us_ticket: float = 400.0
    slot_per_replica_us: float = 90.0
    # The replicas that serve the lobby when the others run `--lobby off`
    # (a deployment's choice: the lobby's calls routed to them).
    lobby_replicas: int = 3
    # The most played ruleset's share of the tickets (assumed), and the
    # lanes its queue is split into (`--quickplay-lanes`, a deployment's
    # choice), each in the shard its name hashes to.
    top_ruleset_share: float = 0.5
    lanes: int = 4
    # bench/lobby_slot.py, cluster part: what a ticket costs its shard's
    # primary with the ruleset in 4 lanes over one lane (547-564 µs a ticket
    # of its lanes against 408-417): each look at a queue and each feed read
    # carries fewer tickets.
    lane_factor: float = 1.35
    # bench/lobby_slot.py, followers part: the feed's bytes per event per
    # replica, and events per ticket.
    feed_bytes_event: float = 470.0
    feed_events_ticket: float = 2.5
    # bench/lobby_slot.py, opened part: what a table opened by a player and
    # joined by three (each after a page of the listing) costs the primary
    # of `{lobby}`, with 3 replicas serving the lobby: 1,044-1,446 µs over
    # five runs of the same code, 94-97 commands a table in each (the
    # spread is the machine's); the model takes their middle.
    opened_us_table: float = 1300.0


def replicas(inp: Inputs, tables: float, us_per_action: float) -> int:
    cores = tables * inp.actions_per_table_s * us_per_action / 1e6
    return math.ceil(cores / inp.replica_core_share - 1e-9)


def slot_cores(inp: Inputs, tables: float, replica_count: float, lanes: int = 1) -> float:
    """The busiest quick-play shard's CPU: the top ruleset's tickets, one
    lane's share of them."""
    tickets = tables * inp.tickets_per_table / inp.match_s * inp.top_ruleset_share / lanes
    factor = inp.lane_factor if lanes > 1 else 1.0
    return tickets * factor * (inp.slot_us_ticket + replica_count * inp.slot_per_replica_us) / 1e6


def rows(inp: Inputs) -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []

    def row(label: str, values: list[str]) -> None:
        out.append((label, values))

    actions = [t * inp.actions_per_table_s for t in TABLES]
    together = [replicas(inp, t, inp.server_us_together) for t in TABLES]
    spread = [replicas(inp, t, inp.server_us_spread) for t in TABLES]
    redis_cores = [a * inp.redis_us / 1e6 for a in actions]
    primaries = [
        max(inp.least_primaries, math.ceil(c / inp.primary_core_share - 1e-9)) for c in redis_cores
    ]
    table_kib = inp.redis_kib_idle_table + inp.redis_kib_hand * inp.hands_in_play
    redis_gib = [t * table_kib * 1024 / GIB for t in TABLES]
    replica_gib = [t * inp.replica_kib_table * 1024 / GIB for t in TABLES]
    tickets = [t * inp.tickets_per_table / inp.match_s for t in TABLES]
    row("actions/s", [f"{a:,.0f}" for a in actions])
    row(
        f"server CPU busy, together ({inp.server_us_together:,.0f} µs/action)",
        [_cores(a * inp.server_us_together / 1e6) for a in actions],
    )
    row(
        f"**service replicas** at {100 * inp.replica_core_share:.0f} % of a core each",
        [f"**{n:,}**" for n in together],
    )
    row(
        f"the same with spread seats ({inp.server_us_spread:,.0f} µs/action at 3 replicas)",
        [f"{n:,}" for n in spread],
    )
    row(f"Redis CPU busy ({inp.redis_us:,.0f} µs/action)", [_cores(c) for c in redis_cores])
    row(
        f"**Redis primaries** at {100 * inp.primary_core_share:.0f} % of a core each",
        [
            f"**{p}** (a cluster's least)" if p == inp.least_primaries else f"**{p}**"
            for p in primaries
        ],
    )
    row(
        "Redis nodes with one replica each (for `--redis-wait-replicas 1`)",
        [str(2 * p) for p in primaries],
    )
    row(
        f"Redis memory in play ({inp.redis_kib_idle_table:g} KiB + {inp.redis_kib_hand:g} KiB "
        f"a hand, {inp.hands_in_play:g} hands on average)",
        [_gib(g) for g in redis_gib],
    )
    row("the same per primary", [_gib(g / p) for g, p in zip(redis_gib, primaries, strict=True)])
    row(
        f"replica memory (at most {inp.replica_kib_table:g} KiB a table with its streams)",
        [_gib(g) for g in replica_gib],
    )
    row("the same per replica", [_gib(g / n) for g, n in zip(replica_gib, together, strict=True)])
    streams = [t * inp.streams_per_table for t in TABLES]
    row(f"open streams ({inp.streams_per_table} per table)", [f"{s:,}" for s in streams])
    row(
        "the same per replica",
        [f"{_round2(s / n):,}" for s, n in zip(streams, together, strict=True)],
    )
    row(
        f"Redis network, both ways ({inp.redis_bytes:,.0f} B/action)",
        [_rate(a * inp.redis_bytes) for a in actions],
    )
    row(
        f"new matches per second ({inp.match_s / 60:g}-minute matches)",
        [_per_s(t / inp.match_s) for t in TABLES],
    )
    row(
        f"quick-play tickets per second ({inp.tickets_per_table} a match)",
        [f"{k:,.0f}" for k in tickets],
    )
    share = inp.top_ruleset_share
    top = [k * share for k in tickets]
    row(
        f"**the busiest quick-play shard's CPU**: {100 * share:.0f} % of the tickets in one "
        f"ruleset, one lane ({inp.slot_us_ticket:,.0f} µs a ticket + "
        f"{inp.slot_per_replica_us:,.0f} µs a ticket per replica)",
        [f"**{_cores(slot_cores(inp, t, n))}**" for t, n in zip(TABLES, together, strict=True)],
    )
    row(
        f"the feed's bytes out of that primary ({inp.feed_bytes_event:g} B an event, "
        f"{inp.feed_events_ticket:g} a ticket, to every replica)",
        [
            _rate(k * inp.feed_events_ticket * inp.feed_bytes_event * n)
            for k, n in zip(top, together, strict=True)
        ],
    )
    lobby = [min(inp.lobby_replicas, n) for n in together]
    row(
        f"the same shard with the lobby on {inp.lobby_replicas} replicas "
        "(the others `--lobby off`)",
        [_cores(slot_cores(inp, t, n)) for t, n in zip(TABLES, lobby, strict=True)],
    )
    row(
        f"**the busiest shard with the lobby on {inp.lobby_replicas} replicas and the "
        f"ruleset in {inp.lanes} lanes** ({inp.lane_factor:g} × the cost a ticket)",
        [
            f"**{_cores(slot_cores(inp, t, n, inp.lanes))}**"
            for t, n in zip(TABLES, lobby, strict=True)
        ],
    )
    row(
        "the feed's bytes out of that primary, then",
        [
            _rate(k * inp.feed_events_ticket * inp.feed_bytes_event * n / inp.lanes)
            for k, n in zip(top, lobby, strict=True)
        ],
    )
    row(
        f"**the `{{lobby}}` primary if every table is opened by players** "
        f"({inp.opened_us_table:,.0f} µs a table, the lobby on {inp.lobby_replicas} replicas)",
        [f"**{_cores(opened_cores(inp, t))}**" for t in TABLES],
    )
    return out


def opened_cores(inp: Inputs, tables: float) -> float:
    """The `{lobby}` primary's CPU when players open every table (none
    through quick play): the tables they open, the public listing's feed."""
    return tables / inp.match_s * inp.opened_us_table / 1e6


def opened_limit(inp: Inputs, cores: float) -> int:
    """The tables at which `opened_cores` is ``cores``."""
    return int(round(cores * 1e6 / inp.opened_us_table * inp.match_s, -3))


def slot_limit(inp: Inputs, cores: float, lobby_only: bool = False, lanes: int = 1) -> int:
    """The tables at which the busiest shard spends ``cores`` (replicas as
    the model's, together; ``lobby_only``: only ``lobby_replicas`` of them
    follow the lobby; ``lanes``: the top ruleset's)."""
    low, high = 1_000, 1_000_000_000
    while high - low > 1_000:
        mid = (low + high) // 2
        n = mid * inp.actions_per_table_s * inp.server_us_together / 1e6 / inp.replica_core_share
        if lobby_only:
            n = min(n, inp.lobby_replicas)
        if slot_cores(inp, mid, n, lanes) < cores:
            low = mid
        else:
            high = mid
    return round(low, -3)


def table(inp: Inputs) -> str:
    head = "| | " + " | ".join(f"{t:,} tables" for t in TABLES) + " |"
    lines = [head, "|---|" + "---:|" * len(TABLES)]
    lines += [f"| {label} | " + " | ".join(values) + " |" for label, values in rows(inp)]
    return "\n".join(lines)


def _cores(c: float) -> str:
    if c < 0.1:
        return f"{c:.3f} cores"
    if c < 10:
        return f"{c:.2f} cores" if c < 1 else f"{c:.1f} cores"
    return f"{c:,.0f} cores"


def _gib(g: float) -> str:
    return f"{g:.2f} GiB" if g < 0.1 else f"{g:.1f} GiB" if g < 10 else f"{g:,.0f} GiB"


def _rate(b: float) -> str:
    if b >= 1e9:
        return f"{b / 1e9:.1f} GB/s"
    return (
        f"{b / 1e6:.2f} MB/s"
        if b < 1e6
        else f"{b / 1e6:,.1f} MB/s"
        if b < 1e8
        else f"{b / 1e6:,.0f} MB/s"
    )


def _per_s(x: float) -> str:
    return f"{x:.1f}" if x < 100 else f"{x:,.0f}"


def _round2(x: float) -> int:
    """Two significant figures: a per-replica count is not more precise."""
    digits = max(0, len(str(int(x))) - 2)
    return int(round(x, -digits))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    for f in fields(Inputs):
        ap.add_argument(f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default)
    args = ap.parse_args(argv)
    inp = Inputs(**{f.name: getattr(args, f.name) for f in fields(Inputs)})
    print(table(inp))
    print()
    print(
        f"the busiest shard at half a core: about {slot_limit(inp, 0.5):,} tables; "
        f"at a full core: about {slot_limit(inp, 1.0):,} tables"
    )
    print(
        f"with the lobby on {inp.lobby_replicas} replicas: about "
        f"{slot_limit(inp, 0.5, True):,} and {slot_limit(inp, 1.0, True):,} tables"
    )
    lanes = inp.lanes
    print(
        f"and the ruleset in {lanes} lanes: about "
        f"{slot_limit(inp, 0.5, True, lanes):,} and {slot_limit(inp, 1.0, True, lanes):,} tables"
    )
    print(
        f"the {{lobby}} primary with every table opened by players: about "
        f"{opened_limit(inp, 0.5):,} and {opened_limit(inp, 1.0):,} tables"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
