#!/usr/bin/env python3
"""Engine benchmark: full random hands per CPU second on one core, ours
(compiled and pure builds) against OpenSpiel's C++ Spades engine.

Six paths, each in a process of its own (this script run again with
``--worker PATH --build BUILD``), which times one run of ``--seconds`` of its
own CPU time (``time.process_time``: one thread, so one core; other load on
the machine distorts it less than wall-clock time would) and prints its count
as JSON. The parent runs the paths in alternation, round by round: round 1
runs each path once, then round 2 each once, ... for ``--runs`` rounds, so a
drift of the machine's speed hits every path alike. Per path it reports the
best and the median of the rounds; the ratios and the targets use the best.

* OpenSpiel: ``pyspiel.load_game("spades")``, OpenSpiel's C++ engine through
  its Python bindings (the ``bench`` extra: ``.venv/bin/pip install -e
  '.[bench]'``; without it this path is skipped and said so). In OpenSpiel one
  game is one hand: the state is terminal, with the hand scored (``returns``),
  once the 52nd card is played, whatever the parameters. ``win_threshold``,
  ``mercy_threshold`` and ``win_or_loss_bonus`` only add a bonus to the returns
  and set ``is_game_over()``, and ``num_tricks`` (2) is how many past tricks
  the observation tensor shows, not the tricks of a hand (always 13). So the
  timed loop counts games, each one hand, with the default parameters: per hand
  ``game.new_initial_state()``; the deal, which is the hand's 52 chance nodes
  (each gives the next seat one of the cards left, uniformly); then while
  ``not is_terminal()``: ``legal_actions()`` and ``apply_action`` of one drawn
  uniformly (4 bids, 52 cards). Nothing but the hand's own state is carried
  from one hand to the next. Two loops, two paths, for the deal:

  - ``outcomes``: ``chance_outcomes()`` at each chance node and one of them
    drawn uniformly. The generic loop, the same for every engine (ask for the
    legal moves, draw one, apply it), and the one the issue measured OpenSpiel
    with: the ratio targets are judged against it (``--target-loop``).
  - ``shuffle``: a deck shuffled with ``random.Random.shuffle`` applied card by
    card, which is each chance outcome drawn uniformly from those left without
    asking for the list; about twice as fast as ``outcomes``, which builds 52
    lists of (card, probability) pairs. The fastest loop we found for it.
* public API: ``Match`` with a target score no one reaches and no mercy
  score, so hands keep coming; per hand the deal (shuffled inside the engine),
  the bids and every card are uniformly random legal actions from
  ``legal_actions``, then the scoring.
* kernel: ``spades_engine.kernel.random_hand`` (deal, random bids, random
  play on bitmasks, ``score_hand``), its choices from a ``kernel.Draws``.

Our two paths run in two builds of ``spades_engine``: the compiled one (mypyc
extension modules, ``spades_engine.COMPILED`` true; shown as "not built" when
that child loads the pure source instead) and the pure-Python source
(``SPADES_ENGINE_PURE=1`` in that child's environment).

The hands compared: OpenSpiel's Spades against our ``classic`` preset, both
4 players in 2 partnerships, 13 tricks, 10 per bid, overtricks are bags (+1
each, 10 bags cost 100), a nil is +-100, a set contract costs 10 per bid, no
blind nil. Where OpenSpiel's rules differ (which changes the hands played, not
the steps of one: 52 chance nodes, 4 bids and 52 cards):

* spades are never broken: its ``is_spades_broken_`` is never set, so a seat
  may lead a spade only when it holds nothing else, all hand long (ours: once
  any spade has been played);
* partners' bids add up to at most 13 (ours: any bid 0-13 for each seat);
* North bids first and leads the first trick of every game (ours: the seat
  left of the dealer, and the dealer moves on each hand);
* bags are the last digit of the running score (``current_scores``), zero in
  a new state, so a hand costs 100 only when it alone takes 10 bags (ours: the
  match's count goes on; the kernel path starts each hand from zero too);
* its win and mercy tests compare the hand's score, not the running total,
  with 500 and -350, so with the defaults they are never met (a hand scores
  -230 to 230); its mercy test ignores ``use_mercy_rule``.

Targets (``--check`` exits 1 when one is missed or cannot be measured):
compiled public API >= 2x OpenSpiel, compiled kernel >= 20x OpenSpiel (its
``--target-loop``, ``outcomes`` unless told), and the pure build's absolute
figures in ``TARGETS``. The ratios to both loops are printed either way.

    python3 bench/engine.py [--seconds 2] [--runs 5] [--preset classic]
                            [--target-loop outcomes] [--json out.json] [--check]
                            [--compiled-path DIR]
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from spades_engine import Match, Ruleset, preset
from spades_engine.kernel import Draws, random_hand

TARGETS = {"public": 3_000, "kernel": 15_000}  # pure build, hands per second on one core
RATIO_TARGETS = {"public": 2.0, "kernel": 20.0}  # compiled build, times OpenSpiel's hands/s
LABELS = {
    "openspiel": "OpenSpiel (C++, pyspiel)",
    "public": "public API (Match)",
    "kernel": "kernel.random_hand",
}
# OpenSpiel's two loops (the "build" of its paths): how its 52 chance nodes are
# dealt.  "outcomes" is the generic loop, the one the issue measured OpenSpiel
# with (the same loop for every engine: ask for the legal moves, draw one,
# apply it); "shuffle" is the fastest we found (see the module notes).
LOOPS = ("outcomes", "shuffle")
# (path, build) in the order each round runs them.
PATHS: list[tuple[str, str]] = [
    ("openspiel", "outcomes"),
    ("openspiel", "shuffle"),
    ("public", "compiled"),
    ("kernel", "compiled"),
    ("public", "pure"),
    ("kernel", "pure"),
]
INSTALL_HINT = ".venv/bin/pip install -e '.[bench]'"
OPENSPIEL_CARDS = 52


# -- the timed loops (in the workers) ------------------------------------------


def bench_openspiel(seconds: float, seed: int, deal: str) -> tuple[int, float]:
    """Hands (games) of OpenSpiel's Spades in about ``seconds``; (hands, elapsed)."""
    import pyspiel

    game = pyspiel.load_game("spades")
    rng = random.Random(seed)
    rnd = rng.random
    shuffle = rng.shuffle
    deck = list(range(OPENSPIEL_CARDS))
    by_outcomes = deal == "outcomes"
    hands = 0
    start = time.process_time()
    deadline = start + seconds
    while True:
        state = game.new_initial_state()
        if by_outcomes:
            while state.is_chance_node():
                outcomes = state.chance_outcomes()  # (card, 1 / cards left) each
                state.apply_action(outcomes[int(rnd() * len(outcomes))][0])
        else:
            shuffle(deck)
            for card in deck:  # chance node i gives card deck[i] to seat i % 4
                state.apply_action(card)
        while not state.is_terminal():  # 4 bids and 52 cards; the last scores the hand
            acts = state.legal_actions()
            state.apply_action(acts[int(rnd() * len(acts))])
        hands += 1
        now = time.process_time()
        if now >= deadline:
            return hands, now - start


def bench_public(rules: Ruleset, seconds: float, seed: int) -> tuple[int, float]:
    """Hands completed through ``Match`` in about ``seconds``; (hands, elapsed)."""
    m = Match(rules.replace(target_score=10**9, mercy_score=None), seed=seed)
    rnd = random.Random(seed).random
    hands = 0
    start = time.process_time()
    deadline = start + seconds
    while True:
        number = m.hand_number
        while m.hand_number == number:  # bids and plays of one hand; the last scores it
            seat = m.to_act
            if seat < 0:  # a blind nil exchange: its seats act in any order
                seat = m.seats_to_act()[0]
            acts = m.legal_actions(seat)
            m.apply(seat, acts[int(rnd() * len(acts))])
        hands += 1
        now = time.process_time()
        if now >= deadline:
            return hands, now - start


def bench_kernel(rules: Ruleset, seconds: float, seed: int) -> tuple[int, float]:
    """Hands completed by ``kernel.random_hand`` in about ``seconds``."""
    rng = Draws(seed)  # the kernel's own source of choices, as a bot would use it
    players = rules.players
    hands = 0
    start = time.process_time()
    deadline = start + seconds
    while True:
        random_hand(rules, rng, hands % players)
        hands += 1
        now = time.process_time()
        if now >= deadline:
            return hands, now - start


def engine_build() -> tuple[bool, str]:
    """Whether the loaded ``spades_engine`` is the compiled build, and where it is."""
    import spades_engine
    from spades_engine import kernel, match

    compiled = getattr(spades_engine, "COMPILED", None)
    if compiled is None:  # a build from before COMPILED: look at the modules timed
        suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
        compiled = all(str(mod.__file__).endswith(suffixes) for mod in (kernel, match))
    return bool(compiled), str(Path(str(spades_engine.__file__)).parent)


def worker(args: argparse.Namespace) -> int:
    """One timed run of one path; its figures as one line of JSON on stdout."""
    out: dict[str, Any] = {"path": args.worker, "build": args.build, "python": python_version()}
    if args.worker == "openspiel":
        import pyspiel

        out["built"] = True
        out["engine"] = f"open_spiel {openspiel_version()}, {pyspiel.__file__}"
        hands, elapsed = bench_openspiel(args.seconds, args.seed, args.build)
    else:
        compiled, where = engine_build()
        out["engine"] = f"{'compiled' if compiled else 'pure'}, {where}"
        if args.build == "pure" and compiled:
            print(
                f"SPADES_ENGINE_PURE=1 was set, yet the compiled build was loaded ({where})",
                file=sys.stderr,
            )
            return 2
        out["built"] = compiled == (args.build == "compiled")
        if not out["built"]:  # no compiled build installed: nothing to time
            print(json.dumps(out))
            return 0
        fn = bench_public if args.worker == "public" else bench_kernel
        hands, elapsed = fn(preset(args.preset), args.seconds, args.seed)
    out.update(hands=hands, seconds=round(elapsed, 3), hands_per_second=round(hands / elapsed, 1))
    print(json.dumps(out))
    return 0


# -- the parent: runs the workers in alternation and reports ---------------------


def python_version() -> str:
    return f"{platform.python_implementation()} {platform.python_version()}"


def openspiel_version() -> str | None:
    try:
        return metadata.version("open_spiel")
    except metadata.PackageNotFoundError:
        return None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def key(path: str, build: str) -> str:
    return f"{path}/{build}"


def run_worker(
    path: str, build: str, seed: int, args: argparse.Namespace
) -> tuple[dict[str, Any] | None, str]:
    """Run one worker; (its JSON, "") or (None, why it failed)."""
    env = dict(os.environ)
    env.pop("SPADES_ENGINE_PURE", None)
    if build == "pure":
        env["SPADES_ENGINE_PURE"] = "1"
    elif build == "compiled" and args.compiled_path:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (args.compiled_path, env.get("PYTHONPATH")) if p
        )
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        *("--worker", path, "--build", build, "--seed", str(seed)),
        *("--seconds", repr(args.seconds), "--preset", args.preset),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"]
        return None, lines[-1]
    try:
        result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None, f"no JSON on its stdout: {proc.stdout[-200:]!r}"
    return result, ""


def fmt_rate(r: float | None) -> str:
    return "-" if r is None else f"{r:,.0f}"


def fmt_ratio(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}x"


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else round(a / b, 3)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description="Full random hands per CPU second, ours against OpenSpiel's Spades."
    )
    ap.add_argument("--seconds", type=float, default=2.0, help="CPU seconds of each run (2)")
    ap.add_argument("--runs", type=int, default=5, help="rounds, each runs every path once (5)")
    ap.add_argument("--preset", default="classic", help="ruleset preset (default classic)")
    ap.add_argument(
        "--target-loop",
        choices=LOOPS,
        default="outcomes",
        help="the OpenSpiel loop the ratio targets are judged against: the generic "
        "chance_outcomes() loop the issue measured (default), or the shuffled deck",
    )
    ap.add_argument("--json", metavar="PATH", help="also write every figure as JSON to PATH")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument(
        "--compiled-path",
        metavar="DIR",
        help="put DIR first on PYTHONPATH for the compiled build's children only "
        "(to time a compiled copy of spades_engine that is not installed)",
    )
    ap.add_argument("--worker", choices=("openspiel", "public", "kernel"), help=argparse.SUPPRESS)
    ap.add_argument("--build", choices=(*LOOPS, "compiled", "pure"), help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.seconds <= 0 or args.runs < 1:
        ap.error("--seconds must be positive and --runs at least 1")
    return args


class Rounds:
    """Every path's runs, round by round, and what became of each path."""

    def __init__(self, have_openspiel: bool) -> None:
        self.keys = [key(p, b) for p, b in PATHS]
        self.runs: dict[str, list[dict[str, Any]]] = {k: [] for k in self.keys}
        # ok, not built (no compiled build), not installed (OpenSpiel), failed
        self.status = {k: "ok" for k in self.keys}
        self.engine: dict[str, str] = {}  # what each child loaded
        self.errors: dict[str, str] = {}
        if not have_openspiel:
            for loop in LOOPS:
                self.status[key("openspiel", loop)] = "not installed"

    def run(self, args: argparse.Namespace, python: str) -> None:
        """``args.runs`` rounds, each path once a round; a line per round."""
        print("  ".join([f"{'round':<5}", *(f"{k:>15}" for k in self.keys)]), "  (hands/s)")
        for rnd in range(1, args.runs + 1):
            cells = [f"{rnd:<5}"]
            for (path, build), k in zip(PATHS, self.keys, strict=True):
                if self.status[k] == "ok":
                    self.run_one(path, build, k, rnd, args, python)
                ok = self.status[k] == "ok" and len(self.runs[k]) == rnd
                cell = fmt_rate(self.runs[k][-1]["hands_per_second"]) if ok else self.status[k]
                cells.append(f"{cell:>15}")
            print("  ".join(cells), flush=True)

    def run_one(
        self, path: str, build: str, k: str, rnd: int, args: argparse.Namespace, python: str
    ) -> None:
        result, why = run_worker(path, build, rnd, args)
        if result is None:
            self.status[k], self.errors[k] = "failed", why
            return
        self.engine[k] = result["engine"]
        if result.get("python") != python:
            self.engine[k] += f" (python {result.get('python')})"
        if result["built"]:
            self.runs[k].append(result)
        else:
            self.status[k] = "not built"
            self.engine[k] = f"not built: this child loaded {result['engine']}"

    def best(self, k: str) -> float | None:
        return max((r["hands_per_second"] for r in self.runs[k]), default=None)

    def median(self, k: str) -> float | None:
        rates = [r["hands_per_second"] for r in self.runs[k]]
        return round(statistics.median(rates), 1) if rates else None


def summarize(
    rounds: Rounds, target_loop: str
) -> tuple[dict[str, dict[str, Any]], list[list[str]]]:
    """Per path its figures, ratios and target (for the JSON), and the table's rows."""
    os_best = {loop: rounds.best(key("openspiel", loop)) for loop in LOOPS}
    os_median = {loop: rounds.median(key("openspiel", loop)) for loop in LOOPS}
    paths: dict[str, dict[str, Any]] = {}
    rows: list[list[str]] = []
    for (path, build), k in zip(PATHS, rounds.keys, strict=True):
        best, median = rounds.best(k), rounds.median(k)
        p: dict[str, Any] = {
            "path": path,
            "build": build,
            "status": rounds.status[k],
            "engine": rounds.engine.get(k),
            "error": rounds.errors.get(k),
            "runs": [
                {x: r[x] for x in ("hands", "seconds", "hands_per_second")} for r in rounds.runs[k]
            ],
            "best_hands_per_second": best,
            "median_hands_per_second": median,
        }
        target = ok = ""
        vs: dict[str, dict[str, float | None]] = {}
        if path != "openspiel":
            vs = {
                loop: {"best": ratio(best, os_best[loop]), "median": ratio(median, os_median[loop])}
                for loop in LOOPS
            }
            p["vs_openspiel"] = vs
            if build == "compiled":
                against = vs[target_loop]["best"]
                p["target_vs_openspiel"] = {"loop": target_loop, "ratio": RATIO_TARGETS[path]}
                p["meets_target"] = against is not None and against >= RATIO_TARGETS[path]
                target = f">= {RATIO_TARGETS[path]:g}x OS {target_loop}"
            else:
                p["target_hands_per_second"] = TARGETS[path]
                p["meets_target"] = best is not None and best >= TARGETS[path]
                target = f">= {TARGETS[path]:,} hands/s"
            ok = "yes" if p["meets_target"] else "NO"
        paths[k] = p
        rows.append(
            [
                LABELS[path],
                build if rounds.status[k] == "ok" else rounds.status[k],
                fmt_rate(best),
                fmt_rate(median),
                *(fmt_ratio(vs.get(loop, {}).get("best")) for loop in LOOPS),
                target,
                ok,
            ]
        )
    return paths, rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rules = preset(args.preset)
    if args.worker:
        return worker(args)

    python = python_version()
    cpu = cpu_model()
    os_version = openspiel_version()
    have_openspiel = os_version is not None and importlib.util.find_spec("pyspiel") is not None
    print("Spades engine benchmark: full random hands per CPU second, one core")
    print(f"python     {python} ({sys.executable})")
    print(f"cpu        {cpu}")
    print(f"preset     {args.preset} ({rules.players} players, {rules.tricks_per_hand} tricks)")
    if have_openspiel:
        print(
            f"openspiel  {os_version}: game spades, one game a hand; two loops, the deal by "
            "chance_outcomes() (generic) and by a shuffled deck"
        )
    else:
        print(f"openspiel  not installed, skipped: {INSTALL_HINT}")
    if args.preset != "classic":
        print(f"           (OpenSpiel's hands are classic-like: the ratios to {args.preset}")
        print("           compare unlike hands)")
    rounds_text = f"{args.runs} round{'s' if args.runs != 1 else ''}"
    print(
        f"timing     {rounds_text}; each runs every path once, each in its own "
        f"process, for {args.seconds:g} s of its CPU time"
    )
    print()
    rounds = Rounds(have_openspiel)
    rounds.run(args, python)
    print()

    paths, rows = summarize(rounds, args.target_loop)
    from server import print_grid  # bench/server.py's table printer

    print_grid(
        ["path", "build", "best", "median", "xOS outcomes", "xOS shuffle", "target (best)", "ok"],
        rows,
        left=2,
    )
    print()
    compiled_over_pure: dict[str, dict[str, float | None]] = {}
    for path in ("public", "kernel"):
        c, p = f"{path}/compiled", f"{path}/pure"
        r = {
            "best": ratio(rounds.best(c), rounds.best(p)),
            "median": ratio(rounds.median(c), rounds.median(p)),
        }
        compiled_over_pure[path] = r
        print(
            f"compiled/pure  {LABELS[path]:<20} best {fmt_ratio(r['best']):>7}   "
            f"median {fmt_ratio(r['median']):>7}"
        )
    print()
    print("builds (what each child loaded):")
    for k in rounds.keys:
        shown = rounds.engine.get(k) or (INSTALL_HINT if k.startswith("openspiel") else "-")
        if k in rounds.errors:
            shown = f"FAILED: {rounds.errors[k]}"
        print(f"  {k:<16} {shown}")

    missed = [k for k, p in paths.items() if p.get("meets_target") is False]
    if args.json:
        report = {
            "python": python,
            "cpu": cpu,
            "preset": args.preset,
            "rounds": args.runs,
            "seconds_per_run": args.seconds,
            "openspiel": {"version": os_version, "loops": list(LOOPS)},
            "target_loop": args.target_loop,
            "paths": paths,
            "compiled_over_pure": compiled_over_pure,
            "missed": missed,
        }
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
        print(f"\nwrote {args.json}")
    if rounds.errors:
        return 1
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
