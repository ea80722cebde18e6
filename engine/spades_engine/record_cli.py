"""``spades-record``: check game records and produce sample ones.

spades-record validate FILE          replay a record; print hand-by-hand results as JSON
spades-record play --preset classic --seed 7 --out game.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections.abc import Sequence
from typing import Any

from .deck import check_seed
from .errors import SpadesError
from .match import Match
from .record import (
    RecordError,
    dumps_record,
    loads_record,
    read_record,
    record_of,
    replay_events,
    results_of,
)
from .ruleset import OPTION_NAMES, PRESETS, Ruleset, parse_option, preset

PROG = "spades-record"


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, or a usage error (argparse already printed it)
        return e.code if isinstance(e.code, int) else 2
    try:
        if args.command == "validate":
            return _validate(args.file, args.compact)
        return _play(args)
    except BrokenPipeError:  # e.g. piped into `head`: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Check Spades game records (format spades-record, version 1) and "
        "produce sample ones by random play.",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    v = sub.add_parser(
        "validate",
        help="replay a record and print its hand-by-hand results",
        description="Replay every action of a game record through the engine. If the record "
        "is valid, print its results as JSON on stdout and exit 0: for each scored hand its "
        "number (from 1), dealer, bids, blind nil flags and tricks by seat, and per side the "
        "contract, tricks, points, bags and score; then the match result if the match is "
        "over. Otherwise print what is wrong on stderr (for an illegal action: its index, "
        "seat and the engine's reason) and exit 1.",
    )
    v.add_argument("file", metavar="FILE", help="the record, a JSON file ('-' reads stdin)")
    v.add_argument("--compact", action="store_true", help="print the JSON on one line")

    pl = sub.add_parser(
        "play",
        help="play a match with random legal actions and write its record",
        description="Play a whole match in which every seat picks uniformly at random among "
        "its legal actions (a seeded RNG, so the same arguments give the same record), and "
        "write the game record. Random bidding may never reach the target score under some "
        "rules, so play stops after --max-hands hands.",
    )
    pl.add_argument(
        "--preset",
        default="classic",
        choices=sorted(PRESETS),
        help="the table rules to start from (default: classic)",
    )
    pl.add_argument(
        "--set",
        dest="options",
        action="append",
        default=[],
        metavar="OPTION=VALUE",
        help="change one ruleset option, e.g. --set players=3 or --set blind_nil_deficit=0 "
        "(values are JSON: true, false, null, numbers; anything else is a string); repeatable. "
        f"Options: {', '.join(OPTION_NAMES)}",
    )
    pl.add_argument(
        "--seed", type=int, required=True, help="the match seed (deals) and the RNG's seed"
    )
    pl.add_argument(
        "--max-hands",
        type=int,
        default=50,
        metavar="N",
        help="stop after N scored hands if the match is not over (default: 50)",
    )
    pl.add_argument("--out", metavar="FILE", help="write the record here (default: stdout)")
    return p


def _validate(path: str, compact: bool) -> int:
    try:
        record = _read_stdin() if path == "-" else read_record(path)
        match, events = replay_events(record)
    except SpadesError as e:  # a RecordError, unless the engine has a bug
        print(f"{PROG}: {path}: invalid record: {_one_line(e)}", file=sys.stderr)
        return 1
    report = {"file": path, "valid": True, **results_of(match, events)}
    print(json.dumps(report) if compact else pretty_json(report))
    return 0


def _read_stdin() -> dict[str, Any]:
    data = sys.stdin.buffer.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RecordError(f"stdin is not UTF-8 text: {e}") from None
    return loads_record(text)


def _one_line(e: Exception) -> str:
    """The message on one line: what a shell script greps, and a log keeps whole."""
    return " ".join(str(e).split())


def pretty_json(value: Any, indent: int = 0, width: int = 100) -> str:
    """Indented JSON that keeps any list or object fitting in ``width`` on one line."""
    flat = json.dumps(value, separators=(", ", ": "))
    if len(flat) + indent <= width or not isinstance(value, dict | list) or not value:
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = [
            f"{pad}{json.dumps(k)}: {pretty_json(v, indent + 2, width)}" for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + pretty_json(v, indent + 2, width) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def _play(args: argparse.Namespace) -> int:
    try:
        overrides = dict(parse_option(text) for text in args.options)
        rules = preset(args.preset, **overrides)
        check_seed(args.seed)
    except SpadesError as e:
        print(f"{PROG} play: {_one_line(e)}", file=sys.stderr)
        return 2
    if args.max_hands < 1:
        print(f"{PROG} play: --max-hands must be at least 1", file=sys.stderr)
        return 2
    match = play_random(rules, args.seed, args.max_hands)
    text = dumps_record(record_of(match))
    if args.out:
        try:
            with open(args.out, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            print(f"{PROG} play: cannot write {args.out}: {e.strerror or e}", file=sys.stderr)
            return 1
    else:
        sys.stdout.write(text)
    hands = len(match.state.results)
    if match.is_over:
        note = f"match over after {hands} hand(s): side {match.winner} wins, scores {match.scores}"
    else:
        note = f"stopped after {hands} hand(s) without a winner, scores {match.scores}"
    print(f"{PROG} play: {note}", file=sys.stderr)
    return 0


def play_random(rules: Ruleset, seed: int, max_hands: int) -> Match:
    """A match where each step picks a seat that may act, then one of its legal
    actions, uniformly at random; stops when over or after ``max_hands`` hands."""
    match = Match(rules, seed=seed)
    rng = random.Random(seed)
    while not match.is_over and len(match.state.results) < max_hands:
        seat = rng.choice(match.seats_to_act())
        match.apply(seat, rng.choice(match.legal_actions(seat)))
    return match


if __name__ == "__main__":
    sys.exit(main())
