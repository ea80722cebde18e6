#!/usr/bin/env python3
"""Checks the edge prototype end to end through real Play calls: hidden cards
never reach another seat, a retried action id is answered once, a refusal is a
result and the call goes on, a resumed call gets only what it missed, a bad
token ends the call. Starts its own core and edge (``go build`` them first, or
run bench/edge.py once).

    .venv/bin/python bench/edge/smoke.py [--link socket|grpc]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
from spades_server import convert
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.gen.spades.v1 import spades_pb2_grpc as pb_grpc

from spades_engine import Match, preset

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import core  # noqa: E402  (bench/edge/core.py: the tokens and the seeds)

KEY = b"smoke"


class Seat:
    """One Play call, its requests fed by a queue."""

    def __init__(self, stub: pb_grpc.SpadesServiceStub, table: str, seat: int, after: int = 0):
        self.requests: asyncio.Queue[pb.PlayRequest | None] = asyncio.Queue()
        token = f"{table}.{core.seat_secret(KEY, table, seat)}" if seat >= 0 else f"{table}.bad"
        play: Any = stub.Play  # an aio channel's: the sync stub's types do not fit
        self.call: Any = play(self._requests(), metadata=(("authorization", f"Bearer {token}"),))
        self.requests.put_nowait(pb.PlayRequest(open=pb.PlayOpen(match_id=table, after_seq=after)))

    async def _requests(self) -> AsyncIterator[pb.PlayRequest]:
        while (r := await self.requests.get()) is not None:
            yield r

    async def read(self) -> pb.PlayResponse:
        msg = await asyncio.wait_for(self.call.read(), 5)
        assert isinstance(msg, pb.PlayResponse), msg  # not EOF
        return msg

    def act(self, action_id: str, action: pb.Action) -> None:
        self.requests.put_nowait(
            pb.PlayRequest(action=pb.PlayAction(action_id=action_id, action=action))
        )


async def check(address: str) -> None:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = pb_grpc.SpadesServiceStub(channel)
        # A bad token ends the call.
        bad = Seat(stub, "s1", -1)
        try:
            await bad.read()
            raise AssertionError("a bad token was let in")
        except grpc.aio.AioRpcError as e:
            assert e.code() == grpc.StatusCode.UNAUTHENTICATED, e
        # Each seat sees its own hand and no other.
        seats = [Seat(stub, "s1", s) for s in range(4)]
        first = [await s.read() for s in seats]
        for i, msg in enumerate(first):
            shown = [e.hand_shown.seat for e in msg.events if e.HasField("hand_shown")]
            assert shown == [i], f"seat {i} was shown hands {shown}"
        # The engine's replica of the match (the same seed) says who acts and how.
        match = Match(preset("classic"), seed=core._seed("s1", 0))
        actor = match.to_act
        legal = convert.action_to_pb(match.legal_actions(actor)[0])
        seats[actor].act("x1", legal)
        got = await seats[actor].read()
        assert [r.action_id for r in got.results] == ["x1"] and not got.results[0].HasField("error")
        last = got.results[0].last_seq
        for i, s in enumerate(seats):
            if i != actor:
                other = await s.read()
                assert [e.seq for e in other.events] == [last] and not other.results
        # The same action id again: the first result, nothing applied twice.
        seats[actor].act("x1", legal)
        again = await seats[actor].read()
        assert not again.events and again.results[0].last_seq == last
        # An illegal action (not its turn): a refusal, and the call goes on.
        seats[actor].act("x2", legal)
        refused = await seats[actor].read()
        assert refused.results[0].error.code == grpc.StatusCode.FAILED_PRECONDITION.value[0]
        # A resumed call gets only what its seat missed after after_seq.
        partner = (actor + 2) % 4
        resumed = Seat(stub, "s1", partner, after=1)
        missed = await resumed.read()
        opening = match.opening_events
        match.apply(actor, convert.action_from_pb(legal))
        visible = [
            i + 1 for i, e in enumerate(opening) if e.audience.visible_to(partner, partner & 1)
        ]
        assert [e.seq for e in missed.events] == [s for s in visible if s > 1] + [last]
        for s in [*seats, resumed]:
            s.requests.put_nowait(None)
            s.call.cancel()
    print("smoke: hidden hands, idempotency, refusals, resume, bad token: ok")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--link", choices=("socket", "grpc"), default="socket")
    args = parser.parse_args()
    core_proc = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "core.py"),
            "--listen",
            "127.0.0.1:0",
            "--key",
            "smoke",
            "--link",
            args.link,
        ],
        stdout=subprocess.PIPE,
    )
    assert core_proc.stdout is not None
    core_address = core_proc.stdout.readline().decode().split()[1]
    edge_proc = subprocess.Popen(
        [
            str(HERE / "bin" / "edge"),
            "--listen",
            "127.0.0.1:0",
            "--core",
            core_address,
            "--link",
            args.link,
        ],
        stdout=subprocess.PIPE,
    )
    assert edge_proc.stdout is not None
    try:
        edge_address = edge_proc.stdout.readline().decode().split()[1]
        asyncio.run(check(edge_address))
    finally:
        for p in (edge_proc, core_proc):
            p.terminate()
            p.wait(10)


if __name__ == "__main__":
    main()
