#!/usr/bin/env python3
"""Where one action's server CPU goes: a sampled profile of the server under
bench/server.py's load, sorted into the parts of an action.

Three measurements, in one run:

1. **Our code alone**, in this process: ``Session.submit`` on the in-memory
   store, four human seats, random legal actions, no transport (what an action
   costs the service's own code: the checks, the engine, the events as
   protobuf, the log, the store's hand-off, waking nobody). CPU time per action.
2. **The server under load**: ``bench/server.py`` (its Play load, one round) with
   ``py-spy record --gil`` attached to the server for the middle of the
   measured phase. Every sample in which a thread of the server held the GIL is
   put in one part by the frames of its stack (``PARTS`` below: the innermost
   frame that names a part decides), and each part's share of the samples is
   turned into microseconds per action with the event-loop thread's CPU per
   action, which bench/server.py measures. The server's other threads (gRPC
   core's, the SQLite writer's) are reported beside it, unsplit.
3. Nothing of the bare transport: ``bench/grpc_floor.py --act bidi`` gives that
   (a Play round trip with no work, and the same with a write to four streams).

py-spy sees Python frames only: time inside gRPC's Cython layer and the
compiled engine is counted at the line of ours that called it, which is how
``context.write`` (``EventLog.pump``'s ``await send``), ``context.read`` and the
engine's ``apply`` are told apart.

    python3 bench/action_profile.py [--store memory|sqlite] [--matches 50]
                                    [--think-ms 0] [--seconds 20] [--rate 250]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SERVER_SRC = ROOT / "server" / "spades_server"
PID_LINE = re.compile(r"^server\s+pid (\d+)")

# The parts of an action, in the words. A sample belongs to the first
# rule that matches, walking its stack from the innermost frame outwards. A
# rule is (part, file, function, source text or None): with source text, the
# frame must be that function's own time (the innermost frame) at the line
# holding the text, i.e. inside the native call made there.
PARTS: list[tuple[str, str, str, str | None]] = [
    ("stream writes (context.write)", "event_log.py", "EventLog.pump", "await send("),
    ("receiving and parsing", "play.py", "Reader._read", "await read()"),
    ("the engine (Match.apply)", "session.py", "Session.apply_locked", "self.match.apply("),
    ("protobuf serialisation", "event_log.py", "EventLog.stage", "SerializeToString()"),
    ("metrics", "prometheus_client", "", None),
    ("logging", "structlog", "", None),
    ("logging", "logging/", "", None),
    ("the store", "store/", "", None),
    ("the store", "sqlite3", "", None),
    ("event payloads (engine events to protobuf)", "convert.py", "event_to_pb", None),
    ("event payloads (engine events to protobuf)", "convert.py", "_card", None),
    ("event payloads (engine events to protobuf)", "convert.py", "_trick", None),
    ("event payloads (engine events to protobuf)", "convert.py", "_set_card", None),
    ("event payloads (engine events to protobuf)", "convert.py", "_add_cards", None),
    ("event payloads (engine events to protobuf)", "event_log.py", "engine_payloads", None),
    ("protobuf serialisation", "event_log.py", "EventLog.stage", None),
    ("protobuf serialisation", "play.py", "accepted", None),
    ("protobuf serialisation", "play.py", "refused", None),
    ("per-viewer filtering and batching", "event_log.py", "EventLog.publish", None),
    ("per-viewer filtering and batching", "event_log.py", "EventLog._batch", None),
    ("per-viewer filtering and batching", "convert.py", "frame_event", None),
    ("per-viewer filtering and batching", "convert.py", "audience_mask", None),
    ("per-viewer filtering and batching", "play.py", "Outbox.take", None),
    ("waking the streams (futures)", "event_log.py", "EventLog.wake", None),
    ("waking the streams (futures)", "event_log.py", "EventLog.waiter", None),
    ("receiving and parsing", "calls.py", "", None),
    ("receiving and parsing", "convert.py", "action_from_pb", None),
    ("receiving and parsing", "convert.py", "card_from_pb", None),
    ("receiving and parsing", "play.py", "Reader._read", None),
    ("new matches (CreateMatch, ClaimSeat, opening Play)", "service.py", "CreateMatch", None),
    ("new matches (CreateMatch, ClaimSeat, opening Play)", "service.py", "ClaimSeat", None),
    ("new matches (CreateMatch, ClaimSeat, opening Play)", "play.py", "first_request", None),
    (
        "new matches (CreateMatch, ClaimSeat, opening Play)",
        "service.py",
        "SpadesService._seat",
        None,
    ),
]
OURS = "the rest of our code (checks, lock, idempotency, answer)"
MACHINERY = "asyncio and gRPC's Cython layer (no code of ours)"


def _line_of(file: str, function: str, text: str) -> int:
    """The line of ``text`` in ``function`` (its last dotted part) of the
    server's ``file``."""
    lines = (SERVER_SRC / file).read_text().splitlines()
    name = function.rsplit(".", 1)[-1]
    start = next(i for i, line in enumerate(lines) if re.search(rf"def {name}\b", line))
    return next(i + 1 for i in range(start, len(lines)) if text in lines[i])


FRAME = re.compile(r"^(?P<func>.+) \((?P<file>[^()]*?):(?P<line>\d+)\)$")


def part_of(frames: list[str], lines: dict[int, int]) -> str:
    """The part a sample's stack (outermost first) belongs to."""
    for depth, frame in enumerate(reversed(frames)):
        m = FRAME.match(frame)
        func, file, line = (m["func"], m["file"], int(m["line"])) if m else (frame, "", 0)
        for k, (part, rfile, rfunc, text) in enumerate(PARTS):
            if rfile not in file or rfunc not in func:
                continue
            if text is None or (depth == 0 and line == lines[k]):
                return part
        if "spades_server" in file and not file.endswith(("rpc.py", "main.py")):
            return OURS
    return MACHINERY


def categorise(raw: Path) -> tuple[collections.Counter[str], int]:
    lines = {k: _line_of(f, fn, t) for k, (_, f, fn, t) in enumerate(PARTS) if t is not None}
    counts: collections.Counter[str] = collections.Counter()
    total = 0
    for row in raw.read_text().splitlines():
        stack, _, n = row.rpartition(" ")
        if not stack:
            continue
        counts[part_of(stack.split(";"), lines)] += int(n)
        total += int(n)
    return counts, total


# -- 1. our code alone --------------------------------------------------------------------


async def _submit_loop(actions: int) -> float:
    from spades_server.allowance import SessionLimits
    from spades_server.matches import Registry, SeatSpec
    from spades_server.store.memory import MemoryStore

    from spades_engine import Match, preset

    registry = Registry(MemoryStore(), SessionLimits(), 1_000_000, 300)
    rules = preset("classic")
    rng = random.Random(1)
    done = 0
    t0 = time.process_time()
    try:
        while done < actions:
            seats = [SeatSpec(f"h{i}", False, 0) for i in range(4)]
            session, _, _ = await registry.create(Match(rules, seed=rng.getrandbits(32)), seats, 0)
            match = session.match
            while not match.is_over and done < actions:
                seat = match.to_act
                action = rng.choice(match.legal_actions(seat))
                done += 1
                await session.submit(seat, f"a{done}", action, session.last_seq)
        return (time.process_time() - t0) / actions
    finally:
        await registry.close()


def code_alone_us(actions: int) -> float:
    from spades_server.main import tune_gc

    tune_gc()  # as the server does
    return 1e6 * asyncio.run(_submit_loop(actions))


# -- 2. the server under load ---------------------------------------------------------------


def profile_server(args: argparse.Namespace, tmp: Path) -> tuple[dict[str, Any], Path]:
    """Run bench/server.py with py-spy on its server; its JSON and the samples."""
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    out_json, raw = tmp / "server.json", tmp / "samples.txt"
    stagger = 0.5 if args.think_ms else 0.0
    cmd = [
        sys.executable,
        str(ROOT / "bench" / "server.py"),
        f"--matches={args.matches}",
        f"--think-ms={args.think_ms:g}",
        f"--stagger-s={stagger:g}",
        f"--store={args.store}",
        f"--seconds={args.seconds:g}",
        "--rounds=1",
        "--ping-seconds=0.5",
        f"--warmup={args.warmup:g}",
        f"--json={out_json}",
    ]
    bench = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert bench.stdout is not None
    pid = None
    for line in bench.stdout:
        found = PID_LINE.match(line)
        if found:
            pid = int(found.group(1))
            break
    if pid is None:
        bench.kill()
        raise SystemExit("bench/server.py did not start its server")
    # Sample the middle of the measured phase: past the warm-up and set-up
    # (which bench/server.py runs before it), a second short of its end.
    time.sleep(args.warmup + stagger + 2.0)
    sampled = max(2.0, args.seconds - 3.0)
    spy = [py_spy, "record", "--gil", "-p", str(pid), "-r", str(args.rate)]
    spy += ["-d", f"{sampled:g}", "-f", "raw", "-o", str(raw)]
    subprocess.run(spy, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bench.stdout.read()
    if bench.wait() != 0:
        raise SystemExit("bench/server.py failed (errors during the load)")
    return json.loads(out_json.read_text()), raw


# -- output -----------------------------------------------------------------------------------


def report(
    args: argparse.Namespace, alone_us: float, r: dict[str, Any], raw: Path
) -> dict[str, Any]:
    counts, total = categorise(raw)
    rate = r["actions_per_second"]
    cpu = r["cpu_percent_actions"]
    loop_us = cpu["server_event_loop_thread"] / 100 / rate * 1e6
    server_us = cpu["server"] / 100 / rate * 1e6
    parts = {part: n / total for part, n in counts.most_common()}
    rows = [
        (part, f"{100 * share:.1f} %", f"{share * loop_us:.0f}") for part, share in parts.items()
    ]
    head = "part of an action (event-loop thread, GIL samples)"
    others = "other threads of the server (gRPC core, store writer)"
    w0 = max(len(p) for p in [head, others, *parts])
    print(f"{head:<{w0}}  {'samples':>8}  {'us/action':>9}")
    print("-" * (w0 + 21))
    for part, share, us in rows:
        print(f"{part:<{w0}}  {share:>8}  {us:>9}")
    print("-" * (w0 + 21))
    print(f"{'event-loop thread, all parts':<{w0}}  {'':>8}  {loop_us:>9.0f}")
    print(f"{others:<{w0}}  {'':>8}  {server_us - loop_us:>9.0f}")
    print(f"{'server process':<{w0}}  {'':>8}  {server_us:>9.0f}")
    print()
    print(
        f"our code alone, in process (Session.submit, in-memory store, no transport): "
        f"{alone_us:.0f} us/action"
    )
    print(
        f"load: {r['actions']:,} actions at {rate:,.0f}/s, {args.matches} matches, think "
        f"{args.think_ms:g} ms, store {args.store}; {total:,} GIL samples at {args.rate}/s; "
        f"server {cpu['server']:.0f} % of a core "
        f"(event loop {cpu['server_event_loop_thread']:.0f} %), "
        f"clients {cpu['clients']:.0f} %, other processes {cpu['other_processes']:.0f} %"
    )
    if cpu["other_processes"] > 10:
        print(
            "warning: other processes used more than 10 % of a core: run again on a quiet machine"
        )
    return {
        "store": args.store,
        "matches": args.matches,
        "think_ms": args.think_ms,
        "actions_per_second": rate,
        "server_us_per_action": server_us,
        "event_loop_us_per_action": loop_us,
        "parts": parts,
        "samples": total,
        "code_alone_us_per_action": alone_us,
        "cpu_percent": cpu,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", choices=("memory", "sqlite"), default="memory")
    ap.add_argument("--matches", type=int, default=50, help="concurrent matches (50)")
    ap.add_argument("--think-ms", type=float, default=0.0, help="as bench/server.py (0)")
    ap.add_argument("--seconds", type=float, default=20.0, help="measured seconds (20)")
    ap.add_argument("--warmup", type=float, default=3.0, help="bench/server.py's warm-up (3)")
    ap.add_argument("--rate", type=int, default=250, help="py-spy samples per second (250)")
    ap.add_argument("--alone-actions", type=int, default=20_000, help="for part 1 (20,000)")
    ap.add_argument("--samples", metavar="PATH", help="keep py-spy's samples (raw) at PATH")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    args = ap.parse_args(argv)
    print("Where an action's server CPU goes (bench/action_profile.py)")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
    print()
    alone = code_alone_us(args.alone_actions)
    with tempfile.TemporaryDirectory(prefix="spades-action-profile-") as tmp:
        r, raw = profile_server(args, Path(tmp))
        result = report(args, alone, r, raw)
        if args.samples:
            shutil.copy(raw, args.samples)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
