"""``spades-tournament``: duplicate matches between two bot line-ups.

spades-tournament --a hard --b normal --deals 400
spades-tournament --a expert --b hard --games 500 --json out.json --png out.png
spades-tournament --a expert@compiled --b expert@pure --deals 300 --budget-a 50 --budget-b 200
spades-tournament --a omniscient --b hard --deals 300
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from .record_cli import pretty_json
from .ruleset import OPTION_NAMES, PRESETS, RulesetError, parse_option, preset
from .tournament import (
    Config,
    TournamentError,
    bot_names,
    check_config,
    format_report,
    run,
    split_name,
    summarize,
)
from .tournament_chart import ChartUnavailable, render

PROG = "spades-tournament"


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, or a usage error (argparse already printed it)
        return e.code if isinstance(e.code, int) else 2
    if args.list_bots:
        print("\n".join(bot_names()))
        return 0
    if not args.a or not args.b or (args.deals is None) == (args.games is None):
        parser.print_usage(sys.stderr)
        print(
            f"{PROG}: error: give --a and --b, and exactly one of --deals N or --games N",
            file=sys.stderr,
        )
        return 2
    try:
        rules = preset(args.preset, **dict(parse_option(t) for t in args.options))
        cfg = Config(
            rules=rules,
            a=_lineup(args.a),
            b=_lineup(args.b),
            mode="deals" if args.deals is not None else "games",
            count=args.deals if args.deals is not None else args.games,
            seed=args.seed,
            budget_ms=args.budget_ms,
            budget_a_ms=args.budget_a,
            budget_b_ms=args.budget_b,
            max_hands=args.max_hands,
            independent_seeds=args.independent_seeds,
        )
        check_config(cfg)
        jobs = args.jobs if args.jobs is not None else (os.cpu_count() or 1)
        if jobs < 1:
            raise TournamentError("--jobs must be at least 1")
    except (RulesetError, TournamentError, ValueError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    unit = "deals" if cfg.mode == "deals" else "games"
    bar = None if args.quiet else ProgressBar(sys.stderr, unit)
    start = time.perf_counter()
    try:
        results = run(cfg, jobs, bar)
    except TournamentError as e:  # a bot chose an illegal action
        if bar:
            bar.close()
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        if bar:
            bar.close()
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    if bar:
        bar.close()
    elapsed = time.perf_counter() - start
    summary = summarize(cfg, results, preset_name=_rules_name(args), jobs=jobs, elapsed_s=elapsed)
    print(format_report(summary))
    try:
        if args.json:
            _write(args.json, (pretty_json(summary) + "\n").encode())
        if args.png:
            _write(args.png, render(summary))
    except OSError as e:
        print(f"{PROG}: cannot write {e.filename}: {e.strerror or e}", file=sys.stderr)
        return 1
    except ChartUnavailable as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Duplicate tournament: two bot line-ups play the same deals with the seats "
        "swapped (in cutthroat, rotated through every seat), so the luck of the cards cancels. "
        "Prints the mean A - B points per hand over the duplicate pairs with its 95% CI, the "
        "win rate (games mode), nil bids and bags per line-up, and think time per bot. "
        "A bot is a registered level (--list-bots) or the tournament-only 'omniscient' "
        "yardstick, which sees every hand; NAME@compiled is the bot of the compiled build "
        "(refused when it is not the one loaded) and NAME@pure the bot of the pure-Python "
        "sources, played on a mirror match, so both builds can meet in one run.",
    )
    p.add_argument(
        "--a",
        metavar="BOTS",
        help="line-up A: a bot name, or a comma-separated list used in turn for the seats A "
        "holds (e.g. hard,normal: seat 0 hard, seat 2 normal)",
    )
    p.add_argument("--b", metavar="BOTS", help="line-up B, like --a")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--deals",
        type=int,
        metavar="N",
        help="play N single hands, each dealt from the seed and replayed in every seating",
    )
    mode.add_argument(
        "--games",
        type=int,
        metavar="N",
        help="play N whole games to the target score, each with one match seed in every seating",
    )
    p.add_argument(
        "--jobs",
        type=int,
        metavar="J",
        help="worker processes (default: the number of CPUs; 1 plays in this process)",
    )
    p.add_argument(
        "--preset",
        default="classic",
        choices=sorted(PRESETS),
        help="the table rules to start from (default: classic)",
    )
    p.add_argument(
        "--set",
        dest="options",
        action="append",
        default=[],
        metavar="OPTION=VALUE",
        help="change one ruleset option (values are JSON: true, false, null, numbers; anything "
        f"else is a string); repeatable. Options: {', '.join(OPTION_NAMES)}",
    )
    p.add_argument(
        "--budget-ms",
        type=int,
        default=200,
        metavar="MS",
        help="time budget passed to every bot call (default: 200)",
    )
    p.add_argument(
        "--budget-a",
        type=int,
        metavar="MS",
        help="line-up A's budget instead of --budget-ms (e.g. the compiled build at 50 ms "
        "against the pure one at 200)",
    )
    p.add_argument("--budget-b", type=int, metavar="MS", help="line-up B's budget, like --budget-a")
    p.add_argument("--seed", type=int, default=1, help="seed of the deals and games (default: 1)")
    p.add_argument(
        "--max-hands",
        type=int,
        default=200,
        metavar="N",
        help="games mode: a game not over after N hands counts as half a win each (default: 200)",
    )
    p.add_argument(
        "--independent-seeds",
        action="store_true",
        help="give the two line-ups different bot seeds; by default a seat's bot gets the same "
        "seed in every seating, so identical bots tie exactly",
    )
    p.add_argument("--json", metavar="PATH", help="write the result as JSON")
    p.add_argument("--png", metavar="PATH", help="write a bar chart of the result as PNG")
    p.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    p.add_argument(
        "--list-bots",
        action="store_true",
        help="print the bots the tournament knows (the registered levels, then the "
        "tournament-only ones) and exit",
    )
    return p


class ProgressBar:
    """A rich progress bar on stderr (the optional ``tools`` extra): redrawn
    on a terminal, written once at the end otherwise; without rich, none."""

    def __init__(self, stream: TextIO, unit: str) -> None:
        self.progress: Any = None
        self.task: Any = None
        try:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
        except ImportError:
            print(f"{PROG}: no progress bar without rich: pip install 'spades-engine[tools]'",
                  file=stream)  # fmt: skip
            return
        self.progress = Progress(
            BarColumn(),
            MofNCompleteColumn(),
            f"[progress.description]{unit}",
            TimeElapsedColumn(),
            console=Console(file=stream),
            transient=False,
        )
        self.task = self.progress.add_task(unit, total=None)
        self.progress.start()

    def __call__(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress.update(self.task, completed=done, total=total)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def _lineup(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names:
        raise TournamentError(f"line-up {text!r} names no bot")
    known = set(bot_names())
    out = []
    for n in names:
        base, build = split_name(n)
        base = base if base in known or base.lower() not in known else base.lower()
        out.append(base if build is None else f"{base}@{build.lower()}")
    return tuple(out)


def _rules_name(args: argparse.Namespace) -> str:
    name: str = args.preset
    return name + "".join(f" {t}" for t in args.options)


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    sys.exit(main())
