"""The ``spades`` command: play, watch and replay Spades in a terminal."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Coroutine, Iterable, Sequence
from typing import Any, Final

from rich.console import Console

from .. import _helpers
from .._client import Client, connect
from .._errors import SpadesError
from .._gen.spades.v1 import spades_pb2 as pb
from .embedded import EmbeddedServer, ServerUnavailable
from .lines import LineReader
from .lobby import (
    GUEST_PORT,
    CredentialError,
    Identity,
    LobbyFlow,
    fetch_guest,
    guest_url,
    identity_of,
)
from .play import PlayLoop, Rejoin
from .render import Renderer, hint
from .standings import StandingsView, around_id
from .watch import WatchLoop

__all__ = ["main"]

PROG: Final = "spades"
DEFAULT_ADDRESS: Final = "localhost:50051"
LOBBY_COMMANDS: Final = frozenset({"lobby", "join", "quickplay", "me", "top"})
BOT_LEVELS: Final[dict[str, pb.BotLevel.ValueType]] = {
    "random": pb.BOT_LEVEL_RANDOM,
    "easy": pb.BOT_LEVEL_EASY,
    "normal": pb.BOT_LEVEL_NORMAL,
    "hard": pb.BOT_LEVEL_HARD,
    "expert": pb.BOT_LEVEL_EXPERT,
}
# docs/rules.md spells the bag rules with digits; the enum with words.
_SPELLINGS: Final = {"bag_rule": {"10_for_100": "ten_for_100", "5_for_50": "five_for_50"}}


def _ruleset_options() -> tuple[tuple[str, ...], tuple[str, ...], dict[str, dict[str, int]]]:
    """The options of ``pb.Ruleset`` by kind, read from the contract itself so that
    an option added to the proto is accepted here without a change: int32 and bool
    fields, and enum fields with their values by lower-case name without the prefix
    (``SCORING_TRICKS`` is ``tricks``)."""
    ints: list[str] = []
    bools: list[str] = []
    enums: dict[str, dict[str, int]] = {}
    for f in pb.Ruleset.DESCRIPTOR.fields:
        if f.name in ("preset", "no_mercy_score"):  # --preset, and mercy_score=none
            continue
        if f.enum_type is not None:
            unset = f.enum_type.values_by_number[0].name  # e.g. SCORING_UNSPECIFIED
            prefix = unset.removesuffix("UNSPECIFIED")
            values = {v.name.removeprefix(prefix).lower(): v.number for v in f.enum_type.values}
            values.pop("unspecified")
            for spelled, name in _SPELLINGS.get(f.name, {}).items():
                values[spelled] = values[name]
            enums[f.name] = values
        elif f.type == f.TYPE_BOOL:
            bools.append(f.name)
        else:
            ints.append(f.name)
    return tuple(ints), tuple(bools), enums


_INTS, _BOOLS, _ENUMS = _ruleset_options()
OPTION_NAMES: Final = (*_INTS, *_BOOLS, *_ENUMS)


class UsageError(Exception):
    """A command line that cannot be carried out; the message says why."""


# -- the command line ----------------------------------------------------------------


ASCII_HELP = "write suits as letters (QS), not symbols (Q♠)"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Play Spades in a terminal against bots or other players (through "
        "the lobby, quick play or an invite code), see your profile and the leaderboards of "
        "rated play, watch a match, or step through a game record.",
    )
    p.add_argument("--ascii", action="store_true", help=ASCII_HELP)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    pl = sub.add_parser(
        "play",
        help="play a match against bots",
        description="Play one seat of a match against bots. Without --address, a server of "
        "its own is started for the game (this needs the spades_server package) and stopped "
        "at the end. With --address, a match is created there (with --operator-token), or "
        "joined with --match and --token. Type ? at the prompt for what it accepts.",
    )
    pl.add_argument("--address", metavar="HOST:PORT", help="a running server (default: start one)")
    pl.add_argument(
        "--operator-token",
        metavar="T",
        default=os.environ.get("SPADES_OPERATOR_TOKEN"),
        help="the server's operator credential, to create a match [SPADES_OPERATOR_TOKEN]",
    )
    pl.add_argument(
        "--preset",
        default="classic",
        metavar="NAME",
        help="the table rules: classic (default), polish, german or bulgarian",
    )
    pl.add_argument(
        "--set",
        dest="options",
        action="append",
        default=[],
        metavar="OPTION=VALUE",
        help="change one rule of the preset, e.g. --set target_score=200 or --set players=3 "
        f"(repeatable). Options: {', '.join(OPTION_NAMES)}; docs/rules.md describes them",
    )
    pl.add_argument(
        "--bots",
        default="normal",
        metavar="LEVELS",
        help="the bots' levels, one for all or one per bot seat in order, comma separated: "
        f"{', '.join(BOT_LEVELS)} (default: normal)",
    )
    pl.add_argument("--seed", type=int, help="the deal seed (the same seed, the same deals)")
    pl.add_argument("--name", default="You", help="your name at the table (default: You)")
    pl.add_argument("--match", metavar="ID", help="join this match (with --token)")
    pl.add_argument("--token", metavar="SEAT_TOKEN", help="your seat token in --match")
    _pace(pl)
    pl.add_argument(
        "--no-pause",
        action="store_true",
        help="go on to the next hand without waiting for Enter",
    )

    w = sub.add_parser(
        "watch",
        help="watch a match as a spectator",
        description="Watch a match as a spectator: its public events (bids, cards played, "
        "tricks, scores), never a card in anyone's hand. Stops when the match ends, or on "
        "q + Enter.",
    )
    w.add_argument("match", metavar="MATCH", help="the match id")
    w.add_argument("--address", metavar="HOST:PORT", default=DEFAULT_ADDRESS, help="the server")
    w.add_argument(
        "--operator-token",
        metavar="T",
        default=os.environ.get("SPADES_OPERATOR_TOKEN"),
        help="optional: the operator credential, to show the players' names and the rules",
    )
    _pace(w)

    lo = sub.add_parser(
        "lobby",
        help="the tables waiting for players: sit at one, or open one",
        description="The public tables waiting for players, kept up to date: type a table's "
        "number to sit at it, `open` to open a table (`open invite` for an invite-only one, "
        "whose code friends join with `spades join CODE`), q to quit. Once the table has "
        "started, you play it as `spades play` does. With --preset or --set, only tables of "
        "those rules are listed (and `open` opens one of them).",
    )
    _player(lo)
    _rules(lo)
    _pace(lo)
    _no_pause(lo)

    jo = sub.add_parser(
        "join",
        help="sit at an invite-only table by its code",
        description="Sit at an invite-only table by its invite code (as shown, or read aloud: "
        "case, spaces and dashes do not matter), wait until it starts, then play it as "
        "`spades play` does.",
    )
    jo.add_argument("code", metavar="CODE", help="the table's invite code, e.g. ABCDE-FGHJK")
    jo.add_argument("--seat", type=int, metavar="N", help="the seat wanted (default: any)")
    _player(jo)
    _pace(jo)
    _no_pause(jo)

    qp = sub.add_parser(
        "quickplay",
        help="ask for a game with other players (bots fill in after a wait)",
        description="Ask the matchmaker for a game: you are seated with other players who "
        "asked for the same rules, and bots take the seats nobody took after a wait. With "
        "--partner, as that player's partner (they ask naming you). Shows the wait (q "
        "withdraws the ticket), then plays the seat as `spades play` does.",
    )
    qp.add_argument(
        "--partner", metavar="PLAYER_ID", default="", help="play as this player's partner"
    )
    qp.add_argument(
        "--rated",
        action="store_true",
        help="a rated game, with players of a similar rating (not rated if bots fill in)",
    )
    _player(qp)
    _rules(qp)
    _pace(qp)
    _no_pause(qp)

    me = sub.add_parser(
        "me",
        help="your profile: ratings, rank and record",
        description="Your profile (or another player's, with --player): your rating in each "
        "pool you played rated matches in, with your rank, games, wins and losses; and your "
        "record in matches with humans only and in matches with bots (contracts made, mean "
        "bid and tricks, bags per hand, nils and blind nils, sets).",
    )
    me.add_argument("--player", metavar="PLAYER_ID", help="another player's profile")
    _player(me)

    top = sub.add_parser(
        "top",
        help="a leaderboard of rated play",
        description="A page of a rating pool's leaderboard, best first: the top, or the page "
        "around a player (--around me, or a player id). At a terminal, n and p go to the "
        "next and the previous page and q quits; otherwise the command for the next page "
        "is printed (--page-token).",
    )
    top.add_argument(
        "--pool",
        default="",
        metavar="NAME",
        help="the rating pool: a preset, classic (default), polish, german, bulgarian, ...",
    )
    top.add_argument(
        "--page-size", type=int, default=0, metavar="N", help="players per page (default 25)"
    )
    top.add_argument(
        "--around", metavar="me|PLAYER_ID", help="the page that holds you, or this player"
    )
    top.add_argument(
        "--page-token", default="", metavar="T", help="a page another run printed (next, previous)"
    )
    _player(top)

    r = sub.add_parser(
        "replay",
        help="step through a game record",
        description="Step through a game record (the JSON spades-record format of "
        "ExportMatch's record_json and the spades-record command): Enter for the next "
        "action, b back, a number to jump, q to quit. Every seat's cards are shown. The "
        "positions are recomputed by the rules engine, spades_engine, which must be "
        "installed (it comes with the project's server).",
    )
    r.add_argument("file", metavar="FILE", help="the record (JSON)")
    r.add_argument("--no-clear", action="store_true", help="do not clear the screen between steps")
    return _ascii_after(p, sub.choices.values())


def _ascii_after(
    p: argparse.ArgumentParser, commands: Iterable[argparse.ArgumentParser]
) -> argparse.ArgumentParser:
    """--ascii after the command too (spades play --ascii); SUPPRESS keeps the
    value given before it when it is not repeated after."""
    for command in commands:
        command.add_argument(
            "--ascii", action="store_true", default=argparse.SUPPRESS, help=ASCII_HELP
        )
    return p


def _player(p: argparse.ArgumentParser) -> None:
    """Where the lobby is, and who the player is."""
    p.add_argument(
        "--address", metavar="HOST:PORT", default=DEFAULT_ADDRESS, help="the server (or Envoy)"
    )
    p.add_argument(
        "--credential",
        metavar="JWT",
        help="your player credential, from the game's identity provider [SPADES_CREDENTIAL]",
    )
    p.add_argument(
        "--guest",
        action="store_true",
        help="development only: get a guest credential from the web table's server that "
        f"`make run` starts (POST /api/guest on port {GUEST_PORT} of --address's host)",
    )
    p.add_argument("--name", help="with --guest: your name at the table")
    p.add_argument(
        "--web",
        metavar="HOST:PORT",
        default=os.environ.get("SPADES_WEB_URL"),
        help=f"with --guest: the web table's server (default: port {GUEST_PORT} of "
        "--address's host) [SPADES_WEB_URL]",
    )


def _rules(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--preset",
        metavar="NAME",
        help="the rules: classic (default), polish, german or bulgarian",
    )
    p.add_argument(
        "--set",
        dest="options",
        action="append",
        default=[],
        metavar="OPTION=VALUE",
        help="change one rule of the preset (repeatable), as for `spades play`",
    )


def _no_pause(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-pause",
        action="store_true",
        help="go on to the next hand without waiting for Enter",
    )


def _pace(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pace-ms",
        type=int,
        default=600,
        metavar="MS",
        help="pause after each action of another seat, so that it can be followed "
        "(default: 600; 0: none)",
    )


def parse_options(texts: Sequence[str], preset: str) -> pb.Ruleset:
    """``--preset`` and ``--set OPTION=VALUE`` as a ``Ruleset`` (the values as JSON)."""
    ruleset = pb.Ruleset(preset=preset)
    for text in texts:
        name, sep, raw = text.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"--set {text!r}: expected OPTION=VALUE")
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw.strip()
        if name in _ENUMS:
            table = _ENUMS[name]
            if value not in table:
                raise UsageError(f"--set {name}: one of {', '.join(table)}, not {raw!r}")
            setattr(ruleset, name, table[value])
        elif name == "mercy_score" and value in (None, "none", "off"):
            ruleset.no_mercy_score = True
        elif name in _INTS:
            if type(value) is not int:
                raise UsageError(f"--set {name}: a whole number, not {raw!r}")
            setattr(ruleset, name, value)
        elif name in _BOOLS:
            if type(value) is not bool:
                raise UsageError(f"--set {name}: true or false, not {raw!r}")
            setattr(ruleset, name, value)
        else:
            raise UsageError(f"--set: no option {name!r}; options: {', '.join(OPTION_NAMES)}")
    return ruleset


def bot_levels(text: str, bots: int) -> list[pb.BotLevel.ValueType]:
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in BOT_LEVELS]
    if unknown or not names:
        raise UsageError(f"--bots: levels are {', '.join(BOT_LEVELS)}, not {text!r}")
    if len(names) == 1:
        names *= bots
    if len(names) != bots:
        raise UsageError(f"--bots: this table has {bots} bot seats, --bots gives {len(names)}")
    return [BOT_LEVELS[n] for n in names]


# -- play ----------------------------------------------------------------------------------


async def _play(args: argparse.Namespace, console: Console, renderer: Renderer) -> int:
    if (args.match is None) != (args.token is None):
        raise UsageError("--match and --token go together (join a match with both)")
    if args.token is not None and args.token.partition(".")[0] != args.match:
        raise UsageError(f"the seat token is not one of match {args.match}")
    if args.token is not None and args.address is None:
        raise UsageError("to join a match, say where it is: --address HOST:PORT")
    if args.pace_ms < 0:
        raise UsageError("--pace-ms must be 0 or more")
    ruleset = parse_options(args.options, args.preset)
    players = ruleset.players if ruleset.HasField("players") else 4
    levels = bot_levels(args.bots, players - 1) if args.token is None else []
    if args.address is None:
        console.print(hint("Starting a server for this game..."), style="dim")
        async with (
            EmbeddedServer() as server,
            connect(server.address, operator_token=server.operator_token) as client,
        ):
            return await _play_on(args, console, renderer, client, ruleset, levels, None)
    async with connect(args.address, operator_token=args.operator_token) as client:
        return await _play_on(args, console, renderer, client, ruleset, levels, args.address)


async def _play_on(
    args: argparse.Namespace,
    console: Console,
    renderer: Renderer,
    client: Client,
    ruleset: pb.Ruleset,
    levels: list[pb.BotLevel.ValueType],
    address: str | None,
) -> int:
    token = args.token
    if token is None:
        if not client.operator_token:
            raise UsageError(
                "creating a match needs the server's operator credential: --operator-token T "
                "(or SPADES_OPERATOR_TOKEN); or join a match with --match and --token"
            )
        seats = [_helpers.human(args.name)]
        seats += [_helpers.bot(f"Bot {i + 1}", level) for i, level in enumerate(levels)]
        created = await client.create_match(ruleset=ruleset, seats=seats, seed=args.seed)
        token = _helpers.seat_token(created, 0)
        match_id = created.match.match_id
        if address is not None:
            console.print(hint(f"Match `{match_id}` created; your seat token is:"))
            console.print(token, style="bold cyan", soft_wrap=True)
        else:
            console.print(hint(f"Match `{match_id}` created."), style="dim")
    loop = PlayLoop(
        console,
        client.seat(token),
        LineReader().start(),
        renderer=renderer,
        pace_s=args.pace_ms / 1000.0,
        rejoin=Rejoin(address, token) if address is not None else None,
        pause_between_hands=not args.no_pause,
    )
    try:
        return await loop.run()
    finally:
        loop.reader.close()


# -- watch -------------------------------------------------------------------------------


async def _watch(args: argparse.Namespace, console: Console, renderer: Renderer) -> int:
    async with connect(args.address, operator_token=args.operator_token) as client:
        summary = None
        if args.operator_token:
            with contextlib.suppress(SpadesError):
                summary = await client.get_match(args.match)
        reader = LineReader().start()
        try:
            loop = WatchLoop(
                console,
                client,
                args.match,
                reader,
                renderer=renderer,
                pace_s=args.pace_ms / 1000.0,
                summary=summary,
            )
            return await loop.run()
        finally:
            reader.close()


# -- the lobby ---------------------------------------------------------------------------


async def _identity(args: argparse.Namespace) -> Identity:
    if args.guest and args.credential:
        raise UsageError("--guest or --credential, not both")
    if args.guest:
        return await fetch_guest(guest_url(args.address, args.web), args.name)
    credential = args.credential or os.environ.get("SPADES_CREDENTIAL", "")
    if not credential:
        raise UsageError(
            "the lobby needs your player credential: --credential JWT (or SPADES_CREDENTIAL), "
            "from the game's identity provider; on a `make run` server, --guest gets one"
        )
    return identity_of(credential)


async def _lobby(args: argparse.Namespace, console: Console, renderer: Renderer) -> int:
    if args.pace_ms < 0:
        raise UsageError("--pace-ms must be 0 or more")
    if args.command == "join" and args.seat is not None and args.seat < 0:
        raise UsageError("--seat is a seat number, 0 or more")
    chosen = getattr(args, "preset", None) is not None or bool(getattr(args, "options", []))
    rules = parse_options(getattr(args, "options", []), getattr(args, "preset", None) or "classic")
    me = await _identity(args)
    async with connect(args.address, credential=me.credential) as client:
        reader = LineReader().start()
        try:
            flow = LobbyFlow(
                console,
                client,
                reader,
                me,
                address=args.address,
                renderer=renderer,
                pace_s=args.pace_ms / 1000.0,
                pause_between_hands=not args.no_pause,
            )
            flow.greet()
            if args.command == "join":
                return await flow.join_code(args.code, args.seat)
            if args.command == "quickplay":
                return await flow.quickplay(rules, args.partner, rated=args.rated)
            return await flow.browse(rules if chosen else None, rules)
        finally:
            reader.close()


# -- standings: me and top -----------------------------------------------------------------


async def _standings(args: argparse.Namespace, console: Console, renderer: Renderer) -> int:
    if args.command == "top":
        if not 0 <= args.page_size <= 200:
            raise UsageError("--page-size is 1 to 200 (0: the server's 25)")
        if args.around is not None and args.page_token:
            raise UsageError("--around or --page-token, not both")
    me = await _identity(args)
    async with connect(args.address, credential=me.credential) as client:
        view = StandingsView(console, client, me.player_id, renderer=renderer, command=PROG)
        if args.command == "me":
            return await view.profile(args.player or "")
        around = around_id(args.around, me.player_id)
        if args.around is not None and not around:
            raise UsageError("--around me needs a credential that names you (its sub)")
        rerun = _rerun(args)
        if not sys.stdin.isatty():
            return await view.leaderboard(
                args.pool,
                page_size=args.page_size,
                around=around,
                page_token=args.page_token,
                rerun=rerun,
            )
        reader = LineReader().start()
        try:
            return await view.leaderboard(
                args.pool,
                page_size=args.page_size,
                around=around,
                page_token=args.page_token,
                reader=reader,
            )
        finally:
            reader.close()


def _rerun(args: argparse.Namespace) -> str:
    """The options of ``spades top`` a next page's command repeats."""
    out = ""
    if args.pool:
        out += f" --pool {args.pool}"
    if args.page_size:
        out += f" --page-size {args.page_size}"
    if args.address != DEFAULT_ADDRESS:
        out += f" --address {args.address}"
    if args.guest:
        out += " --guest"
    return out


# -- replay ------------------------------------------------------------------------------


def _replay(args: argparse.Namespace, console: Console, renderer: Renderer) -> int:
    from .replay import ReplayError, ReplayViewer, load_replay

    try:
        replay = load_replay(args.file)
    except ReplayError as e:
        console.print(hint(f"{PROG} replay: {e}", "red"))
        return 2

    def read_line(prompt: str) -> str | None:
        try:
            return console.input(prompt)
        except EOFError:
            return None

    viewer = ReplayViewer(
        console,
        replay,
        os.path.basename(args.file),
        read_line,
        renderer=renderer,
        clear=not args.no_clear,
    )
    return viewer.run()


# -- main --------------------------------------------------------------------------------


class Hangup(Exception):
    """SIGHUP (the terminal closed) or SIGTERM: the game stopped, its server too."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


async def _until_signalled(work: Coroutine[Any, Any, int]) -> int:
    """Run ``work``; SIGHUP or SIGTERM cancel it, so that its cleanup (stopping
    the embedded server, closing the session) runs, and raise ``Hangup``."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(work)
    caught: list[int] = []

    def stop(signum: int) -> None:
        caught.append(signum)
        task.cancel()

    for signum in (signal.SIGHUP, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, stop, signum)
    try:
        return await task
    except asyncio.CancelledError:
        if caught:
            raise Hangup(caught[0]) from None
        raise
    finally:
        for signum in (signal.SIGHUP, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signum)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    console = Console(highlight=False)
    ascii_only = args.ascii or (console.encoding or "").lower().replace("-", "") != "utf8"
    renderer = Renderer(ascii_only=ascii_only)
    try:
        if args.command == "replay":
            return _replay(args, console, renderer)
        runners = {"play": _play, "watch": _watch, "me": _standings, "top": _standings}
        runner = runners.get(args.command, _lobby)
        return asyncio.run(_until_signalled(runner(args, console, renderer)))
    except (UsageError, CredentialError) as e:
        console.print(hint(f"{PROG} {args.command}: {e}", "red"))
        return 2
    except ServerUnavailable as e:
        console.print(hint(f"{PROG} {args.command}: {e}", "red"))
        return 2
    except SpadesError as e:
        console.print(renderer.refusal(e))
        if e.code.name == "UNAVAILABLE":
            console.print(hint("Is the server running at that address?", "yellow"))
        elif e.code.name == "UNAUTHENTICATED" and args.command in LOBBY_COMMANDS:
            console.print(
                hint(
                    "The server refused your player credential: get a fresh one (or, on a "
                    "`make run` server, use --guest).",
                    "yellow",
                )
            )
        return 1
    except KeyboardInterrupt:
        console.print()
        console.print("Interrupted.")
        return 130
    except Hangup as e:  # the terminal went away, or SIGTERM: cleaned up, quietly
        return 128 + e.signum
