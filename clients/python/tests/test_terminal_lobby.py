"""``spades lobby``, ``spades join CODE`` and ``spades quickplay`` as a person
uses them: the real command on a pseudo-terminal (pty_screen.py) against a
real server: serve.py's (credentials it signs), and for ``--guest`` a server
that trusts the guest key of the web table's own server
(``spades_server.webapp``, as ``make run`` starts them)."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import Harness, run, spades_python
from pty_screen import Terminal

import spades_client as sc
from spades_client import lobby_pb as lpb
from spades_client import pb

PROMPT = "(? for help) >"
WAIT_S = 20.0
READY = re.compile(r"spades-server listening on (\S+):(\d+) \(gRPC\)")
WEB_READY = re.compile(r"static files on (\S+):(\d+) from")


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    """Every Terminal a test opens is closed after it, whatever happened."""
    opened: list[Terminal] = []
    yield opened
    for t in opened:
        t.close()


def unique(prefix: str) -> str:
    return f"py-{prefix}-{uuid.uuid4().hex[:8]}"


def rules_flags(n: int) -> list[str]:
    """The rules of the test's own (a quick play queue and a lobby filter)."""
    return ["--set", f"target_score={500 + n}"]


def spades(terminals: list[Terminal], args: list[str], credential: str | None = None) -> Terminal:
    env = {"SPADES_CREDENTIAL": credential} if credential is not None else {}
    t = Terminal([*args, "--pace-ms", "0"], env=env)
    terminals.append(t)
    return t


def flat(t: Terminal) -> str:
    """The whole session as one line (long lines wrap on the screen)."""
    return " ".join(t.transcript().split())


def test_quickplay_shows_the_wait_then_plays_the_placed_seat(
    harness: Harness, terminals: list[Terminal]
) -> None:
    pid = unique("tess")
    credential = harness.credential(pid, "Tess")
    t = spades(terminals, ["quickplay", "--address", harness.address, *rules_flags(1)], credential)
    screen = t.wait_for(PROMPT, WAIT_S)
    text = flat(t)
    assert f"You are Tess (player id {pid})." in text
    assert "You asked for a game of classic, target_score=501." in text
    assert "Looking for players; bots fill the open seats in 1 s." in text
    placed = re.search(
        r"Placed at table (\w+): you are North; East bot, South bot, West bot\.", text
    )
    assert placed is not None, text
    assert "Tess (North, you)" in screen and "[bot]" in screen
    assert "Your bid" in screen  # North bids first at serve.py's tables (seed 11)
    t.type_line("bid 3")
    t.wait_for(lambda _: t.transcript().count(PROMPT) >= 2, WAIT_S)
    assert "You bid 3." in t.transcript()
    t.type_line("q")
    assert t.wait_for_exit() == 0
    back = t.transcript().split("To come back:\n", 1)[1].replace("\n", "")
    match_id = placed.group(1)
    assert re.fullmatch(
        rf"spades play --address {re.escape(harness.address)} --match {match_id} "
        rf"--token {match_id}\.\S+",
        back.strip(),
    ), back


def test_quickplay_q_withdraws_the_ticket(harness: Harness, terminals: list[Terminal]) -> None:
    pid, partner = unique("ann"), unique("nobody")
    credential = harness.credential(pid, "Ann")
    t = spades(
        terminals,
        ["quickplay", "--address", harness.address, "--partner", partner, *rules_flags(2)],
        credential,
    )
    t.wait_for("to ask too", WAIT_S)
    assert f"Waiting for {partner} to ask too: spades quickplay --partner {pid}" in flat(t)
    t.type_line("q")
    assert t.wait_for_exit() == 0
    assert "You withdrew your ticket." in t.transcript()

    async def ticket() -> lpb.Ticket:
        async with sc.connect(harness.address, credential=credential) as client:
            return await client.get_ticket()

    got = run(ticket())
    assert got.state == lpb.TICKET_STATE_CANCELLED and got.cancel_reason == "cancelled"


def test_ctrl_c_while_waiting_at_a_table_stands_up(
    harness: Harness, terminals: list[Terminal]
) -> None:
    pid = unique("ivy")
    credential = harness.credential(pid, "Ivy")
    t = spades(terminals, ["lobby", "--address", harness.address, *rules_flags(4)], credential)
    t.wait_for("No table is waiting", WAIT_S)
    t.type_line("open")
    t.wait_for("Type start to start now", WAIT_S)
    t.child.sendintr()
    assert t.wait_for_exit() == 130

    async def tables() -> list[lpb.Table]:
        async with sc.connect(harness.address, credential=credential) as client:
            rules = pb.Ruleset(preset="classic", target_score=504)
            listed, _ = await client.lobby_snapshot(rules)
            await client.quick_play(rules)  # refused ALREADY_SEATED if still seated
            await client.cancel_ticket()
            return listed

    assert run(tables()) == [], "the table closed: its only player stood up"


def test_the_lobby_live_open_a_table_sit_at_it_start_and_play(
    harness: Harness, terminals: list[Terminal]
) -> None:
    """Ben watches the lobby; Ann opens a table there and Ben sees it come, sits
    at it by its number; Ann sees him sit down, starts the table (bots in the
    other seats), and both play their seats."""
    ann_id, ben_id = unique("ann"), unique("ben")
    lobby = ["lobby", "--address", harness.address, *rules_flags(3)]
    ben = spades(terminals, lobby, harness.credential(ben_id, "Ben"))
    ben.wait_for("0 tables of classic, target_score=503 waiting for players", WAIT_S)
    assert "No table is waiting for players." in ben.screen()
    ann = spades(terminals, lobby, harness.credential(ann_id, "Ann"))
    ann.wait_for("No table is waiting", WAIT_S)
    ann.type_line("open")
    ann.wait_for("Type start to start now", WAIT_S)
    table_id = re.search(
        r"You sit at table (\w+) \(classic, target_score=503\) as North", flat(ann)
    )
    assert table_id is not None, ann.transcript()
    # The lobby follows the change live: the table, its host, its open seats.
    screen = ben.wait_for("1 table of classic", WAIT_S)
    row = next(line for line in screen.splitlines() if table_id.group(1)[:8] in line)
    assert re.search(r"^1\s+\w{8}\s+classic, target_score=503\s+Ann\s+3/4\s+\d+:\d\d$", row), row
    ben.type_line("1")
    ben.wait_for("Waiting for players; q stands up.", WAIT_S)
    assert re.search(r"^East\s+Ben \(you\)$", ben.screen(), re.M)
    assert re.search(r"^North\s+Ann \(host\)$", ben.screen(), re.M)
    ann.wait_for(lambda s: re.search(r"^East\s+Ben$", s, re.M) is not None, WAIT_S)
    ann.type_line("start")
    ann.wait_for(PROMPT, WAIT_S)
    for t in (ann, ben):
        t.wait_for("The table has started: the cards are dealt.", WAIT_S)
    assert "Ann (North, you)" in ann.screen() and "Ben (East)" in ann.screen()
    assert re.search(r"Bot \d \(South\) \[bot\]", ann.screen())
    ann.type_line("bid 2")
    ben.wait_for(PROMPT, WAIT_S)  # East bids after North
    assert "Ann bids 2." in ben.transcript()
    ben.type_line("bid 3")
    ann.wait_for("Ben bids 3.", WAIT_S)
    for t in (ann, ben):
        t.type_line("q")
        assert t.wait_for_exit() == 0
        assert f"--match {table_id.group(1)} --token {table_id.group(1)}." in flat(t)


def test_join_an_invite_only_table_by_its_code(harness: Harness, terminals: list[Terminal]) -> None:
    host_id, guest_id = unique("host"), unique("joe")

    async def open_table() -> lpb.OpenTableResponse:
        credential = await harness.credential_async(host_id, "Hostess")
        async with sc.connect(harness.address, credential=credential) as host:
            return await host.open_table(
                ruleset=pb.Ruleset(preset="classic", target_score=505),
                bot_seats=[1, 3],
                seat=2,
                visibility=lpb.TABLE_VISIBILITY_INVITE_ONLY,
            )

    opened = run(open_table())
    code = opened.table.invite_code
    credential = harness.credential(guest_id, "Joe")
    wrong = spades(terminals, ["join", "ZZZZZ-ZZZZZ", "--address", harness.address], credential)
    assert wrong.wait_for_exit() == 1
    assert "[INVITE_NOT_FOUND]" in flat(wrong)
    # Read aloud: lower case, a space for the dash. The last seat: it starts at once.
    spoken = code.lower().replace("-", " ")
    t = spades(terminals, ["join", spoken, "--address", harness.address], credential)
    screen = t.wait_for(PROMPT, WAIT_S)
    text = flat(t)
    assert f"You sit at table {opened.table.table_id} (classic, target_score=505) as North." in text
    assert f"Invite code: {code}." in text
    assert "The table has started: the cards are dealt." in text
    assert "Joe (North, you)" in screen and "Hostess (South)" in screen
    t.type_line("q")
    assert t.wait_for_exit() == 0


def test_credentials_missing_or_refused_say_what_to_do(
    harness: Harness, terminals: list[Terminal]
) -> None:
    env_free = spades(terminals, ["lobby", "--address", harness.address], credential="")
    assert env_free.wait_for_exit() == 2
    assert "the lobby needs your player credential: --credential JWT" in flat(env_free)
    garbage = spades(terminals, ["quickplay", "--address", harness.address], "not-a-jwt")
    assert garbage.wait_for_exit() == 1
    text = flat(garbage)
    assert "[MALFORMED_CREDENTIAL]" in text
    assert "The server refused your player credential" in text
    nowhere = spades(
        terminals, ["lobby", "--guest", "--address", harness.address, "--web", "127.0.0.1:1"]
    )
    assert nowhere.wait_for_exit() == 2
    assert "no guest credential from http://127.0.0.1:1/api/guest" in flat(nowhere)


# -- --guest: make run's server and web table ----------------------------------------------


@contextlib.contextmanager
def _child(argv: list[str], ready: re.Pattern[str], env: dict[str, str]) -> Iterator[str]:
    """A child process, until it prints ``ready`` (its host:port)."""
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1", **env),
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if m := ready.search(line):
                yield f"{m.group(1)}:{m.group(2)}"
                break
        else:
            raise AssertionError(f"{argv[2]} exited before it was ready")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@pytest.fixture(scope="module")
def guest_stack() -> Iterator[tuple[str, str]]:
    """A server that trusts guest credentials (an Ed25519 key pair made for the
    run, issuer spades-guest, audience spades, as make run's launcher does)
    and the web table's server holding the private key: (server, web)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    python = spades_python()
    with tempfile.TemporaryDirectory(prefix="spades-guest-") as tmp:
        key = ed25519.Ed25519PrivateKey.generate()
        private, public = Path(tmp) / "guest.pem", Path(tmp) / "guest.pub.pem"
        private.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        public.write_bytes(
            key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        server_argv = [
            python, "-m", "spades_server.main",
            "--host", "127.0.0.1", "--port", "0", "--metrics-port", "-1",
            "--store", "memory", "--operator-token", "op-guest-tests",
            "--bot-delay-ms", "0", "--grace-seconds", "1",
            "--player-public-key", str(public),
            "--player-issuer", "spades-guest", "--player-audience", "spades",
            "--quickplay-bot-wait-seconds", "1", "--quickplay-turn-timer-ms", "0",
        ]  # fmt: skip
        web_argv = [python, "-m", "spades_server.webapp", "--dir", tmp, "--port", "0"]
        with (
            _child(server_argv, READY, {}) as server,
            _child(web_argv, WEB_READY, {"SPADES_GUEST_KEY": str(private)}) as web,
        ):
            yield server, web


def test_a_guest_credential_from_the_web_tables_server(
    guest_stack: tuple[str, str], terminals: list[Terminal]
) -> None:
    server, web = guest_stack
    t = spades(
        terminals,
        ["quickplay", "--guest", "--name", "Tess", "--address", server, "--web", web],
        credential="",
    )
    screen = t.wait_for(PROMPT, WAIT_S)
    assert re.search(r"You are Tess \(player id guest-[0-9a-f]+\)\.", flat(t)), t.transcript()
    assert "Tess (North, you)" in screen
    t.type_line("q")
    assert t.wait_for_exit() == 0
