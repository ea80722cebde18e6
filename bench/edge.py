#!/usr/bin/env python3
"""The edge prototype measured: server CPU per 1,000 actions with a compiled edge
holding the connections in front of the Python core (bench/edge/README.md).

Builds the Go edge and load generator (``go build``), then for each scenario
and configuration starts fresh servers and drives them with bench/edge/bin/load
(N tables x 4 seats, each seat its own connection and Play call):

* ``saturated``: ``--saturated-tables`` (50) tables, no think time;
* ``paced``: ``--paced-tables`` (100) tables, ``--think-ms`` (100) of think time
  (uniform 0.5T..1.5T; each table's first action staggered 0..56T, so the warm-up
  of this scenario is ``--warmup-s`` + 56T).

Configurations (``--configs``):

* ``engine``: the real rules work in the core (bench/edge/core.py), in memory;
  the link a framed TCP socket (``--link socket``);
* ``grpc-link``: the same with the link as a gRPC bidirectional call;
* ``sqlite``: ``engine`` with each LinkUp's events and actions committed to
  SQLite (synchronous FULL) before its answer leaves the core;
* ``noop``: the core answers each action with fixed bytes, no engine: the
  edge's and the link's own cost;
* ``edge-self``: no core and no link: the edge answers each action itself with
  the same fixed bytes (``edge --self-answer``): a Go gRPC server's own floor
  for this load, as bench/grpc_floor.py is grpc.aio's;
* ``colyseus``: the Colyseus 0.16 peer of bench/peer/colyseus (its server.mjs
  and loadgen.mjs, the same contract), run here for a figure taken on the same
  machine at the same time; skipped when its node_modules are missing.

CPU is utime + stime from /proc/PID/stat of each server process (edge, core;
or the Colyseus server), between the load generator's ``measure-start`` and
``measure-end`` lines, per action acknowledged in that window. Memory: VmRSS
of the edge and the core before and after ``--memory-tables`` tables of four
connected seats (the load generator's hold mode), per table.

    .venv/bin/python bench/edge.py [--seconds 10] [--warmup-s 3] [--rounds 1]
        [--configs engine,grpc-link,sqlite,noop,edge-self,colyseus] [--scenarios saturated,paced]
        [--memory-tables 200] [--linger-us 0] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cpu_usage import cpu_seconds, machine_busy_seconds
from processes import COLYSEUS, ROOT, Proc, start_colyseus, start_listening

EDGE_DIR = ROOT / "bench" / "edge"
BIN = EDGE_DIR / "bin"
# Colyseus 0.16 on Node 20, server CPU seconds per 1,000 actions, as issue 25
# measured it: 50 tables saturated, 100 tables paced at 100 ms think time.
COLYSEUS_ISSUE_S_PER_1K = {"saturated": 0.056, "paced": 0.118}
CONFIGS = ("engine", "grpc-link", "sqlite", "noop", "edge-self", "colyseus")
SCENARIOS = ("saturated", "paced")
LATENCIES = ("acting_p50_ms", "acting_p99_ms", "others_p50_ms", "others_p99_ms")


def build(names: tuple[str, ...] = ("edge", "load")) -> None:
    """``go build`` of the edge and the load generator into bin/ (also used by
    bench/peer.py for the edge alone)."""
    for name in names:
        subprocess.run(
            ["go", "build", "-o", str(BIN / name), f"./{name}"],
            cwd=EDGE_DIR,
            check=True,
            capture_output=True,
            text=True,
        )


def colyseus_available() -> bool:
    return shutil.which("node") is not None and (COLYSEUS / "node_modules").is_dir()


# -- servers ------------------------------------------------------------------------------


class Stack:
    """The servers of one configuration and how to load them."""

    def __init__(self, config: str, logdir: Path, linger_us: int) -> None:
        self.config = config
        self.procs: dict[str, Proc] = {}
        try:
            if config == "colyseus":
                self._start_colyseus(logdir)
            else:
                self._start_edge(config, logdir, linger_us)
        except BaseException:
            self.stop()
            raise

    def _start_edge(self, config: str, logdir: Path, linger_us: int) -> None:
        if config == "edge-self":
            argv = [str(BIN / "edge"), "--listen", "127.0.0.1:0", "--self-answer"]
            self.procs["edge"], self.address = start_listening("edge", argv, logdir / "edge.log")
            return
        link = "grpc" if config == "grpc-link" else "socket"
        argv = [sys.executable, str(EDGE_DIR / "core.py"), "--listen", "127.0.0.1:0"]
        argv += ["--link", link]
        if config == "noop":
            argv.append("--noop")
        if config == "sqlite":
            argv += ["--store", "sqlite", "--db", str(logdir / "core.db")]
        self.procs["core"], core = start_listening("core", argv, logdir / "core.log")
        edge_argv = [str(BIN / "edge"), "--listen", "127.0.0.1:0", "--core", core]
        edge_argv += ["--link", link, "--linger-us", str(linger_us)]
        self.procs["edge"], self.address = start_listening("edge", edge_argv, logdir / "edge.log")

    def _start_colyseus(self, logdir: Path) -> None:
        self.procs["server"], self.address = start_colyseus(logdir / "colyseus.log")

    def load_argv(self, tables: int, think_ms: float) -> list[str]:
        if self.config == "colyseus":
            argv = ["node", str(COLYSEUS / "loadgen.mjs"), "--url", self.address]
        else:
            argv = [str(BIN / "load"), "--addr", self.address]
            if self.config in ("noop", "edge-self"):
                argv.append("--noop")
        return [*argv, "--tables", str(tables), "--think-ms", f"{think_ms:g}"]

    def cpu(self) -> dict[str, float]:
        return {role: cpu_seconds(p.pid) for role, p in self.procs.items()}

    def stop(self) -> dict[str, str]:
        """Each process stopped, and what it wrote to stderr."""
        logs = {}
        for role, p in reversed(self.procs.items()):
            p.stop()
            logs[role] = p.log_path.read_text(errors="replace").strip()
        return logs


def events(proc: subprocess.Popen[bytes]) -> Iterator[dict[str, Any]]:
    assert proc.stdout is not None
    for raw in proc.stdout:
        yield json.loads(raw)


# -- one run ------------------------------------------------------------------------------


@dataclass
class Run:
    scenario: str
    config: str
    tables: int
    think_ms: float
    window_s: float = 0.0
    actions: int = 0
    cpu_s: dict[str, float] = field(default_factory=dict)  # edge, core; or server
    load_cpu_s: float = 0.0
    other_cpu_s: float = 0.0  # the rest of the machine during the window
    latency_ms: dict[str, float | None] = field(default_factory=dict)
    errors: int = 0
    refused: int = 0
    logs: dict[str, str] = field(default_factory=dict)


def run_load(
    scenario: str,
    config: str,
    tables: int,
    think_ms: float,
    warmup_s: float,
    seconds: float,
    linger_us: int,
) -> Run:
    run = Run(scenario, config, tables, think_ms)
    with tempfile.TemporaryDirectory(prefix="spades-edge-bench-") as tmp:
        stack = Stack(config, Path(tmp), linger_us)
        try:
            argv = stack.load_argv(tables, think_ms)
            argv += ["--warmup-s", f"{warmup_s:g}", "--seconds", f"{seconds:g}", "--mode", "load"]
            load = subprocess.Popen(argv, stdout=subprocess.PIPE, cwd=ROOT)
            t0 = cpu0 = load0 = busy0 = None
            for ev in events(load):
                if ev["event"] == "measure-start":
                    t0, cpu0 = time.perf_counter(), stack.cpu()
                    load0, busy0 = cpu_seconds(load.pid), machine_busy_seconds()
                elif ev["event"] == "measure-end":
                    if t0 is None or cpu0 is None or load0 is None or busy0 is None:
                        raise RuntimeError("measure-end before measure-start")
                    run.window_s = time.perf_counter() - t0
                    run.cpu_s = {k: v - cpu0[k] for k, v in stack.cpu().items()}
                    run.load_cpu_s = cpu_seconds(load.pid) - load0
                    busy = machine_busy_seconds() - busy0
                    run.other_cpu_s = max(0.0, busy - sum(run.cpu_s.values()) - run.load_cpu_s)
                    run.actions = ev["actions"]
                    run.latency_ms = {k: ev[k] for k in LATENCIES}
                    run.errors, run.refused = ev["errors"], ev.get("refused", 0)
            if load.wait(30) != 0 or run.window_s == 0:
                raise RuntimeError(f"load generator failed (exit {load.returncode})")
        finally:
            run.logs = stack.stop()
    return run


@dataclass
class Memory:
    tables: int
    kib_before: dict[str, int] = field(default_factory=dict)
    kib_after: dict[str, int] = field(default_factory=dict)

    def per_table_kib(self) -> dict[str, float]:
        return {k: (self.kib_after[k] - self.kib_before[k]) / self.tables for k in self.kib_after}


def run_memory(tables: int) -> Memory:
    mem = Memory(tables)
    with tempfile.TemporaryDirectory(prefix="spades-edge-bench-") as tmp:
        stack = Stack("engine", Path(tmp), 0)
        try:
            time.sleep(1.0)
            mem.kib_before = {k: p.rss_kib() for k, p in stack.procs.items()}
            argv = [*stack.load_argv(tables, 0), "--mode", "hold"]
            load = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT)
            assert load.stdin is not None
            for ev in events(load):
                if ev["event"] == "connected":
                    time.sleep(2.0)
                    mem.kib_after = {k: p.rss_kib() for k, p in stack.procs.items()}
                    load.stdin.write(b"exit\n")
                    load.stdin.flush()
                    break
            load.wait(30)
            if not mem.kib_after:
                raise RuntimeError("load generator never connected its seats")
        finally:
            stack.stop()
    return mem


# -- report ------------------------------------------------------------------------------


@dataclass
class Summary:
    scenario: str
    config: str
    tables: int
    think_ms: float
    runs: list[Run] = field(default_factory=list)

    def actions(self) -> int:
        return sum(r.actions for r in self.runs)

    def window_s(self) -> float:
        return sum(r.window_s for r in self.runs) or 1.0

    def per_1k(self, role: str) -> float | None:
        """CPU seconds of ``role`` per 1,000 actions, over every round."""
        if not self.runs or role not in self.runs[0].cpu_s:
            return None
        cpu = sum(r.cpu_s[role] for r in self.runs)
        return 1000 * cpu / self.actions() if self.actions() else None

    def server_per_1k(self) -> float | None:
        roles = self.runs[0].cpu_s if self.runs else {}
        cpu = sum(sum(r.cpu_s[k] for k in roles) for r in self.runs)
        return 1000 * cpu / self.actions() if self.actions() else None

    def percent(self, value: float) -> float:
        return 100 * value / self.window_s()

    def median_latency(self, name: str) -> float | None:
        values = [r.latency_ms[name] for r in self.runs if r.latency_ms.get(name) is not None]
        return statistics.median([v for v in values if v is not None]) if values else None

    def as_dict(self) -> dict[str, Any]:
        roles = self.runs[0].cpu_s if self.runs else {}
        return {
            "scenario": self.scenario,
            "config": self.config,
            "tables": self.tables,
            "think_ms": self.think_ms,
            "actions": self.actions(),
            "actions_per_s": self.actions() / self.window_s(),
            "cpu_s_per_1k_actions": {k: self.per_1k(k) for k in roles},
            "server_cpu_s_per_1k_actions": self.server_per_1k(),
            "cpu_percent_of_a_core": {
                k: self.percent(sum(r.cpu_s[k] for r in self.runs)) for k in roles
            },
            "load_generator_cpu_percent": self.percent(sum(r.load_cpu_s for r in self.runs)),
            "other_processes_cpu_percent": self.percent(sum(r.other_cpu_s for r in self.runs)),
            "latency_ms_median_of_rounds": {k: self.median_latency(k) for k in LATENCIES},
            "errors": sum(r.errors for r in self.runs),
            "refused": sum(r.refused for r in self.runs),
            "colyseus_issue_s_per_1k_actions": COLYSEUS_ISSUE_S_PER_1K[self.scenario],
            "runs": [asdict(r) for r in self.runs],
        }


def fmt(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def report(summaries: list[Summary], memory: Memory | None, args: argparse.Namespace) -> list[str]:
    out: list[str] = []
    say = out.append
    say(
        "Edge prototype (bench/edge.py): a Go edge holds the connections, the Python core the rules"
    )
    say(f"python  {platform.python_implementation()} {platform.python_version()}")
    say(f"cpu     {os.cpu_count()} cores, shared by the servers, the load generator and others")
    say(
        f"runs    {args.rounds} round(s) of {args.seconds:g} s measured, warm-up "
        f"{args.warmup_s:g} s (paced: + 56 x think time); edge linger {args.linger_us} us"
    )
    say("")
    say("server CPU seconds per 1,000 actions (= ms per action)")
    head = (
        f"{'scenario':<9} {'config':<9} {'tables':>6} {'act/s':>6}  {'edge':>6} {'core':>6} "
        f"{'server':>6}  {'/coly':>5} {'/issue':>6}  {'acting p50/p99':>15} "
        f"{'others p50/p99':>15}  {'srv %':>5} {'load%':>5} {'othr%':>5}"
    )
    say(head)
    say("-" * len(head))
    by_key = {(s.scenario, s.config): s for s in summaries}
    for s in summaries:
        d = s.as_dict()
        server = s.server_per_1k()
        coly = by_key.get((s.scenario, "colyseus"))
        coly_1k = coly.server_per_1k() if coly is not None else None
        vs_here = server / coly_1k if server and coly_1k else None
        vs_issue = server / COLYSEUS_ISSUE_S_PER_1K[s.scenario] if server else None
        lat = d["latency_ms_median_of_rounds"]
        srv_pct = sum(d["cpu_percent_of_a_core"].values())
        say(
            f"{s.scenario:<9} {s.config:<9} {s.tables:>6} {d['actions_per_s']:>6,.0f}  "
            f"{fmt(s.per_1k('edge')):>6} {fmt(s.per_1k('core')):>6} {fmt(server):>6}  "
            f"{fmt(vs_here, '.2f'):>5} {fmt(vs_issue, '.2f'):>6}  "
            f"{fmt(lat['acting_p50_ms'], '.2f'):>7}/{fmt(lat['acting_p99_ms'], '.2f'):<7} "
            f"{fmt(lat['others_p50_ms'], '.2f'):>7}/{fmt(lat['others_p99_ms'], '.2f'):<7}  "
            f"{srv_pct:>5.0f} {d['load_generator_cpu_percent']:>5.0f} "
            f"{d['other_processes_cpu_percent']:>5.0f}"
        )
        if d["errors"] or d["refused"]:
            say(f"  !! {d['errors']} errors, {d['refused']} refused actions")
    say("")
    say(
        "/coly: server over the colyseus row of the same scenario (measured here, same "
        "window); /issue: over issue 25's Colyseus figure (0.056 saturated, 0.118 paced). "
        "Goal: <= 2."
    )
    say(
        "srv % / load% / othr%: % of one core during the window for the servers, the load "
        "generator, and every other process on the machine (other helpers' work)."
    )
    if memory is not None:
        per = memory.per_table_kib()
        before, after = memory.kib_before, memory.kib_after
        say("")
        say(
            f"memory, {memory.tables} tables x 4 connected seats (engine config): "
            f"edge {per['edge']:.1f} KiB/table, core {per['core']:.1f} KiB/table, "
            f"together {sum(per.values()):.1f} KiB/table (VmRSS edge {before['edge']:,} -> "
            f"{after['edge']:,} KiB, core {before['core']:,} -> {after['core']:,} KiB)"
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup-s", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--configs", default=",".join(CONFIGS), help=f"of {','.join(CONFIGS)}")
    parser.add_argument("--scenarios", default="saturated,paced", help=f"of {','.join(SCENARIOS)}")
    parser.add_argument("--saturated-tables", type=int, default=50)
    parser.add_argument("--paced-tables", type=int, default=100)
    parser.add_argument("--think-ms", type=float, default=100.0, help="the paced scenario's")
    parser.add_argument("--linger-us", type=int, default=0, help="the edge's --linger-us")
    parser.add_argument("--memory-tables", type=int, default=200, help="0: skip")
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    configs = [c for c in args.configs.split(",") if c]
    scenarios = [s for s in args.scenarios.split(",") if s]
    for c in configs:
        if c not in CONFIGS:
            parser.error(f"unknown config {c!r}")
    for s in scenarios:
        if s not in SCENARIOS:
            parser.error(f"unknown scenario {s!r}")
    if "colyseus" in configs and not colyseus_available():
        print(
            "colyseus: node or bench/peer/colyseus/node_modules missing, skipped", file=sys.stderr
        )
        configs.remove("colyseus")
    if not args.no_build:
        build()
    summaries: list[Summary] = []
    for scenario in scenarios:
        for config in configs:
            if scenario == "saturated":
                summaries.append(Summary(scenario, config, args.saturated_tables, 0))
            else:
                summaries.append(Summary(scenario, config, args.paced_tables, args.think_ms))
    for r in range(args.rounds):
        for s in summaries:
            warmup = args.warmup_s + 56 * s.think_ms / 1000
            print(
                f"round {r + 1}: {s.scenario}, {s.config}, {s.tables} tables, "
                f"warm-up {warmup:g} s ...",
                file=sys.stderr,
                flush=True,
            )
            run = run_load(
                s.scenario, s.config, s.tables, s.think_ms, warmup, args.seconds, args.linger_us
            )
            s.runs.append(run)
    memory = run_memory(args.memory_tables) if args.memory_tables > 0 else None
    lines = report(summaries, memory, args)
    print("\n".join(lines))
    if args.json is not None:
        doc = {
            "python": platform.python_version(),
            "cpu_count": os.cpu_count(),
            "args": {k: str(v) for k, v in vars(args).items()},
            "report": lines,
            "results": [s.as_dict() for s in summaries],
            "memory": None
            if memory is None
            else {**asdict(memory), "per_table_kib": memory.per_table_kib()},
        }
        args.json.write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
