#!/usr/bin/env python3
"""Soak: hundreds of matches for minutes on replicas sharing one Redis, with
random disconnects, resumes, ``kill -9`` of replicas and browser-style clients
through Envoy; every event each viewer received checked against the match's
log at the end; the memory of every process sampled throughout.

Everything runs on loopback, started by this script and stopped when it ends
(also on Ctrl-C, SIGTERM or SIGHUP; the servers, Envoy and the client
processes also by the kernel's parent-death signal if the script is killed):

* its own ``redis-server`` (bench/processes.py's: Debian's, a free loopback
  port, files in a temporary folder, no persistence);
* ``--replicas`` server processes (3; ``python3 -m spades_server.main --store
  redis --redis-url ... --redis-prefix soak``, each on a fixed loopback port so
  that a restarted replica comes back where Envoy and the clients look for it;
  ``--unload-after-seconds`` from ``--unload-after-s``, 60, so that finished
  matches leave memory within the warm-up and the memory can be compared);
* one Envoy (``.venv/bin/envoy``) on the repository's
  ``deploy/envoy/envoy.yaml``, rendered by ``spades_server.stack`` as ``make
  run`` renders it, its ``spades_server`` cluster given one endpoint per
  replica (round robin; no health checks, as shipped: a dead replica's share
  of new calls fails until it is back, and clients retry); no web table
  behind it (its cluster points at a closed port; nothing here asks for it);
* ``--clients`` client processes (2), each holding a share of the
  ``--matches`` tables (200).

A table is one match at a time of four HUMAN seats (classic preset, no turn
timer; every ``--bot-every``-th table, 10, has Random bots in seats 1 and 3),
replaced by a new one when it ends. Every human seat is a client of its own
that learns the match from its own events only (an engine replica fed by the
action events it receives, seeded as the match), acts when those show its
turn, after a think time of 0.5 to 1.5 x ``--think-ms`` (2000), with a random
legal action, an ``action_id`` per position in the match (a retry sends the
same one) and ``expected_seq`` (the last seq it saw). Seat i of table k is
one of five kinds, by (4k + i) mod 5:

* ``play``: native gRPC, a ``Play`` call (events and actions on one call);
* ``stream``: native gRPC, ``StreamEvents`` and ``SubmitAction``;
* ``grpc-web``: gRPC-Web over HTTP/1.1 through Envoy (aiohttp, one connection
  per stream, as bench/web.py's browsers): ``StreamEvents`` and
  ``SubmitAction``;
* ``connect``: the same with the Connect protocol (``application/connect+proto``
  streams, ``application/proto`` unary calls);
* ``poll``: ``PollEvents`` long polls (``wait_ms`` 20000) and ``SubmitAction``,
  gRPC-Web through Envoy.

Every fourth table also has a spectator: ``Spectate`` over gRPC-Web through
Envoy, no credential. A native client starts on replica (k + i) mod N and
moves to the next replica when a call fails.

Disconnects: each viewer drops its stream, Play call or long poll after an
exponential random time (mean ``--drop-mean-s``, 60), waits 0 to 1 s and
resumes with ``after_seq`` = the last seq it saw (a native client on another
replica at random). A call that fails (a replica killed, Envoy's 503 for a
dead endpoint, a store error) is sent again after the backoff of the
project's clients (spades_client.Backoff: 0.1 s doubling to 5 s, jitter 0.5;
bench/replicas.py's ``retry_delay``), a native client on the next replica; a
stream that fails is resumed the same way. Replica kills: every
``--kill-every-s`` (120) one replica gets ``kill -9`` and is started again on
its port ``--restart-after-s`` (1) later. Replica 0 is never killed: it is the
memory's witness over the whole run; the others are killed in turn.

Lost events: when a match ends (every viewer has seen ``match_ended``, or 60 s
after the first did), and for the matches still in play when the run stops
(no new action then; each viewer is given up to 45 s to catch up), every
viewer's events are compared with the events it may see, read again from the
start (``PollEvents`` with ``after_seq`` 0 and the viewer's credential, native
gRPC, paged): the same seqs with the same bytes, in order. Printed: events
missing (lost), received twice, out of order, and received though not in the
log or with other bytes. All must be 0.

Memory: the RSS of every process (psutil) every ``--sample-s`` (30), with
Redis's ``used_memory``, printed as a series; start = the first sample after
the warm-up (``--warmup-s``, 120, or a fifth of the run if shorter), end =
the last sample, taken before the stop. Flat: the end within ``TOLERANCE``
(+10 %) of the start, judged for replica 0 (never killed) and Envoy; the
killed replicas are shown per incarnation; Redis keeps every finished match
(by design, docs/operations.md), so its growth is shown per match created.

    python3 bench/soak.py [--minutes 10] [--matches 200] [--replicas 3] [--clients 2]
                          [--think-ms 2000] [--drop-mean-s 60] [--kill-every-s 120]
    python3 bench/soak.py --minutes 1 --matches 30   # a short run
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import platform
import random
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import psutil
from spades_server import convert
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.gen.spades.v1 import spades_pb2_grpc
from spades_server.main import tune_gc

from cpu_usage import GroupMeter, percents, warn_if_disturbed
from load import (
    SERVICE,
    StreamError,
    channel,
    envelope,
    error_counts,
    frames,
    grpc_web_trailers,
    http_stream,
    print_grid,
    retry_delay,
    web_headers,
)
from processes import (
    OPERATOR_MD,
    Envoy,
    Procs,
    RedisProcess,
    Server,
    die_with_parent,
    stop_on_signals,
)
from server import RULES, RULESET_PB
from spades_engine import Match
from spades_engine.actions import bid as make_bid
from spades_engine.actions import play as make_play

KINDS = ("play", "stream", "grpc-web", "connect", "poll")
KIND_LABELS = {
    "play": "Play (native gRPC)",
    "stream": "StreamEvents + SubmitAction (native gRPC)",
    "grpc-web": "gRPC-Web via Envoy (HTTP/1.1)",
    "connect": "Connect via Envoy (HTTP/1.1)",
    "poll": "PollEvents via Envoy (gRPC-Web)",
    "spectator": "Spectate via Envoy (gRPC-Web)",
}
NATIVE = frozenset({"play", "stream"})
ACTION_KINDS = frozenset({"card_played", "bid_made"})
CODE_NAMES = {c.value[0]: c.name for c in grpc.StatusCode}
# What a client sends again after its backoff without counting an error: the
# server or the way to it is gone or busy (a replica killed, Envoy's 503).
TRANSIENT = frozenset(
    {"UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "CANCELLED", "CONNECTION"}
)
TOLERANCE = 0.10  # memory: the end within +10 % of the start is flat
CALL_TIMEOUT_S = 10.0
POLL_WAIT_MS = 20_000
DROP_PAUSE_S = 1.0  # after a random disconnect, before the resume
END_WAIT_S = 60.0  # after one viewer saw a match end, for the others to see it
DRAIN_S = 45.0  # after the stop, for every viewer to catch up with its match
VERIFY_GIVE_UP_S = 60.0  # reading a viewer's log again
SUBMIT_GIVE_UP_S = 120.0  # one action's attempts
CREATE_CONCURRENCY = 16  # matches created at once, per client process
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = DRAIN_S + END_WAIT_S + 60.0  # the clients' drain and checks, then they are killed
MIB = 1024 * 1024


class CallError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code} {message}")
        self.code = code


# -- a client process: its ways to the service ----------------------------------------------


class Net:
    """One channel per replica (native clients), and Envoy over HTTP/1.1:
    streams one connection each, unary calls and long polls on kept-alive ones."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.channels = [channel(a) for a in cfg["replicas"]]
        self.stubs = [spades_pb2_grpc.SpadesServiceStub(c) for c in self.channels]
        self.base = f"http://127.0.0.1:{cfg['envoy_port']}{SERVICE}"
        self.origin = cfg["origin"]
        no_total = aiohttp.ClientTimeout(total=None, connect=CALL_TIMEOUT_S)
        self.streams = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, force_close=True), timeout=no_total
        )
        self.unary = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=30), timeout=no_total
        )

    async def close(self) -> None:
        await self.streams.close()
        await self.unary.close()
        for c in self.channels:
            await c.close()

    async def native(
        self, replica: int, method: str, request: Any, md: Any, timeout: float = CALL_TIMEOUT_S
    ) -> Any:
        try:
            return await getattr(self.stubs[replica], method)(request, metadata=md, timeout=timeout)
        except grpc.aio.AioRpcError as e:
            raise CallError(e.code().name, e.details() or "") from None

    async def web(
        self,
        protocol: str,
        method: str,
        request: Any,
        reply: type[Any],
        token: str | None,
        timeout: float = CALL_TIMEOUT_S,
    ) -> Any:
        """A unary call through Envoy as a browser makes it: gRPC-Web
        (``application/grpc-web+proto``) or Connect (``application/proto``)."""
        raw = request.SerializeToString()
        if protocol == "grpc-web":
            headers = {"content-type": "application/grpc-web+proto", "x-grpc-web": "1"}
            headers["grpc-timeout"] = f"{int(timeout * 1000)}m"
            body = envelope(raw)
        else:
            headers = {"content-type": "application/proto", "connect-protocol-version": "1"}
            headers["connect-timeout-ms"] = str(int(timeout * 1000))
            body = raw
        headers["origin"] = self.origin
        if token is not None:
            headers["authorization"] = f"Bearer {token}"
        try:
            async with self.unary.post(
                self.base + method,
                data=body,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=timeout + 5),
            ) as resp:
                status, got, data = resp.status, resp.headers, await resp.read()
        except (aiohttp.ClientError, TimeoutError) as e:
            raise CallError("CONNECTION", f"{type(e).__name__} {e}"[:120]) from None
        if protocol == "connect":
            if status == 200:
                return reply.FromString(data)
            try:
                err = json.loads(data)
                raise CallError(str(err.get("code", "")).upper(), str(err.get("message", "")))
            except (ValueError, AttributeError):  # not the server's: Envoy's own 503
                raise CallError(http_code(status), repr(data[:100])) from None
        return reply.FromString(grpc_web_reply(status, got, data))


def http_code(status: int) -> str:
    """An HTTP status without a gRPC one, as gRPC-Web and Connect clients map it."""
    return "UNAVAILABLE" if status in (502, 503, 504) else f"HTTP_{status}"


def grpc_web_reply(status: int, headers: Any, data: bytes) -> bytes:
    """The message of a gRPC-Web unary response, or its error as a CallError."""
    if status != 200:
        raise CallError(http_code(status), repr(data[:100]))
    if headers.get("grpc-status", "0") != "0":  # refused at once: the status in the headers
        code = CODE_NAMES.get(int(headers["grpc-status"]), headers["grpc-status"])
        raise CallError(code, headers.get("grpc-message", ""))
    message, trailers = None, {}
    for flag, part in frames(bytearray(data)):
        if flag == 0:
            message = part
        elif flag & 0x80:
            trailers = grpc_web_trailers(part)
    code_text = trailers.get("grpc-status", "0")
    if code_text != "0":
        code = CODE_NAMES.get(int(code_text), code_text) if code_text.isdigit() else code_text
        raise CallError(code, trailers.get("grpc-message", ""))
    if message is None:
        raise CallError("NO_MESSAGE", "a gRPC-Web response without a message")
    return message


# -- a client process: its tables, seats and viewers --------------------------------------------


@dataclass
class Control:
    think_s: float
    drop_mean_s: float
    stopping: bool = False
    stats: dict[str, Counter[str]] = field(default_factory=dict)  # by kind
    totals: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)  # calls failed and sent again
    errors: list[str] = field(default_factory=list)  # what should not happen

    def count(self, kind: str, what: str, n: int = 1) -> None:
        self.stats.setdefault(kind, Counter())[what] += n

    def failed(self, kind: str, what: str, e: Exception) -> None:
        text = f"{kind} {what}: {e}"[:160]
        self.failures.append(text)
        code = getattr(e, "code", "")
        if isinstance(e, CallError) and code not in TRANSIENT:
            self.errors.append(text)


class Viewer:
    """One stream of a match's events (a seat's or a spectator's), resumed
    after every drop or failure; what it received, for the final check."""

    def __init__(self, table: Table, kind: str, seat: int | None, token: str | None) -> None:
        self.table = table
        self.c = table.c
        self.kind = kind
        self.seat = seat
        self.token = token
        self.md = None if token is None else (("authorization", f"Bearer {token}"),)
        self.rng = random.Random(table.rng.getrandbits(64))
        self.replica = (table.k + (seat or 0)) % len(table.net.stubs)
        self.seqs: list[int] = []
        self.hashes: list[int] = []
        self.last = 0  # the after_seq of the next resume
        self.top = 0  # the highest seq received
        self.ended = False
        self.opened = False

    def on_events(self, events: Any) -> None:
        for ev in events:
            self.seqs.append(ev.seq)
            self.hashes.append(hash(ev.SerializeToString()))
            self.last = max(self.last, ev.seq)
            self.top = max(self.top, ev.seq)
            self.learn(ev)
        self.c.count(self.kind, "events", len(events))
        self.after_batch()

    def learn(self, ev: Any) -> None:
        if ev.WhichOneof("kind") == "match_ended":
            self.ended = True

    def after_batch(self) -> None:
        pass

    def next_replica(self) -> None:
        self.replica = (self.replica + 1) % len(self.table.net.stubs)

    async def run(self) -> None:
        """Open, read, drop at random or fail, resume; until the match ends on
        this stream or the table is closed (cancelled)."""
        retry = 0
        while not self.ended:
            drop = self.rng.expovariate(1 / self.c.drop_mean_s) if not self.c.stopping else None
            timer = asyncio.timeout(drop)
            if self.opened:
                self.c.count(self.kind, "resumes")
            self.opened = True
            try:
                async with timer:
                    got = await self.consume()
                retry = 0 if got else retry + 1
                if not self.ended:
                    raise StreamError("the stream ended before its match")
            except TimeoutError:
                if not timer.expired():
                    self.c.failed(self.kind, "stream", CallError("CONNECTION", "timeout"))
                    await asyncio.sleep(retry_delay(retry))
                    retry += 1
                    continue
                self.c.count(self.kind, "drops")
                if self.kind in NATIVE:
                    self.replica = self.rng.randrange(len(self.table.net.stubs))
                await asyncio.sleep(self.rng.uniform(0, DROP_PAUSE_S))
            except (CallError, StreamError, grpc.aio.AioRpcError, aiohttp.ClientError) as e:
                if isinstance(e, grpc.aio.AioRpcError):
                    e = CallError(e.code().name, e.details() or "")
                self.c.failed(self.kind, "stream", e)
                self.next_replica()
                await asyncio.sleep(retry_delay(retry))
                retry += 1

    async def consume(self) -> bool:
        """One stream (or a series of long polls) until the match ends; whether
        anything came (a stream that fails at once backs off longer)."""
        n = len(self.seqs)
        if self.kind == "play":
            await self.play_call()
        elif self.kind == "stream":
            await self.native_stream()
        elif self.kind == "poll":
            await self.polls()
        else:
            await self.http_stream()
        return len(self.seqs) > n

    async def native_stream(self) -> None:
        stub = self.table.net.stubs[self.replica]
        request = pb.StreamEventsRequest(match_id=self.table.match_id, after_seq=self.last)
        call = stub.StreamEvents(request, metadata=self.md)
        try:
            while (item := await call.read()) is not grpc.aio.EOF:
                self.on_events(item.events)
                if self.ended:
                    return
        finally:
            call.cancel()

    async def http_stream(self) -> None:
        protocol = "connect" if self.kind == "connect" else "grpc-web"
        method = "Spectate" if self.token is None else "StreamEvents"
        request = pb.StreamEventsRequest(match_id=self.table.match_id, after_seq=self.last)
        net = self.table.net
        messages = http_stream(
            net.streams,
            net.base + method,
            request.SerializeToString(),
            web_headers(protocol, net.origin, self.token),
        )
        async with contextlib.aclosing(messages):
            async for _, data in messages:
                self.on_events(pb.StreamEventsResponse.FromString(data).events)
                if self.ended:
                    return

    async def polls(self) -> None:
        while not self.ended:
            request = pb.PollEventsRequest(
                match_id=self.table.match_id, after_seq=self.last, wait_ms=POLL_WAIT_MS
            )
            got = await self.table.net.web(
                "grpc-web",
                "PollEvents",
                request,
                pb.PollEventsResponse,
                self.token,
                POLL_WAIT_MS / 1000 + 5,
            )
            if got.last_seq < self.last:
                self.c.errors.append(f"PollEvents went back: last_seq {got.last_seq} < {self.last}")
            self.on_events(got.events)
            self.last = max(self.last, got.last_seq)
            self.c.count(self.kind, "polls")

    async def play_call(self) -> None:
        raise NotImplementedError  # a spectator has no Play call

    async def reference(self) -> tuple[list[int], list[int]]:
        """The viewer's events read again from the start (PollEvents, native
        gRPC, after_seq 0, paged; the next replica on a failure)."""
        seqs: list[int] = []
        hashes: list[int] = []
        after, retry = 0, 0
        give_up = time.monotonic() + VERIFY_GIVE_UP_S
        while True:
            request = pb.PollEventsRequest(match_id=self.table.match_id, after_seq=after)
            try:
                got = await self.table.net.native(self.replica, "PollEvents", request, self.md)
            except CallError as e:
                self.c.failed(self.kind, "verify", e)
                if time.monotonic() > give_up:
                    raise
                self.next_replica()
                await asyncio.sleep(retry_delay(retry))
                retry += 1
                continue
            for ev in got.events:
                seqs.append(ev.seq)
                hashes.append(hash(ev.SerializeToString()))
            after = got.last_seq
            if not got.more:
                return seqs, hashes

    async def caught_up(self) -> tuple[list[int], list[int]]:
        """The reference, once this viewer has received up to its last event
        (read again while the match moves on: a bot's move), or after DRAIN_S."""
        deadline = time.monotonic() + DRAIN_S
        while True:
            seqs, hashes = await self.reference()
            if self.top == (seqs[-1] if seqs else 0) or time.monotonic() > deadline:
                return seqs, hashes
            await asyncio.sleep(0.5)

    def check(self, seqs: list[int], hashes: list[int]) -> Counter[str]:
        """This viewer's events against its reference."""
        out: Counter[str] = Counter()
        got = self.seqs
        out["events_checked"] = len(seqs)
        out["duplicated"] = len(got) - len(set(got))
        out["reordered"] = sum(1 for a, b in itertools.pairwise(got) if b < a)
        ref = dict(zip(seqs, hashes, strict=True))
        mine: dict[int, int] = {}
        for s, h in zip(got, self.hashes, strict=True):
            mine.setdefault(s, h)
        out["lost"] = sum(1 for s in ref if s not in mine)
        out["unexpected"] = sum(1 for s in mine if s not in ref)
        out["differ"] = sum(1 for s, h in mine.items() if s in ref and ref[s] != h)
        return out


class Seat(Viewer):
    """A human seat: a viewer that acts when its own events show its turn."""

    def __init__(self, table: Table, kind: str, seat: int, token: str) -> None:
        super().__init__(table, kind, seat, token)
        self.seat_no = seat
        self.match = Match(RULES, seed=table.seed)
        self.learned = 0  # the seq of the last action event applied
        self.turn_seq: int | None = None  # my turn once I have seen this seq
        self.dealt = False  # my first turn: once my cards came
        self.done = -1  # the last position (len(match.actions)) I acted at
        self.turn = asyncio.Event()
        self.call: Any = None
        self.call_live = asyncio.Event()
        self.waiting: dict[str, asyncio.Future[Any]] = {}

    def learn(self, ev: Any) -> None:
        kind = ev.WhichOneof("kind")
        if kind == "hand_shown":
            self.dealt = True
        if kind not in ACTION_KINDS or ev.seq <= self.learned:
            super().learn(ev)
            return
        if kind == "card_played":
            actor, action = (
                ev.card_played.seat,
                make_play(convert.card_from_pb(ev.card_played.card)),
            )
        else:
            actor, action = ev.bid_made.seat, make_bid(ev.bid_made.tricks)
        caused = self.match.apply(actor, action)
        self.learned = ev.seq
        if not self.match.is_over and self.match.to_act == self.seat_no:
            me = self.seat_no
            last = max(i for i, e in enumerate(caused) if e.audience.visible_to(me, me & 1))
            self.turn_seq = ev.seq + last

    def my_turn(self) -> bool:
        m = self.match
        if m.is_over or m.to_act != self.seat_no or len(m.actions) <= self.done:
            return False
        if not m.actions:
            return self.dealt
        return self.turn_seq is not None and self.last >= self.turn_seq

    def after_batch(self) -> None:
        if self.my_turn():
            self.turn.set()

    async def act(self) -> None:
        """Think, then act, each time it is this seat's turn, until the stop."""
        table = self.table
        while not self.c.stopping:
            await self.turn.wait()
            self.turn.clear()
            if table.delay:
                delay, table.delay = table.delay, 0.0
                await asyncio.sleep(delay)
            await asyncio.sleep(self.c.think_s * (0.5 + self.rng.random()))
            if self.c.stopping or not self.my_turn():
                continue
            position = len(self.match.actions)
            action = convert.action_to_pb(self.rng.choice(self.match.legal_actions(self.seat_no)))
            await self.submit(f"s{self.seat_no}-{position}", action, position)
            self.done = position
            self.after_batch()

    async def submit(self, action_id: str, action: Any, position: int) -> None:
        give_up = time.monotonic() + SUBMIT_GIVE_UP_S
        for retry in range(1_000_000):
            if len(self.match.actions) > position:  # applied; its answer was lost
                self.c.count(self.kind, "actions_seen_first")
                break
            try:
                await self.send(action_id, action)
                break
            except (CallError, ConnectionError, TimeoutError) as e:
                self.c.failed(self.kind, "action", e)
                if time.monotonic() > give_up:
                    self.c.errors.append(f"{self.kind} action {action_id} given up: {e}"[:160])
                    return
                if self.kind in NATIVE:
                    self.next_replica()
                await asyncio.sleep(retry_delay(retry))
        self.c.count(self.kind, "actions")
        if retry:
            self.c.count(self.kind, "actions_retried")

    async def send(self, action_id: str, action: Any) -> None:
        request = pb.SubmitActionRequest(
            match_id=self.table.match_id, action_id=action_id, action=action, expected_seq=self.last
        )
        net = self.table.net
        if self.kind == "play":
            await self.on_play(action_id, action)
        elif self.kind == "stream":
            await net.native(self.replica, "SubmitAction", request, self.md)
        else:
            protocol = "connect" if self.kind == "connect" else "grpc-web"
            await net.web(protocol, "SubmitAction", request, pb.SubmitActionResponse, self.token)

    async def on_play(self, action_id: str, action: Any) -> None:
        await asyncio.wait_for(self.call_live.wait(), CALL_TIMEOUT_S)
        fut = self.waiting[action_id] = asyncio.get_running_loop().create_future()
        try:
            play = pb.PlayAction(action_id=action_id, action=action, expected_seq=self.last)
            await self.call.write(pb.PlayRequest(action=play))
            result = await asyncio.wait_for(fut, CALL_TIMEOUT_S)
        except grpc.aio.AioRpcError as e:
            raise CallError(e.code().name, e.details() or "") from None
        except asyncio.InvalidStateError:
            raise ConnectionError("the Play call ended") from None
        finally:
            self.waiting.pop(action_id, None)
        if result.HasField("error"):
            raise CallError(CODE_NAMES.get(result.error.code, "?"), result.error.message)

    async def play_call(self) -> None:
        call = self.table.net.stubs[self.replica].Play(metadata=self.md)
        try:
            open_ = pb.PlayOpen(match_id=self.table.match_id, after_seq=self.last)
            await call.write(pb.PlayRequest(open=open_))
            self.call = call
            self.call_live.set()
            while (item := await call.read()) is not grpc.aio.EOF:
                for r in item.results:
                    fut = self.waiting.get(r.action_id)
                    if fut is not None and not fut.done():
                        fut.set_result(r)
                if item.events:
                    self.on_events(item.events)
                if self.ended:
                    return
        finally:
            self.call_live.clear()
            call.cancel()
            for fut in self.waiting.values():
                if not fut.done():
                    fut.set_exception(ConnectionError("the Play call ended"))


class Table:
    """Matches one after the other until the stop, each checked at its end."""

    def __init__(self, k: int, net: Net, c: Control, rng: random.Random, cfg: dict[str, Any]):
        self.k = k
        self.net = net
        self.c = c
        self.rng = rng
        self.bots = cfg["bot_every"] > 0 and k % cfg["bot_every"] == cfg["bot_every"] - 1
        self.spectator = k % 4 == 0
        self.delay = rng.uniform(0, cfg["stagger_s"])  # before the table's first action
        self.match_id = ""
        self.seed = 0

    async def create(self, sem: asyncio.Semaphore) -> list[Viewer]:
        seats = [
            pb.SeatConfig(name=f"soak {i}", bot=True, bot_level=pb.BOT_LEVEL_RANDOM)
            if self.bots and i % 2
            else pb.SeatConfig(name=f"soak {i}")
            for i in range(4)
        ]
        self.seed = self.rng.getrandbits(63)
        request = pb.CreateMatchRequest(
            ruleset=RULESET_PB, seats=seats, seed=self.seed, has_seed=True
        )
        replica = self.k % len(self.net.stubs)
        for retry in range(1_000_000):
            try:
                async with sem:
                    created = await self.net.native(replica, "CreateMatch", request, OPERATOR_MD)
                break
            except CallError as e:
                self.c.failed("create", "CreateMatch", e)
                if self.c.stopping:
                    return []
                replica = (replica + 1) % len(self.net.stubs)
                await asyncio.sleep(retry_delay(retry))
        self.match_id = created.match.match_id
        self.c.totals["matches_created"] += 1
        viewers: list[Viewer] = [
            Seat(self, KINDS[(4 * self.k + t.seat) % len(KINDS)], t.seat, t.token)
            for t in created.seat_tokens
        ]
        if self.spectator:
            viewers.append(Viewer(self, "spectator", None, None))
        for v in viewers:
            self.c.count(v.kind, "viewers")
        return viewers

    async def run(self, sem: asyncio.Semaphore) -> None:
        while not self.c.stopping:
            viewers = await self.create(sem)
            if not viewers:
                return
            await self.play(viewers)

    async def play(self, viewers: list[Viewer]) -> None:
        seats = [v for v in viewers if isinstance(v, Seat)]
        tasks = [asyncio.create_task(v.run()) for v in viewers]
        tasks += [asyncio.create_task(s.act()) for s in seats]
        first_end: float | None = None
        try:
            while not all(v.ended for v in viewers) and not self.c.stopping:
                if first_end is None and any(v.ended for v in viewers):
                    first_end = time.monotonic()
                if first_end is not None and time.monotonic() - first_end > END_WAIT_S:
                    self.c.errors.append(f"match {self.match_id}: a viewer never saw its end")
                    break
                await asyncio.sleep(0.5)
            if all(v.ended for v in viewers):
                self.c.totals["matches_ended"] += 1
            for s in seats:
                s.turn.set()  # an act loop waiting for a turn sees the stop
            await self.verify(viewers)
        finally:
            for t in tasks:
                t.cancel()
            for r in await asyncio.gather(*tasks, return_exceptions=True):
                if isinstance(r, Exception):  # a viewer's or seat's bug, a diverged replica
                    self.c.errors.append(f"match {self.match_id}: {r!r}"[:200])

    async def verify(self, viewers: list[Viewer]) -> None:
        async def one(v: Viewer) -> None:
            try:
                seqs, hashes = await v.caught_up()
            except CallError as e:
                self.c.errors.append(f"match {self.match_id}: no reference for a viewer: {e}")
                self.c.totals["unverified"] += 1
                return
            found = v.check(seqs, hashes)
            self.c.totals.update(found)
            self.c.totals["viewers_checked"] += 1
            self.c.count(v.kind, "lost", found["lost"])
            bad = {k: n for k, n in found.items() if n and k != "events_checked"}
            if bad:
                self.c.errors.append(
                    f"match {self.match_id} {v.kind} seat {v.seat}: {bad}; got {len(v.seqs)} "
                    f"events ending {v.seqs[-5:]}, the log {len(seqs)} ending {seqs[-5:]}"
                )

        await asyncio.gather(*(one(v) for v in viewers))


def client_process(conn: Connection, cfg: dict[str, Any]) -> None:
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops it
    asyncio.run(_client_main(conn, cfg))


def snapshot(c: Control) -> dict[str, Any]:
    return {
        "stats": {k: dict(v) for k, v in c.stats.items()},
        "totals": dict(c.totals),
        "failures": len(c.failures),
        "errors": len(c.errors),
    }


async def _client_main(conn: Connection, cfg: dict[str, Any]) -> None:
    loop = asyncio.get_running_loop()
    tune_gc()  # the server's own tuning: the clients share its cores
    net = Net(cfg)
    c = Control(think_s=cfg["think_s"], drop_mean_s=cfg["drop_mean_s"])
    rng = random.Random(cfg["seed"])
    sem = asyncio.Semaphore(CREATE_CONCURRENCY)
    tables = [Table(k, net, c, random.Random(rng.getrandbits(64)), cfg) for k in cfg["tables"]]
    running = [asyncio.create_task(t.run(sem)) for t in tables]
    conn.send(("ready",))
    while True:
        order = await loop.run_in_executor(None, conn.recv)
        if order[0] == "progress":
            conn.send(("progress", snapshot(c)))
        else:  # ("stop",)
            break
    c.stopping = True
    done, pending = await asyncio.wait(running, timeout=DRAIN_S + END_WAIT_S + 30)
    if pending:
        c.errors.append(f"{len(pending)} tables did not finish their checks in time")
        for t in pending:
            t.cancel()
    for t in done:
        if t.exception() is not None:
            c.errors.append(f"a table failed: {t.exception()!r}"[:200])
    final = snapshot(c)
    final["failure_kinds"] = error_counts(c.failures)
    final["error_list"] = c.errors[:30]
    conn.send(("done", final))
    await net.close()


# -- the parent: processes, kills, samples ------------------------------------------------------


@dataclass
class Replica:
    index: int
    port: int
    server: Server
    incarnation: int = 1
    started: float = 0.0

    @property
    def name(self) -> str:
        return f"r{self.index}.{self.incarnation}"


class Soak:
    """The run: its processes (a Procs, all stopped at its end whatever
    happens), the kills and what went wrong."""

    def __init__(self, workdir: Path, log_dir: Path, args: argparse.Namespace) -> None:
        self.procs = Procs(workdir, log_dir, detached=True)
        self.args = args
        self.replicas: list[Replica] = []
        self.clients: list[tuple[BaseProcess, Connection]] = []
        self.t0 = time.monotonic()
        self.kills: list[dict[str, Any]] = []
        self.unexpected_exits: list[str] = []

    @property
    def redis(self) -> RedisProcess:
        assert isinstance(self.procs.redis, RedisProcess)
        return self.procs.redis

    @property
    def envoy(self) -> Envoy:
        assert self.procs.envoy is not None
        return self.procs.envoy

    def spawn_replica(self, index: int, port: int, incarnation: int) -> Server:
        extra = ["--metrics-port", "-1", "--unload-after-seconds", str(self.args.unload_after_s)]
        return self.procs.replica(f"replica-{index}.{incarnation}", "redis", "soak", extra, port)

    def start(self) -> None:
        self.procs.redis = RedisProcess(self.procs.workdir / "redis", None)
        for i in range(self.args.replicas):
            # Started on a port of their own choosing, then always on it: a
            # restarted replica comes back where Envoy and the clients look.
            server = self.spawn_replica(i, 0, 1)
            self.replicas.append(Replica(i, server.port, server, 1, self.now()))
        self.procs.start_envoy([r.server for r in self.replicas])

    def now(self) -> float:
        return time.monotonic() - self.t0

    def start_clients(self) -> None:
        a = self.args
        for i in range(a.clients):
            cfg = {
                "replicas": [f"127.0.0.1:{r.port}" for r in self.replicas],
                "envoy_port": self.envoy.port,
                "origin": self.envoy.origin,
                "tables": list(range(i, a.matches, a.clients)),
                "think_s": a.think_ms / 1000,
                "drop_mean_s": a.drop_mean_s,
                "bot_every": a.bot_every,
                "stagger_s": a.think_ms / 1000 * 4,
                "seed": a.seed + i,
            }
            self.clients.append(self.procs.client(client_process, cfg))
        for p, conn in self.clients:
            if not conn.poll(START_TIMEOUT_S) or conn.recv()[0] != "ready":
                raise SystemExit(f"client process {p.pid} did not start")

    def kill_one(self, victim: Replica) -> None:
        """``kill -9``, then the same replica started again on its port."""
        t = self.now()
        os.kill(victim.server.pid, signal.SIGKILL)
        victim.server.proc.wait(timeout=10)
        time.sleep(self.args.restart_after_s)
        victim.incarnation += 1
        victim.server = self.spawn_replica(victim.index, victim.port, victim.incarnation)
        victim.started = self.now()
        self.kills.append({"at_s": t, "replica": victim.index, "back_s": victim.started - t})
        print(
            f"  {t:6.0f} s  kill -9 of replica {victim.index}; back on its port after "
            f"{victim.started - t:.1f} s (incarnation {victim.incarnation})"
        )

    def check_alive(self) -> None:
        """A replica that died on its own is reported and started again."""
        for r in self.replicas:
            if not r.server.alive():
                text = f"replica {r.name} exited on its own ({r.server.proc.returncode})"
                self.unexpected_exits.append(f"{text}: {r.server.tail(10)}")
                print(f"  {self.now():6.0f} s  {text}; started again")
                r.incarnation += 1
                r.server = self.spawn_replica(r.index, r.port, r.incarnation)
                r.started = self.now()
        others = (("envoy", self.envoy.alive()), ("redis-server", self.redis.proc.poll() is None))
        for name, alive in others:
            if not alive:
                raise SystemExit(f"{name} exited during the run")

    def progress(self) -> list[dict[str, Any]]:
        out = []
        for _, conn in self.clients:
            conn.send(("progress",))
        for p, conn in self.clients:
            if not conn.poll(30):
                raise SystemExit(f"client process {p.pid} does not answer")
            out.append(conn.recv()[1])
        return out

    def stop_clients(self) -> list[dict[str, Any]]:
        for _, conn in self.clients:
            conn.send(("stop",))
        finals = []
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for p, conn in self.clients:
            if conn.poll(max(0.1, deadline - time.monotonic())):
                finals.append(conn.recv()[1])
            else:
                finals.append({"error_list": [f"client process {p.pid} did not finish"]})
            p.join(timeout=10)
        return finals


def rss(pid: int) -> float:
    try:
        return psutil.Process(pid).memory_info().rss / MIB
    except psutil.Error:
        return float("nan")


def sample(soak: Soak, progress: list[dict[str, Any]], cpu: dict[str, float]) -> dict[str, Any]:
    totals: Counter[str] = Counter()
    for p in progress:
        totals.update(p["totals"])
        for stats in p["stats"].values():
            totals.update({k: stats.get(k, 0) for k in ("actions", "events", "resumes", "drops")})
    return {
        "t": soak.now(),
        "replicas": {r.name: rss(r.server.pid) for r in soak.replicas},
        "redis": rss(soak.redis.pid),
        "redis_used": soak.redis.used_memory() / MIB,
        "envoy": rss(soak.envoy.pid),
        "clients": sum(rss(p.pid or 0) for p, _ in soak.clients),
        "totals": dict(totals),
        "errors": sum(p["errors"] for p in progress),
        "cpu": cpu,
    }


def print_sample(s: dict[str, Any]) -> None:
    t = s["totals"]
    reps = " ".join(f"{k} {v:.0f}" for k, v in s["replicas"].items())
    cpu = s["cpu"]
    groups = ("servers", "redis", "envoy", "clients", "other")
    cpu_text = " ".join(f"{k} {cpu.get(k, 0):.0f}" for k in groups)
    print(
        f"  {s['t']:6.0f} s  actions {t.get('actions', 0):>7,}  events {t.get('events', 0):>8,}  "
        f"resumes {t.get('resumes', 0):>6,}  drops {t.get('drops', 0):>6,}  "
        f"ended {t.get('matches_ended', 0):>4,}  lost {t.get('lost', 0)}  | RSS MiB {reps} "
        f"redis {s['redis']:.0f} (used {s['redis_used']:.1f}) envoy {s['envoy']:.0f} "
        f"clients {s['clients']:.0f}  | CPU % {cpu_text}"
    )


def meter(soak: Soak) -> GroupMeter:
    return GroupMeter(
        {
            "servers": [r.server.pid for r in soak.replicas],
            "redis": [soak.redis.pid],
            "envoy": [soak.envoy.pid],
            "clients": [p.pid or 0 for p, _ in soak.clients] + [os.getpid()],
        }
    )


def run(soak: Soak) -> list[dict[str, Any]]:
    """The run itself: samples, kills, until --minutes are up."""
    a = soak.args
    end = a.minutes * 60
    victims = [r for r in soak.replicas if r.index != 0] if a.kill_every_s > 0 else []
    next_kill, kills = a.kill_every_s, 0
    samples: list[dict[str, Any]] = []
    m = meter(soak)
    m.start()
    next_sample = 0.0
    while True:
        now = soak.now()
        last = now >= end
        if now >= next_sample or last:
            cpu = percents(m.stop()) if samples else {}
            samples.append(sample(soak, soak.progress(), cpu))
            print_sample(samples[-1])
            m = meter(soak)
            m.start()
            next_sample += a.sample_s
        if last:
            return samples
        if victims and now >= next_kill and end - now > a.kill_every_s / 4:
            soak.kill_one(victims[kills % len(victims)])
            kills += 1
            next_kill += a.kill_every_s
            m = meter(soak)  # the killed pid is gone: measure the new set from here
            m.start()
        soak.check_alive()
        time.sleep(0.2)


# -- the report -----------------------------------------------------------------------------


def merge(finals: list[dict[str, Any]]) -> tuple[dict[str, Counter[str]], Counter[str]]:
    by_kind: dict[str, Counter[str]] = {}
    totals: Counter[str] = Counter()
    for f in finals:
        totals.update(f.get("totals", {}))
        for kind, stats in f.get("stats", {}).items():
            by_kind.setdefault(kind, Counter()).update(stats)
    return by_kind, totals


def print_kinds(by_kind: dict[str, Counter[str]]) -> Counter[str]:
    rows, all_ = [], Counter[str]()
    for kind in (*KINDS, "spectator"):
        s = by_kind.get(kind, Counter())
        all_.update({k: v for k, v in s.items() if k != "polls"})
        rows.append(
            [
                KIND_LABELS[kind],
                f"{s['viewers']:,}",
                f"{s['actions']:,}",
                f"{s['actions_retried']:,}",
                f"{s['events']:,}",
                f"{s['drops']:,}",
                f"{s['resumes']:,}",
                f"{s['lost']:,}",
            ]
        )
    rows.append(
        [
            "all",
            f"{all_['viewers']:,}",
            f"{all_['actions']:,}",
            f"{all_['actions_retried']:,}",
            f"{all_['events']:,}",
            f"{all_['drops']:,}",
            f"{all_['resumes']:,}",
            f"{all_['lost']:,}",
        ]
    )
    print_grid(
        [
            "viewers by kind",
            "viewers",
            "actions",
            "of them retried",
            "events",
            "random drops",
            "resumes",
            "lost events",
        ],
        rows,
    )
    return all_


def print_checks(totals: Counter[str]) -> bool:
    checks = [
        ("viewers checked against their log", totals["viewers_checked"]),
        ("viewers that could not be checked", totals["unverified"]),
        ("events in those logs", totals["events_checked"]),
        ("LOST: in the log, never received", totals["lost"]),
        ("received twice", totals["duplicated"]),
        ("received out of order", totals["reordered"]),
        ("received but not in the viewer's log", totals["unexpected"]),
        ("received with other bytes than the log's", totals["differ"]),
    ]
    print_grid(["delivery check", "count"], [[k, f"{v:,}"] for k, v in checks])
    return not any(v for k, v in checks[1:] if k != "events in those logs")


def judge(values: list[tuple[float, float]], warmup: float) -> tuple[float, float, float] | None:
    """(start, end, growth) of a series of (t, MiB): start after the warm-up."""
    after = [(t, v) for t, v in values if t >= warmup]
    if len(after) < 2:
        return None
    start, end = after[0][1], after[-1][1]
    return start, end, end / start - 1


def print_memory(soak: Soak, samples: list[dict[str, Any]], warmup: float) -> bool:
    rows, flat = [], True
    series: dict[str, list[tuple[float, float]]] = {}
    for s in samples:
        for name, v in s["replicas"].items():
            series.setdefault(name, []).append((s["t"], v))
        for name in ("envoy", "redis", "redis_used", "clients"):
            series.setdefault(name, []).append((s["t"], s[name]))
    labels = {
        "envoy": "envoy RSS",
        "redis": "redis-server RSS",
        "redis_used": "redis used_memory",
        "clients": "client processes RSS",
    }
    replicas = {name for s in samples for name in s["replicas"]}
    for name, values in series.items():
        judged = name in ("envoy", "r0.1")
        # a restarted replica: its own warm-up from its first sample
        got = judge(values, values[0][0] + warmup if name in replicas else warmup)
        if got is None:
            vmin, vmax = min(v for _, v in values), max(v for _, v in values)
            rows.append(
                [
                    labels.get(name, f"replica {name}"),
                    f"{values[0][1]:.1f}",
                    "",
                    f"{values[-1][1]:.1f}",
                    f"{vmax:.1f}",
                    "",
                    f"{values[0][0]:.0f}-{values[-1][0]:.0f} s, min {vmin:.1f}",
                ]
            )
            continue
        start, end, growth = got
        verdict = ""
        if judged:
            ok = growth <= TOLERANCE
            flat = flat and ok
            verdict = "flat" if ok else "GROWS"
        rows.append(
            [
                labels.get(name, f"replica {name}"),
                f"{values[0][1]:.1f}",
                f"{start:.1f}",
                f"{end:.1f}",
                f"{max(v for _, v in values):.1f}",
                f"{100 * growth:+.1f} %",
                verdict or f"{values[0][0]:.0f}-{values[-1][0]:.0f} s",
            ]
        )
    print_grid(
        ["memory (MiB)", "first", "start", "end", "max", "end/start", "verdict / sampled"], rows
    )
    print(
        f"start: the first sample at or after the warm-up ({warmup:.0f} s; for a restarted "
        f"replica, after its own start plus the warm-up), end: the last sample, before the stop; "
        f"flat: end <= start + {100 * TOLERANCE:.0f} %, judged for replica 0 (r0.1, never "
        f"killed) and Envoy; rN.M: replica N's M-th process"
    )
    redis = judge(series["redis_used"], warmup)
    created = [s["totals"].get("matches_created", 0) for s in samples if s["t"] >= warmup]
    if redis and len(created) >= 2 and created[-1] - created[0] >= 20:
        per = (redis[1] - redis[0]) * 1024 / (created[-1] - created[0])
        print(
            f"redis keeps every match (finished ones too, by design): used_memory grew "
            f"{redis[1] - redis[0]:.1f} MiB for {created[-1] - created[0]:,} matches created "
            f"since the start sample, {per:.1f} KiB a match"
        )
    return flat


def report(soak: Soak, samples: list[dict[str, Any]], finals: list[dict[str, Any]]) -> int:
    a = soak.args
    by_kind, totals = merge(finals)
    span = samples[-1]["t"] if samples else 0.0
    print()
    all_ = print_kinds(by_kind)
    print(
        f"{span:.0f} s; {all_['actions']:,} actions accepted "
        f"({all_['actions'] / (span or 1):.0f}/s), "
        f"{all_['actions_seen_first']:,} of them seen on the stream before any answer (an "
        f"answer lost to a drop or a kill); matches created {totals['matches_created']:,}, "
        f"played to their end {totals['matches_ended']:,}; resumes: a stream, Play call or "
        f"long poll opened again with after_seq after a drop or a failure"
    )
    print()
    ok = print_checks(totals)
    print()
    warmup = min(a.warmup_s, a.minutes * 60 / 5)
    flat = print_memory(soak, samples, warmup)
    print()
    print(
        f"replica kills: {len(soak.kills)}: "
        + ", ".join(
            f"r{k['replica']} at {k['at_s']:.0f} s (back {k['back_s']:.1f} s)" for k in soak.kills
        )
    )
    for text in soak.unexpected_exits:
        print(f"UNEXPECTED: {text}")
    cpus = [s["cpu"] for s in samples[1:] if s["cpu"]]
    if cpus:
        mean = {k: sum(c.get(k, 0) for c in cpus) / len(cpus) for k in cpus[0]}
        print(
            "CPU, mean of the samples (% of one core): "
            + ", ".join(f"{k} {v:.0f}" for k, v in mean.items())
        )
        warn_if_disturbed([c.get("other", 0) for c in cpus])
    failures = sum(f.get("failures", 0) for f in finals)
    print(f"calls that failed and were sent again (kills, drops, Envoy's 503s): {failures:,}")
    kinds: Counter[str] = Counter()
    for f in finals:
        for text, n in f.get("failure_kinds", []):
            kinds[text] += n
    for text, n in kinds.most_common(8):
        print(f"  {n:>7,} x {text}")
    errors = [e for f in finals for e in f.get("error_list", [])]
    n_errors = sum(f.get("errors", 1) for f in finals)  # 1: a client that did not finish
    print(f"errors (refusals that are not transient, checks that failed): {n_errors:,}")
    for e in errors[:15]:
        print(f"  {e}")
    print()
    verdict = ok and flat and not n_errors and not soak.unexpected_exits
    print(
        f"lost events {totals['lost']}; memory {'flat' if flat else 'NOT flat'}; "
        f"{'PASS' if verdict else 'FAIL'}"
    )
    return 0 if verdict else 1


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--minutes", type=float, default=10.0, help="how long the load runs (10)")
    p.add_argument("--matches", type=int, default=200, help="concurrent tables (200)")
    p.add_argument("--replicas", type=int, default=3, help="server processes on the Redis (3)")
    p.add_argument("--clients", type=int, default=2, help="client processes (2)")
    p.add_argument("--think-ms", type=float, default=2000.0, help="a seat's think time (2000)")
    p.add_argument(
        "--drop-mean-s",
        type=float,
        default=60.0,
        help="mean time between a viewer's random disconnects (60)",
    )
    p.add_argument(
        "--kill-every-s",
        type=float,
        default=120.0,
        help="kill -9 of a replica this often (120; 0: never)",
    )
    p.add_argument(
        "--restart-after-s",
        type=float,
        default=1.0,
        help="a killed replica starts again this long after (1)",
    )
    p.add_argument(
        "--bot-every",
        type=int,
        default=10,
        help="every n-th table has two Random bots (10; 0: none)",
    )
    p.add_argument(
        "--unload-after-s",
        type=float,
        default=60.0,
        help="the servers' --unload-after-seconds (60)",
    )
    p.add_argument("--sample-s", type=float, default=30.0, help="memory sample period (30)")
    p.add_argument(
        "--warmup-s",
        type=float,
        default=120.0,
        help="memory start sample after this (120, at most a fifth of the run)",
    )
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--log-dir", default="", help="keep the processes' logs here")
    p.add_argument("--json", default="", help="write the samples and counts here")
    args = p.parse_args(argv)
    if args.matches < 1 or args.replicas < 1 or args.clients < 1 or args.minutes <= 0:
        p.error("--matches, --replicas, --clients and --minutes must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stop_on_signals()
    print("Soak (bench/soak.py)")
    print(
        f"python  {platform.python_implementation()} {platform.python_version()}, grpcio "
        f"{grpc.__version__}, aiohttp {aiohttp.__version__}"
    )
    print(f"cpu     {os.cpu_count()} cores, shared by everything below (and whatever else runs)")
    with tempfile.TemporaryDirectory(prefix="spades-bench-soak-") as tmp:
        log_dir = Path(args.log_dir) if args.log_dir else Path(tmp) / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        soak = Soak(Path(tmp), log_dir, args)
        try:
            soak.start()
            print(
                f"redis   {soak.redis.version} pid {soak.redis.pid} on 127.0.0.1:"
                f"{soak.redis.port}, persistence {soak.redis.persistence()}"
            )
            print(
                f"servers {args.replicas} replicas on it (prefix soak), ports "
                f"{', '.join(str(r.port) for r in soak.replicas)}, --unload-after-seconds "
                f"{args.unload_after_s:g}"
            )
            print(
                f"envoy   pid {soak.envoy.pid} ({soak.envoy.version()}) "
                f"on 127.0.0.1:{soak.envoy.port}, deploy/envoy/envoy.yaml rendered, one "
                f"endpoint per replica"
            )
            print(
                f"load    {args.matches} tables (bots in every {args.bot_every}th), "
                f"{args.clients} client processes, think {args.think_ms:g} ms (0.5-1.5x), "
                f"random drops every {args.drop_mean_s:g} s per viewer on average, kill -9 of a "
                f"replica every {args.kill_every_s:g} s, for {args.minutes:g} min"
            )
            print()
            soak.start_clients()
            soak.t0 = time.monotonic()
            samples = run(soak)
            print(f"  {soak.now():6.0f} s  stop: no new action; every viewer checked")
            finals = soak.stop_clients()
            print(f"  {soak.now():6.0f} s  checked")
            status = report(soak, samples, finals)
        finally:
            soak.procs.stop_all()
            if args.log_dir:
                shutil.copytree(Path(tmp) / "redis", log_dir / "redis", dirs_exist_ok=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"samples": samples, "finals": finals}, indent=1))
    return status


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
