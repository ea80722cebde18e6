#!/usr/bin/env python3
"""Server efficiency against Colyseus (issue 25), side by side on one machine.

Three servers, each a subprocess on a loopback port, a fresh one for every run:

* **colyseus**: ``node bench/peer/colyseus/server.mjs --port P`` (Colyseus 0.16,
  one room a table, each seat's hand hidden by a StateView, a patch per action;
  bench/peer/colyseus/README.md);
* **memory**: ours, ``python -m spades_server.main --store memory``;
* **sqlite**: ours on the embedded SQLite store (synchronous FULL);
* **edge**, **edge-sqlite**: the same two behind the prototype's Go edge
  (bench/edge/, docs/architecture.md "Past the Python gRPC floor"): the server
  started with ``--edge-link``, the edge holding the seats' ``Play`` calls
  (CreateMatch and ClaimSeat still go to the server); server CPU and memory
  are both processes' together. Built with ``go build`` when Go is here,
  skipped otherwise;

ours started exactly as bench/server.py starts it (bench/processes.py's
``start_server``: a rate limit of 1,000,000 actions a second, so that it never
refuses). Each is driven by its own Node load generator, on one contract
(bench/peer/README.md):
``bench/peer/colyseus/loadgen.mjs`` (colyseus.js, one WebSocket a seat) and
``bench/peer/spades-load.mjs`` (our TypeScript client, one HTTP/2 connection
and one ``Play`` call a seat). Every seat plays legal moves when its turn
comes, after a think time drawn from 0.5T..1.5T.

Scenarios (``--scenario``):

* **saturated**: 50 tables, T = 0 (a seat acts as soon as its turn shows);
* **paced**: 100 tables, T = 100 ms (each table's first action staggered over
  56T, which the warm-up waits out);
* **memory**: VmRSS of the server (/proc/PID/status) idle after a warm-up (20
  tables seated, then their clients gone), then with ``--memory-tables``
  tables of four connected seats (no action), then with their clients gone
  (the matches or rooms stay).

The load scenarios run in alternating rounds (colyseus, memory, sqlite, then
again), and report medians over the rounds. For each run: the server's CPU
seconds (utime + stime from /proc/PID/stat, read when the load generator
prints ``measure-start`` and ``measure-end``) per 1,000 actions, actions/s,
latency p50/p99 from sending an action to the acting seat's acknowledgement
(ours: the ``ActionResult``; Colyseus: the patch with the action) and to each
other seat's event or patch, the load generator's own CPU, and the CPU of
every other process of the machine (a warning above 10 % of a core).

    cd bench/peer/colyseus && npm ci
    .venv/bin/python bench/peer.py [--rounds 3] [--seconds 15] [--warmup-s 5]
        [--only colyseus,memory,sqlite,edge,edge-sqlite] [--scenario saturated,paced,memory]
        [--tables N] [--memory-tables 200] [--json PATH]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import json
import math
import os
import platform
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

import edge  # bench/edge.py
from cpu_usage import cpu_seconds, machine_busy_seconds, warn_if_disturbed
from load import print_grid
from processes import (
    COLYSEUS,
    OPERATOR_TOKEN,
    ROOT,
    rss_kib,
    start_colyseus,
    start_listening,
    start_server,
    tail,
)

OURS_LOADGEN = ROOT / "bench" / "peer" / "spades-load.mjs"
TS_CLIENT = ROOT / "clients" / "typescript" / "dist" / "src" / "index.js"

SERVERS = ("colyseus", "memory", "sqlite", "edge", "edge-sqlite")
LABELS = {
    "colyseus": "Colyseus",
    "memory": "ours memory",
    "sqlite": "ours SQLite",
    "edge": "edge+memory",
    "edge-sqlite": "edge+SQLite",
}
EDGE_BIN = edge.BIN / "edge"
SCENARIOS = ("saturated", "paced", "memory")
# scenario -> (tables, think ms)
LOADS = {"saturated": (50, 0.0), "paced": (100, 100.0)}
STAGGER_ACTIONS = 56  # a table's first action waits 0..56T (one hand: 4 bids, 52 cards)
MEMORY_WARMUP_TABLES = 20
SETUP_TIMEOUT_S = 300.0  # seating every table
EVENT_SLACK_S = 60.0  # past its due time, what a contract line may take
LATENCIES = ("acting_p50_ms", "acting_p99_ms", "others_p50_ms", "others_p99_ms")


# -- processes -----------------------------------------------------------------------


@dataclass
class RunningServer:
    kind: str
    pids: list[int]  # the server's processes themselves, whose CPU and memory are read
    url: str  # what its load generator's --url takes
    stop: Callable[[], None]
    play_url: str = ""  # where its Play calls go, if not to url (an edge)
    metrics_url: str = ""  # ours: its Prometheus endpoint

    def cpu_seconds(self) -> list[float]:
        """Each process's (the server, then the edge if any)."""
        return [cpu_seconds(pid) for pid in self.pids]

    def rss_kib(self) -> int:
        return sum(rss_kib(pid) for pid in self.pids)


def start(kind: str, workdir: Path, linger_ms: float = 0) -> RunningServer:
    """A fresh server of this kind, listening on a loopback port; a SQLite
    store commits with ``--sqlite-commit-linger-ms linger_ms``."""
    if kind == "colyseus":
        return colyseus(workdir)
    store = {"edge": "memory", "edge-sqlite": "sqlite"}.get(kind, kind)
    # A unix socket, as an edge beside its server would use: over TCP loopback
    # each LinkDown's send also runs the receiving side's TCP in the server.
    link = ["--edge-link", f"unix:{workdir / 'link.sock'}"] if kind.startswith("edge") else []
    extra = list(link)
    if store == "sqlite":
        extra += ["--sqlite-commit-linger-ms", str(linger_ms)]
    server = start_server(store, workdir, extra)
    # Popen ran the interpreter itself (no shell, no wrapper): its pid is the
    # server's. Checked, since every figure is read from it.
    cmdline = Path(f"/proc/{server.pid}/cmdline").read_bytes().split(b"\0")
    if b"spades_server.main" not in cmdline:
        server.stop()
        raise RuntimeError(f"pid {server.pid} is not the server: {cmdline!r}")
    running = RunningServer(kind, [server.pid], server.address, server.stop)
    running.metrics_url = server.metrics_url  # read for its collector's pauses
    if link:
        return start_edge(running, server.proc, workdir)
    return running


def start_edge(server: RunningServer, proc: subprocess.Popen[str], workdir: Path) -> RunningServer:
    """The Go edge in front of a server started with --edge-link."""
    assert proc.stdout is not None
    core = ""
    for _ in range(5):  # after the ready line: the operator token, then the link's
        line = proc.stdout.readline()
        if line.startswith("edge link at "):
            core = line.split()[-1]
            break
    if not core:
        server.stop()
        raise RuntimeError("the server printed no edge link address")
    cmd = [str(EDGE_BIN), "--listen", "127.0.0.1:0", "--core", core]
    try:
        edge_proc, address = start_listening("edge", cmd, workdir / "edge.log")
    except RuntimeError:
        server.stop()
        raise

    def stop() -> None:
        edge_proc.stop()  # SIGTERM: the edge prints its link's counts
        server.stop()

    running = RunningServer(server.kind, [*server.pids, edge_proc.pid], server.url, stop, address)
    running.metrics_url = server.metrics_url
    return running


def edge_link_counts(workdir: Path) -> str:
    """The edge's own count of its link's traffic over its whole life (set-up and
    warm-up included), which it prints when stopped."""
    log = tail(workdir / "edge.log", 4000).splitlines()
    lines = [x for x in log if x.startswith("edge: link:")]
    return lines[-1].removeprefix("edge: link: ") if lines else ""


def gc_pauses(metrics_url: str) -> tuple[float, float, float]:
    """The server's collector pauses so far (spades_gc_pause_seconds, every
    generation): seconds in all, how many, and how many over 5 ms."""
    with urllib.request.urlopen(metrics_url, timeout=5) as r:
        text = r.read().decode()
    total = count = under_5ms = 0.0
    for family in text_string_to_metric_families(text):
        if family.name != "spades_gc_pause_seconds":
            continue
        for sample in family.samples:
            if sample.name.endswith("_sum"):
                total += sample.value
            elif sample.name.endswith("_count"):
                count += sample.value
            elif sample.name.endswith("_bucket") and sample.labels.get("le") == "0.005":
                under_5ms += sample.value
    return total, count, count - under_5ms


# --profile: the Python server's GIL-held samples sorted into the parts of an
# action. A sample belongs to the first rule that matches walking its stack
# from the innermost frame outwards (a rule: the part, and text a frame holds).
PROFILE_PARTS: list[tuple[str, tuple[str, ...]]] = [
    ("metrics", ("prometheus_client/",)),
    ("logging", ("structlog/",)),
    ("snapshot", ("Session._maybe_snapshot",)),
    ("store", ("Store.append", "Store._submit", "store/sqlite.py", "store/memory.py")),
    ("event payloads", ("engine_payloads", "convert.py")),
    ("per call: credential, log walk, results", ("EdgeLink._serve",)),
    ("stream writes", ("EventLog.pump",)),
    ("link out: LinkDown built and written", ("EdgeLink._flush",)),
    ("link in: LinkUp read and parsed", ("EdgeLink.data_received",)),
    (
        "actions: parse, checks, lock, engine, log, answer",
        (
            "session.py",
            "event_log.py",
            "SpadesService._act",
            "SpadesService.play_action",
            "EdgeLink._act",
        ),
    ),
    (
        "gRPC calls: reading, the Play handler",
        ("Reader.", "Outbox.", "first_request", "SpadesService.Play ", "rpc.py"),
    ),
]
LOOP_PART = "event loop: wake-ups, tasks, select"
PROFILE_RATE = 250


def profile_part(frames: list[str]) -> str:
    for frame in reversed(frames):
        for part, texts in PROFILE_PARTS:
            if any(t in frame for t in texts):
                return part
    return LOOP_PART


def start_profile(pid: int, seconds: float, out: Path) -> subprocess.Popen[bytes] | None:
    """py-spy sampling the server's GIL-held time for ``seconds``; None without py-spy."""
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(py_spy).exists():
        return None
    cmd = [py_spy, "record", "--gil", "--nonblocking", "-p", str(pid)]
    cmd += ["-r", str(PROFILE_RATE), "-d", f"{seconds:g}", "-f", "raw", "-o", str(out)]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def read_profile(raw: Path, actions: float) -> dict[str, float]:
    """µs of GIL-held time per action in each part (``actions``: how many the
    sampled seconds saw), the total under "all"."""
    samples: collections.Counter[str] = collections.Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            samples[profile_part(stack.split(";"))] += int(count)
    us = 1e6 / PROFILE_RATE / actions if actions else float("nan")
    out = {part: n * us for part, n in samples.most_common()}
    out["all"] = sum(samples.values()) * us
    return out


@functools.cache
def edge_missing() -> str | None:
    """Builds the edge (bench/edge.py's ``build``, once a run); None when done,
    or why it cannot run."""
    if shutil.which("go") is None:
        return "no go on PATH"
    try:
        edge.build(("edge",))
    except subprocess.CalledProcessError as e:
        return f"go build failed: {(e.stderr or '')[-500:]}"
    return None


def colyseus(workdir: Path) -> RunningServer:
    proc, url = start_colyseus(workdir / "colyseus-server.log")
    return RunningServer("colyseus", [proc.pid], url, proc.stop)


class LoadGen:
    """A load generator subprocess: its contract's JSON lines, read as they come."""

    def __init__(self, kind: str, server: RunningServer, flags: list[str], log_path: Path) -> None:
        url = server.url
        if kind == "colyseus":
            cmd = ["node", str(COLYSEUS / "loadgen.mjs"), "--url", url, *flags]
        else:
            cmd = ["node", str(OURS_LOADGEN), "--url", url, "--operator-token", OPERATOR_TOKEN]
            cmd += [*flags, *(("--play-url", server.play_url) if server.play_url else ())]
        self.log_path = log_path
        with log_path.open("w") as log:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                bufsize=1,
            )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def expect(self, event: str, timeout: float) -> dict[str, Any]:
        """The next contract line, which must be ``event``."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise RuntimeError(
                f"no {event!r} from the load generator within {timeout:g} s\n{tail(self.log_path)}"
            ) from None
        if line is None:
            self.proc.wait()
            raise RuntimeError(
                f"the load generator exited ({self.proc.returncode}) before {event!r}\n"
                f"{tail(self.log_path)}"
            )
        try:
            msg: dict[str, Any] = json.loads(line)
        except json.JSONDecodeError:
            raise RuntimeError(f"not a contract line on its stdout: {line!r}") from None
        if msg.get("event") != event:
            raise RuntimeError(f"expected {event!r} from the load generator, got {line.strip()}")
        return msg

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def finish(self, timeout: float = 30.0) -> int:
        """Waits for its exit (ends stdin first); kills it after ``timeout``."""
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError(f"the load generator did not exit\n{tail(self.log_path)}") from None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@dataclass
class Marks:
    """CPU seconds of the server, the load generator and the machine, at one moment."""

    t: float
    server_parts: list[float]  # each of the server's processes
    loadgen: float
    machine: float
    gc: tuple[float, float, float] | None  # ours: gc_pauses()

    @property
    def server(self) -> float:
        return sum(self.server_parts)

    @classmethod
    def read(cls, server: RunningServer, loadgen_pid: int) -> Marks:
        return cls(
            time.monotonic(),
            server.cpu_seconds(),
            cpu_seconds(loadgen_pid),
            machine_busy_seconds(),
            gc_pauses(server.metrics_url) if server.metrics_url else None,
        )


# -- one load run ------------------------------------------------------------------------


def run_load(
    kind: str, scenario: str, rnd: int, args: argparse.Namespace, tmp: Path
) -> dict[str, Any]:
    tables, think = args.loads[scenario]
    warmup = args.warmup_s + STAGGER_ACTIONS * think / 1000.0  # the stagger, then the warm-up
    workdir = tmp / f"{scenario}-{rnd}-{kind}"
    workdir.mkdir()
    flags = [
        *("--tables", str(tables), "--think-ms", f"{think:g}"),
        *("--warmup-s", f"{warmup:g}", "--seconds", f"{args.seconds:g}"),
        *("--seed", str(args.seed + rnd), "--mode", "load"),
    ]
    server = start(kind, workdir, args.sqlite_linger_ms)
    gen: LoadGen | None = None
    try:
        gen = LoadGen(kind, server, flags, workdir / "loadgen.log")
        gen.expect("ready", SETUP_TIMEOUT_S)
        gen.expect("measure-start", warmup + EVENT_SLACK_S)
        first = Marks.read(server, gen.pid)
        sampled = max(1.0, args.seconds - 2.0)
        spy = None
        if args.profile and kind != "colyseus":
            spy = start_profile(server.pids[0], sampled, workdir / "pyspy.txt")
        end = gen.expect("measure-end", args.seconds + EVENT_SLACK_S)
        last = Marks.read(server, gen.pid)
        code = gen.finish()
        if spy is not None and spy.wait(timeout=30) != 0:
            spy = None
    finally:
        if gen is not None:
            gen.kill()
        server.stop()
    if code != 0:
        raise RuntimeError(f"the load generator exited {code}\n{tail(workdir / 'loadgen.log')}")
    wall = last.t - first.t
    server_cpu = last.server - first.server
    loadgen_cpu = last.loadgen - first.loadgen
    other = max(0.0, last.machine - first.machine - server_cpu - loadgen_cpu)
    n = int(end["actions"])

    def per_1000(cpu: float) -> float:
        return 1000.0 * cpu / n if n else float("nan")

    return {
        "scenario": scenario,
        "round": rnd,
        "server": kind,
        "tables": tables,
        "think_ms": think,
        "warmup_s": warmup,
        "window_s": wall,
        "actions": n,
        "actions_per_s": n / wall,
        "server_cpu_s": server_cpu,
        "server_cpu_s_per_1000": per_1000(server_cpu),
        # the Python server's, then the edge's (edge kinds)
        "server_cpu_s_per_1000_parts": [
            per_1000(b - a) for a, b in zip(first.server_parts, last.server_parts, strict=True)
        ],
        "server_cpu_pct": 100.0 * server_cpu / wall,
        "loadgen_cpu_s": loadgen_cpu,
        "loadgen_cpu_s_per_1000": per_1000(loadgen_cpu),
        "loadgen_cpu_pct": 100.0 * loadgen_cpu / wall,
        "other_cpu_pct": 100.0 * other / wall,
        **{k: end.get(k) for k in LATENCIES},
        "errors": int(end["errors"]),
        "error_notes": error_notes(workdir / "loadgen.log") if int(end["errors"]) else [],
        "hands": int(end.get("hands", 0)),
        # ours: the collector's pauses in the window (ms in all, how many, how many > 5 ms)
        "gc_pauses": [b - a for a, b in zip(first.gc, last.gc, strict=True)]
        if first.gc and last.gc
        else None,
        "edge_link": edge_link_counts(workdir) if kind.startswith("edge") else "",
        # --profile: the Python server's GIL-held µs per action, by part
        "profile": read_profile(workdir / "pyspy.txt", n * sampled / wall) if spy else None,
    }


def error_notes(log_path: Path, keep: int = 10) -> list[str]:
    """What the load generator said about its errors (its log lives in a temporary
    folder that is gone once the bench ends)."""
    lines = tail(log_path, 20_000).splitlines()
    return [line for line in lines if "spades-load:" in line or "loadgen:" in line][-keep:]


# -- memory ------------------------------------------------------------------------------


def hold(gen: LoadGen, tables: int) -> None:
    """A hold-mode load generator's tables seated (``connected``)."""
    msg = gen.expect("connected", SETUP_TIMEOUT_S)
    if msg.get("tables") != tables:
        raise RuntimeError(f"asked for {tables} tables, the load generator held {msg}")


def run_memory(kind: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    workdir = tmp / f"memory-{kind}"
    workdir.mkdir()
    n = args.memory_tables
    settle = args.settle_s
    server = start(kind, workdir, args.sqlite_linger_ms)
    gens: list[LoadGen] = []

    def loadgen(tables: int, name: str) -> LoadGen:
        flags = ["--tables", str(tables), "--seed", str(args.seed), "--mode", "hold"]
        gen = LoadGen(kind, server, flags, workdir / f"{name}.log")
        gens.append(gen)
        return gen

    try:
        # Warm-up: a few tables seated and left, so that the baseline has the
        # server's first connections, matches and caches behind it.
        warm = loadgen(MEMORY_WARMUP_TABLES, "warmup")
        hold(warm, MEMORY_WARMUP_TABLES)
        warm.send("disconnect")
        warm.expect("disconnected", EVENT_SLACK_S)
        warm.send("exit")
        warm.finish()
        time.sleep(settle)
        idle = server.rss_kib()
        gen = loadgen(n, "hold")
        t0 = time.monotonic()
        hold(gen, n)
        seat_seconds = time.monotonic() - t0
        time.sleep(settle)
        connected = server.rss_kib()
        gen.send("disconnect")
        gen.expect("disconnected", EVENT_SLACK_S)
        time.sleep(settle)
        gone = server.rss_kib()
        gen.send("exit")
        gen.finish()
    finally:
        for g in gens:
            g.kill()
        server.stop()
    return {
        "server": kind,
        "tables": n,
        "warmup_tables": MEMORY_WARMUP_TABLES,
        "settle_s": settle,
        "seat_seconds": seat_seconds,
        "rss_kib_idle": idle,
        "rss_kib_connected": connected,
        "rss_kib_disconnected": gone,
        "kib_per_table_connected": (connected - idle) / n,
        "kib_per_seat_connected": (connected - idle) / (4 * n),
        "kib_per_table_no_client": (gone - idle) / n,
    }


# -- reports -----------------------------------------------------------------------------


def fmt(value: float | None, digits: int) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:,.{digits}f}"


def median(values: list[Any]) -> float | None:
    xs = [float(v) for v in values if v is not None]
    return statistics.median(xs) if xs else None


def cell(value: float | None, base: float | None, digits: int, ratio: bool) -> str:
    text = fmt(value, digits)
    if ratio and value is not None and base:
        text += f" (x{value / base:.2f})"
    return text


def summary_grid(
    rows: list[tuple[str, str, int]], values: dict[str, dict[str, float | None]], kinds: list[str]
) -> None:
    """One row per measure (label, key, digits), one column per server; the
    columns after Colyseus carry their ratio to it."""
    header = ["measure", *(LABELS[k] for k in kinds)]
    grid = []
    for label, key, digits in rows:
        base = values.get("colyseus", {}).get(key)
        grid.append(
            [label]
            + [
                cell(values[k].get(key), base, digits, k != "colyseus" and key != "errors")
                for k in kinds
            ]
        )
    print_grid(header, grid)


LOAD_ROWS = [
    ("server CPU s / 1,000 actions", "server_cpu_s_per_1000", 3),
    ("actions/s", "actions_per_s", 0),
    ("acting p50 ms", "acting_p50_ms", 2),
    ("acting p99 ms", "acting_p99_ms", 2),
    ("others p50 ms", "others_p50_ms", 2),
    ("others p99 ms", "others_p99_ms", 2),
    ("server CPU % of a core", "server_cpu_pct", 0),
    ("load generator CPU s / 1,000 actions", "loadgen_cpu_s_per_1000", 3),
    ("load generator CPU % of a core", "loadgen_cpu_pct", 0),
    ("errors (all rounds)", "errors", 0),
]

MEMORY_ROWS = [
    ("idle server VmRSS, MiB", "rss_mib_idle", 1),
    ("per table, 4 seats connected, KiB", "kib_per_table_connected", 1),
    ("per connected seat, KiB", "kib_per_seat_connected", 1),
    ("per table, no client connected, KiB", "kib_per_table_no_client", 1),
]


def print_load_summary(scenario: str, runs: list[dict[str, Any]], kinds: list[str]) -> None:
    tables, think = runs[0]["tables"], runs[0]["think_ms"]
    rounds = max(r["round"] for r in runs)
    print(
        f"{scenario}: {tables} tables x 4 seats, think {think:g} ms; "
        f"medians of {rounds} round(s) (ratios to Colyseus)"
    )
    values: dict[str, dict[str, float | None]] = {}
    for k in kinds:
        mine = [r for r in runs if r["server"] == k]
        values[k] = {key: median([r[key] for r in mine]) for _, key, _ in LOAD_ROWS}
        values[k]["errors"] = float(sum(r["errors"] for r in mine)) if mine else None
    summary_grid(LOAD_ROWS, values, kinds)
    print()


def print_raw(runs: list[dict[str, Any]]) -> None:
    header = [
        "scenario",
        "round",
        "server",
        "actions",
        "actions/s",
        "srv s/1k",
        "py/edge",
        "srv %",
        "gen %",
        "other %",
        "act p50",
        "act p99",
        "oth p50",
        "oth p99",
        "errors",
        "hands",
        "gc ms/n/>5ms",
    ]
    grid = [
        [
            r["scenario"],
            str(r["round"]),
            r["server"],
            f"{r['actions']:,}",
            fmt(r["actions_per_s"], 0),
            fmt(r["server_cpu_s_per_1000"], 3),
            "/".join(fmt(x, 3) for x in r["server_cpu_s_per_1000_parts"])
            if len(r["server_cpu_s_per_1000_parts"]) > 1
            else "-",
            fmt(r["server_cpu_pct"], 0),
            fmt(r["loadgen_cpu_pct"], 0),
            fmt(r["other_cpu_pct"], 0),
            *(fmt(r[k], 2) for k in LATENCIES),
            str(r["errors"]),
            str(r["hands"]),
            gc_cell(r.get("gc_pauses")),
        ]
        for r in runs
    ]
    print("per run (latencies in ms):")
    print_grid(header, grid, left=3)
    for r in runs:
        if r.get("edge_link"):
            print(f"  {r['scenario']} round {r['round']} {r['server']}: link {r['edge_link']}")
    for r in runs:
        if r.get("profile"):
            parts = {k: v for k, v in r["profile"].items() if k != "all"}
            print(
                f"  {r['scenario']} round {r['round']} {r['server']}: "
                f"Python GIL-held {r['profile']['all']:.0f} µs an action: "
                + ", ".join(f"{k} {v:.0f}" for k, v in parts.items())
            )
    print()


def gc_cell(pauses: list[float] | None) -> str:
    if not pauses:
        return "-"
    total_s, n, over = pauses
    return f"{1000 * total_s:.0f}/{n:.0f}/{over:.0f}"


def print_memory(mem: list[dict[str, Any]], kinds: list[str]) -> None:
    n = mem[0]["tables"]
    print(
        f"memory: VmRSS of the server idle (after {MEMORY_WARMUP_TABLES} tables seated and "
        f"left), with {n} tables x 4 seats connected, and after they left; "
        f"{mem[0]['settle_s']:g} s settle before each reading; KiB = 1024 bytes"
    )
    values: dict[str, dict[str, float | None]] = {}
    for k in kinds:
        found = [m for m in mem if m["server"] == k]
        if found:
            m = found[0]
            values[k] = {key: m.get(key) for _, key, _ in MEMORY_ROWS}
            values[k]["rss_mib_idle"] = m["rss_kib_idle"] / 1024
        else:
            values[k] = {}
    summary_grid(MEMORY_ROWS, values, kinds)
    print()


# -- main --------------------------------------------------------------------------------


def command_output(cmd: list[str], cwd: Path = ROOT) -> str:
    try:
        return subprocess.run(
            cmd, cwd=cwd, capture_output=True, text=True, check=True, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


def meta() -> dict[str, Any]:
    commit = command_output(["git", "rev-parse", "--short", "HEAD"])
    if command_output(["git", "status", "--porcelain", "--untracked-files=no"]):
        commit += " (with local changes)"
    versions: dict[str, str] = {}
    with contextlib.suppress(OSError, ValueError):
        versions = json.loads((COLYSEUS / "package.json").read_text())["dependencies"]
    return {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "node": command_output(["node", "--version"]),
        "commit": commit,
        "cpus": os.cpu_count(),
        "colyseus_packages": versions,
    }


def split_list(value: str, allowed: tuple[str, ...], what: str) -> list[str]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    bad = [v for v in items if v not in allowed]
    if bad or not items:
        raise argparse.ArgumentTypeError(f"{what}: choose from {', '.join(allowed)}")
    return [a for a in allowed if a in items]  # in the canonical order


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description="Our server against a Colyseus 0.16 room, side by side: CPU per 1,000 "
        "actions, latency, memory per connected seat (issue 25)."
    )
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of each load (3)")
    ap.add_argument("--seconds", type=float, default=15.0, help="measured seconds a run (15)")
    ap.add_argument(
        "--warmup-s",
        type=float,
        default=5.0,
        help="unmeasured seconds after every seat is connected (5), after the paced "
        f"scenario's stagger of {STAGGER_ACTIONS} x its think time",
    )
    ap.add_argument(
        "--only",
        type=lambda v: split_list(v, SERVERS, "--only"),
        default=list(SERVERS),
        help="servers, comma-separated: colyseus,memory,sqlite,edge,edge-sqlite (all)",
    )
    ap.add_argument(
        "--scenario",
        type=lambda v: split_list(v, SCENARIOS, "--scenario"),
        default=list(SCENARIOS),
        help="saturated,paced,memory (all)",
    )
    ap.add_argument(
        "--tables",
        type=int,
        default=0,
        help="tables of every load scenario (default: saturated 50, paced 100)",
    )
    ap.add_argument(
        "--paced-think-ms", type=float, default=100.0, help="think time of the paced load (100)"
    )
    ap.add_argument(
        "--memory-tables", type=int, default=200, help="tables held in the memory scenario (200)"
    )
    ap.add_argument(
        "--settle-s", type=float, default=2.0, help="wait before each memory reading (2)"
    )
    ap.add_argument("--seed", type=int, default=1, help="seed of the load generators (1)")
    ap.add_argument(
        "--profile",
        action="store_true",
        help="sample each run's Python server with py-spy (GIL held) and print where an "
        "action's time goes",
    )
    ap.add_argument(
        "--sqlite-linger-ms",
        type=float,
        default=0,
        help="the SQLite servers' --sqlite-commit-linger-ms (0, the server's default)",
    )
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    args = ap.parse_args(argv)
    if min(args.rounds, args.memory_tables) < 1 or args.seconds <= 0 or args.tables < 0:
        ap.error("--rounds, --memory-tables and --seconds must be positive")
    loads = dict(LOADS)
    loads["paced"] = (loads["paced"][0], args.paced_think_ms)
    if args.tables:
        loads = {k: (args.tables, think) for k, (_, think) in loads.items()}
    args.loads = loads
    return args


def check_setup(kinds: list[str]) -> list[str]:
    """The servers that can run here; says why for the others."""
    ok = []
    for k in kinds:
        if k == "colyseus" and not (COLYSEUS / "node_modules").is_dir():
            print(f"skipped colyseus: no {COLYSEUS / 'node_modules'} (cd {COLYSEUS} && npm ci)")
        elif k != "colyseus" and not TS_CLIENT.is_file():
            print(f"skipped {k}: no {TS_CLIENT} (make clients/typescript/dist/.built)")
        elif k.startswith("edge") and (why := edge_missing()):
            print(f"skipped {k}: {why}")
        else:
            ok.append(k)
    return ok


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    info = meta()
    print("Spades server against Colyseus, side by side (bench/peer.py)")
    print(f"python  {info['python']}, node {info['node']}, commit {info['commit']}")
    print(f"cpu     {info['cpus']} cores, shared by the server, its load generator and the rest")
    packages = ", ".join(f"{k} {v}" for k, v in info["colyseus_packages"].items())
    print(f"peer    {packages or '?'}")
    kinds = check_setup(args.only)
    loads = [s for s in args.scenario if s in LOADS]
    print(
        f"runs    {args.rounds} round(s) of {', '.join(loads) or 'no load'} on "
        f"{', '.join(kinds)}; {args.seconds:g} s measured after {args.warmup_s:g} s of warm-up "
        f"(paced: after its stagger of {STAGGER_ACTIONS} x {args.loads['paced'][1]:g} ms too)"
    )
    if args.sqlite_linger_ms:
        print(f"sqlite  --sqlite-commit-linger-ms {args.sqlite_linger_ms:g}")
    print()
    runs: list[dict[str, Any]] = []
    memory: list[dict[str, Any]] = []
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="spades-bench-peer-") as tmp_name:
        tmp = Path(tmp_name)
        for scenario in loads:
            for rnd in range(1, args.rounds + 1):
                for kind in kinds:
                    label = f"{scenario} round {rnd} {kind}"
                    print(f"... {label}", file=sys.stderr, flush=True)
                    try:
                        runs.append(run_load(kind, scenario, rnd, args, tmp))
                    except (RuntimeError, OSError) as e:
                        failures.append(f"{label}: {e}")
                        print(f"FAILED {label}: {e}", file=sys.stderr)
        if "memory" in args.scenario:
            for kind in kinds:
                print(f"... memory {kind}", file=sys.stderr, flush=True)
                try:
                    memory.append(run_memory(kind, args, tmp))
                except (RuntimeError, OSError) as e:
                    failures.append(f"memory {kind}: {e}")
                    print(f"FAILED memory {kind}: {e}", file=sys.stderr)
    for scenario in loads:
        mine = [r for r in runs if r["scenario"] == scenario]
        if mine:
            print_load_summary(scenario, mine, kinds)
    if memory:
        print_memory(memory, kinds)
    if runs:
        print_raw(runs)
    warn_if_disturbed([r["other_cpu_pct"] for r in runs])
    errors = sum(r["errors"] for r in runs)
    if errors:
        print(f"ERRORS: {errors} refusals or disconnects in the measured windows")
        for r in runs:
            for note in r.get("error_notes", []):
                print(f"  {r['scenario']} round {r['round']} {r['server']}: {note}")
    for f in failures:
        print(f"FAILED: {f.splitlines()[0]}")
    if args.json:
        out = {"meta": info, "args": {**vars(args)}, "runs": runs, "memory": memory}
        out["failures"] = failures
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 1 if failures or errors else 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
