#!/usr/bin/env python3
"""A real spades-server for a client's tests, behind a TCP proxy that can cut
every connection on request.

Every client's test harness (Python, TypeScript, Go, Java) starts this script
the same way and reads one JSON line from its standard output:

    {"address": "127.0.0.1:P", "server": "127.0.0.1:S",
     "control": "http://127.0.0.1:C", "operatorToken": "..."}

* ``address``: where clients connect, through the proxy;
* ``server``: the server itself, for calls the test wants to make directly;
* ``control``: ``POST {control}/cut`` closes every proxied connection at once,
  the way a dropped mobile connection looks to both ends (the server sees its
  streams reset, the client its channel fail); the answer is ``cut N``, the
  number of connections closed.  New connections are accepted right away.

The server is the one ``make run`` starts (``python -m spades_server.main``,
SQLite store) on free loopback ports, with its database in a fresh temporary
directory, no bot delay, and an action allowance high enough for tests.  The
script runs until its standard input closes or it gets SIGTERM/SIGINT, then
stops the server (SIGTERM, then SIGKILL after 10 s) and exits.

Players (the lobby's calls: ``docs/lobby.md``): the server trusts player
credentials signed HS256 with a secret made for the run, and deals every
table of the lobby from seed 11 (``--table-seed``; quick play's bots come
after 1 s, with no turn timer), so that a scenario through the lobby deals
the same cards every time. Two more control calls, each a JSON body:

* ``POST {control}/credential`` ``{"playerId": "...", "name": "..."}``
  answers ``{"credential": "<jwt>"}``, valid 10 minutes;
* ``POST {control}/friend`` drives a second player, ``playerId``, for the
  lobby scenarios: ``{"do": "quickplay", "playerId": F, "partner": P,
  "ruleset": {...}}`` asks for quick play as P's partner (the ruleset in
  proto3 JSON) and answers ``{"state": "<TicketState>"}``; ``{"do": "join",
  "playerId": F, "code": C, "seat": N}`` joins the invite-only table of code
  C at seat N and answers ``{"seat": N, "state": "<TableState>"}``. Once
  placed or seated at a table that starts, the friend plays its seat by the
  scenarios' policy (the first legal action) until the match ends.

With ``--replicas N`` (or ``SPADES_CONFORMANCE_REPLICAS=N`` in the
environment, so that any client's harness can ask for it) and N > 1, it
starts a redis-server of its own (Debian's, on a free loopback port) and N
servers on it (``--store redis``), and the proxy sends each new connection to
the next replica in turn: after a cut, a client's connection lands on another
replica mid-hand. ``server`` is then the first replica, and ``replicas`` lists
them all.

With ``--tls`` it makes a certificate authority, a server certificate for
127.0.0.1 and localhost, and an operator's client certificate (PEM files in its
temporary directory, made with ``cryptography``, the project's dev dependency),
and starts the server TLS-only with mutual TLS for operator calls
(``--tls-cert``, ``--tls-key``, ``--tls-client-ca``, ``--operator-port 0``).
The line then has ``operator``, the operator port (mutual TLS, not behind the
proxy; with ``--replicas`` the first replica's), and ``tls``: the paths ``ca``
(the CA that signs both certificates: trust it for either port),
``clientCert`` and ``clientKey`` (PKCS#8). ``address`` still goes through the
proxy, which passes TLS through as bytes.

    python clients/conformance/serve.py [--python PYTHON] [--replicas N] [--tls]
        [-- extra server flags]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

READY = re.compile(r"spades-server listening on (?P<host>[\d.]+):(?P<port>\d+) \(gRPC\)")
OPERATOR = re.compile(r"operator port (?P<host>[\d.]+):(?P<port>\d+) \(mutual TLS\)")
TABLE_SEED = 11  # every table of the lobby is dealt from it (the lobby scenarios)
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
HOST = "127.0.0.1"


class Proxy:
    """Forwards loopback TCP connections to the servers, each new one to the
    next server in turn; :meth:`cut` drops them all."""

    def __init__(self, target_ports: list[int]) -> None:
        self.target_ports = target_ports
        self.turn = 0
        self.links: set[asyncio.StreamWriter] = set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        port = self.target_ports[self.turn % len(self.target_ports)]
        self.turn += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(HOST, port)
        except OSError:
            writer.close()
            return
        self.links.update((writer, up_writer))
        try:
            await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))
        finally:
            for w in (writer, up_writer):
                self.links.discard(w)
                w.close()

    def cut(self) -> int:
        """Abort every open connection (a reset, not a polite close)."""
        n = len(self.links) // 2
        for w in list(self.links):
            transport = w.transport
            if isinstance(transport, asyncio.Transport):
                transport.abort()
        self.links.clear()
        return n


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    with contextlib.suppress(ConnectionError, OSError, RuntimeError):
        if writer.can_write_eof():
            writer.write_eof()


async def _control(
    proxy: Proxy, friends: Friends, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """A minimal HTTP endpoint: ``POST /cut``, ``/credential`` and ``/friend``."""
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        sized = re.search(rb"(?im)^content-length:\s*(\d+)\s*$", head)
        length = int(sized[1]) if sized else 0
        body = await asyncio.wait_for(reader.readexactly(length), 5) if length else b""
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ValueError):
        writer.close()
        return
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    kind = "text/plain"
    if line.startswith("POST /cut "):
        status, text = "200 OK", f"cut {proxy.cut()}\n"
    elif line.startswith(("POST /credential ", "POST /friend ")):
        kind = "application/json"
        try:
            request = json.loads(body or b"{}")
            if line.startswith("POST /credential "):
                answer = {
                    "credential": friends.credential(request["playerId"], request.get("name", ""))
                }
            else:
                answer = await friends.act(request)
            status, text = "200 OK", json.dumps(answer)
        except Exception as e:  # the client's test reads why
            status, text = "400 Bad Request", json.dumps({"error": f"{type(e).__name__}: {e}"})
    else:
        status, text = "404 Not Found", "POST /cut, /credential or /friend\n"
    payload = text.encode()
    writer.write(
        f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(payload)}\r\n"
        f"Connection: close\r\n\r\n".encode()
        + payload
    )
    with contextlib.suppress(ConnectionError):
        await writer.drain()
    writer.close()


class Friends:
    """The lobby scenarios' second players: their credentials, their lobby
    calls, and their seats played by the first legal action."""

    ISSUER = "spades-conformance"
    AUDIENCE = "spades"

    def __init__(self, server: str) -> None:
        self.secret = secrets.token_hex(32)
        self.server = server
        self.tasks: set[asyncio.Task[None]] = set()

    def flags(self) -> list[str]:
        return [
            "--player-issuer", self.ISSUER, "--player-audience", self.AUDIENCE,
            "--player-hs256-secret", self.secret,
            "--table-seed", str(TABLE_SEED), "--bot-level", "normal",
            "--quickplay-bot-wait-seconds", "1", "--quickplay-turn-timer-ms", "0",
        ]  # fmt: skip

    def credential(self, player_id: str, name: str = "") -> str:
        import jwt  # PyJWT, a dependency of the server's

        now = int(time.time())
        claims = {
            "sub": player_id, "name": name or player_id, "iss": self.ISSUER,
            "aud": self.AUDIENCE, "iat": now, "exp": now + 600,
        }  # fmt: skip
        return jwt.encode(claims, self.secret, algorithm="HS256")

    async def act(self, request: dict[str, object]) -> dict[str, object]:
        import grpc
        from google.protobuf import json_format
        from spades_server.gen.spades.v1 import lobby_pb2 as lpb
        from spades_server.gen.spades.v1 import lobby_pb2_grpc
        from spades_server.gen.spades.v1 import spades_pb2 as pb

        player = str(request["playerId"])
        md = (("authorization", f"Bearer {self.credential(player)}"),)
        channel = grpc.aio.insecure_channel(self.server)
        lobby = lobby_pb2_grpc.LobbyServiceStub(channel)
        if request["do"] == "quickplay":
            ruleset = json_format.ParseDict(request.get("ruleset", {}), pb.Ruleset())
            ticket = (
                await lobby.QuickPlay(
                    lpb.QuickPlayRequest(
                        ruleset=ruleset, partner_player_id=str(request["partner"])
                    ),
                    metadata=md,
                    timeout=10,
                )
            ).ticket
            self._spawn(self._play_ticket(channel, lobby, md, ticket))
            return {"state": lpb.TicketState.Name(ticket.state)}
        if request["do"] == "join":
            joined = await lobby.JoinTable(
                lpb.JoinTableRequest(
                    invite_code=str(request["code"]), seat=int(str(request["seat"]))
                ),
                metadata=md,
                timeout=10,
            )
            if joined.table.match_id:
                self._spawn(self._play_seat(channel, joined.table.match_id, joined.seat_token))
            return {"seat": joined.seat, "state": lpb.TableState.Name(joined.table.state)}
        raise ValueError(f"unknown do {request['do']!r}: quickplay or join")

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _play_ticket(self, channel: Any, lobby: Any, md: Any, ticket: Any) -> None:
        from spades_server.gen.spades.v1 import lobby_pb2 as lpb

        while ticket.state != lpb.TICKET_STATE_PLACED:
            if ticket.state == lpb.TICKET_STATE_CANCELLED:
                return
            ticket = (
                await lobby.GetTicket(
                    lpb.GetTicketRequest(
                        ticket_id=ticket.ticket_id, after_version=ticket.version, wait_ms=5000
                    ),
                    metadata=md,
                    timeout=30,
                )
            ).ticket
        await self._play_seat(channel, ticket.placement.match_id, ticket.placement.seat_token)

    async def _play_seat(self, channel: Any, match_id: str, token: str) -> None:
        """The first legal action at each turn, until the match is over."""
        from spades_server.gen.spades.v1 import spades_pb2 as pb
        from spades_server.gen.spades.v1 import spades_pb2_grpc

        stub = spades_pb2_grpc.SpadesServiceStub(channel)
        md = (("authorization", f"Bearer {token}"),)
        n = 0
        with contextlib.suppress(Exception):  # the run ends: so does the friend
            while True:
                view = (
                    await stub.GetView(
                        pb.GetViewRequest(match_id=match_id), metadata=md, timeout=10
                    )
                ).view
                if view.phase == pb.PHASE_MATCH_OVER:
                    return
                if view.legal_actions:
                    n += 1
                    await stub.SubmitAction(
                        pb.SubmitActionRequest(
                            match_id=match_id, action_id=f"friend-{n}", action=view.legal_actions[0]
                        ),
                        metadata=md,
                        timeout=10,
                    )
                    continue
                await stub.PollEvents(
                    pb.PollEventsRequest(match_id=match_id, after_seq=view.as_of_seq, wait_ms=5000),
                    metadata=md,
                    timeout=10,
                )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


async def _start_redis(workdir: Path) -> tuple[asyncio.subprocess.Process, str]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("--replicas needs redis-server (apt-get install redis-server)")
    port = _free_port()
    log = open(workdir / "redis.log", "w")  # noqa: SIM115 - the child keeps it
    proc = await asyncio.create_subprocess_exec(
        binary, "--port", str(port), "--bind", HOST, "--dir", str(workdir),
        "--save", "", "--appendonly", "no",
        stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    log.close()
    async with asyncio.timeout(START_TIMEOUT_S):
        while True:
            with contextlib.suppress(OSError):
                r, w = await asyncio.open_connection(HOST, port)
                w.write(b"PING\r\n")
                answer = await r.read(16)
                w.close()
                if answer.startswith(b"+PONG"):
                    return proc, f"redis://{HOST}:{port}/0"
            await asyncio.sleep(0.02)


def _make_pki(folder: Path) -> dict[str, str]:
    """A CA, a server certificate (127.0.0.1, localhost) and an operator's
    client certificate it signed, as PEM files in ``folder``: fresh keys each
    run, so no key sits in the repository. Made by the server tests' own
    maker (tests/server/tls_certs.py, EC P-256), which every client's TLS
    stack reads (Python, Node, Go, Java)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "server"))
    from tls_certs import Authority

    ca = Authority(folder, "spades conformance CA")
    server, operator = ca.server(), ca.client()
    return {
        "ca": str(ca.issued.cert),
        "serverCert": str(server.cert),
        "serverKey": str(server.key),
        "clientCert": str(operator.cert),
        "clientKey": str(operator.key),
    }


def _tls_flags(pki: dict[str, str]) -> list[str]:
    return [
        "--tls-cert", pki["serverCert"], "--tls-key", pki["serverKey"],
        "--tls-client-ca", pki["ca"], "--operator-port", "0",
    ]  # fmt: skip


async def _start_server(
    python: str, workdir: Path, token: str, extra: list[str], store: list[str]
) -> tuple[asyncio.subprocess.Process, int, int | None]:
    argv = [
        python, "-m", "spades_server.main",
        "--host", HOST, "--port", "0", "--metrics-port", "-1",
        *store,
        "--operator-token", token,
        "--actions-per-second", "10000",
        "--bot-delay-ms", "0",
        "--grace-seconds", "2",
        *extra,
    ]  # fmt: skip
    log = open(workdir / "server.log", "w")  # noqa: SIM115 - the child keeps it
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=log,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    log.close()
    assert proc.stdout is not None
    operator_port = None
    async with asyncio.timeout(START_TIMEOUT_S):
        while line := (await proc.stdout.readline()).decode():
            if m := OPERATOR.search(line):  # printed before the ready line
                operator_port = int(m["port"])
            if m := READY.search(line):
                return proc, int(m["port"]), operator_port
    raise RuntimeError(f"spades-server exited before it was ready; see {workdir / 'server.log'}")


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    proc.terminate()
    try:
        await asyncio.wait_for(proc.wait(), STOP_TIMEOUT_S)
    except TimeoutError:
        proc.kill()
        await proc.wait()


async def _stdin_closed() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while await reader.read(4096):
        pass


async def main(python: str, extra: list[str], replicas: int, tls: bool) -> None:
    token = "op-" + secrets.token_hex(8)
    with tempfile.TemporaryDirectory(prefix="spades-conformance-") as tmp:
        procs: list[asyncio.subprocess.Process] = []
        ports: list[int] = []
        operator_ports: list[int | None] = []
        pki = _make_pki(Path(tmp) / "pki") if tls else None
        if pki is not None:
            extra = [*_tls_flags(pki), *extra]
        friends = Friends("")
        extra = [*friends.flags(), *extra]
        try:
            if replicas > 1:
                redis, url = await _start_redis(Path(tmp))
                procs.append(redis)
                store = ["--store", "redis", "--redis-url", url, "--takeover-ms", "1000"]
            else:
                store = ["--store", "sqlite", "--db", str(Path(tmp) / "spades.db")]
            for i in range(replicas):
                workdir = Path(tmp) / f"replica{i}"
                workdir.mkdir()
                proc, port, operator_port = await _start_server(
                    python, workdir, token, extra, store
                )
                procs.append(proc)
                ports.append(port)
                operator_ports.append(operator_port)
            port = ports[0]
            friends.server = f"{HOST}:{port}"
            proxy = Proxy(ports)
            front = await asyncio.start_server(proxy.handle, HOST, 0)
            ctl = await asyncio.start_server(lambda r, w: _control(proxy, friends, r, w), HOST, 0)
            front_port = front.sockets[0].getsockname()[1]
            ctl_port = ctl.sockets[0].getsockname()[1]
            ready: dict[str, object] = {
                "address": f"{HOST}:{front_port}",
                "server": f"{HOST}:{port}",
                "control": f"http://{HOST}:{ctl_port}",
                "operatorToken": token,
                "replicas": [f"{HOST}:{p}" for p in ports],
            }
            if pki is not None:
                ready["operator"] = f"{HOST}:{operator_ports[0]}"
                ready["tls"] = {k: pki[k] for k in ("ca", "clientCert", "clientKey")}
            print(json.dumps(ready), flush=True)
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, stop.set)
            waiters = [
                asyncio.create_task(stop.wait()),
                asyncio.create_task(_stdin_closed()),
                *(asyncio.create_task(p.wait()) for p in procs),
            ]
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            for t in waiters:
                t.cancel()
            proxy.cut()
            front.close()
            ctl.close()
        finally:
            for p in reversed(procs):  # the servers first, Redis last
                await _stop(p)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--python", default=sys.executable, help="the Python that has spades_server")
    p.add_argument(
        "--replicas",
        type=int,
        default=int(os.environ.get("SPADES_CONFORMANCE_REPLICAS", "1")),
        help="servers on one Redis behind the proxy [SPADES_CONFORMANCE_REPLICAS, 1: SQLite]",
    )
    p.add_argument(
        "--tls",
        action="store_true",
        default=os.environ.get("SPADES_CONFORMANCE_TLS") == "1",
        help="TLS only, operator calls over mutual TLS on their own port, with certificates "
        "made for the run [SPADES_CONFORMANCE_TLS=1]",
    )
    p.add_argument("extra", nargs="*", help="more spades-server flags (after --)")
    args = p.parse_args()
    if args.replicas < 1:
        p.error("--replicas must be at least 1")
    asyncio.run(main(args.python, args.extra, args.replicas, args.tls))
