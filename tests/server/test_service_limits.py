"""Requests that are not what they should be, and calls that never send one:
each is answered with a status and google.rpc details, bounded in time and
memory, and other clients do not notice. Raw bytes go over real channels."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import grpc
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status
from server_harness import (
    OP,
    RPC_TIMEOUT,
    Deadline,
    Failure,
    PlayCall,
    Server,
    choose,
    create_match,
    expect_failure,
    failure_of,
    get_view,
    seat_md,
    wait_until,
)
from spades_server.gen.spades.v1 import spades_pb2 as pb

SERVICE = "/spades.v1.SpadesService/"
INVALID_UTF8 = b"\x0a\x02\xff\xfe"  # field 1 (a string in every request below): bad UTF-8
GARBAGE = b"\xff\xff"  # field 31 of wire type 7: no such wire type
TRUNCATED = b"\x10\xff"  # field 2 (varint) whose varint never ends
MALFORMED = (INVALID_UTF8, GARBAGE, TRUNCATED)
ROOT = Path(__file__).resolve().parents[2]


def _raw_channel(srv: Server) -> grpc.Channel:
    return grpc.insecure_channel(
        f"127.0.0.1:{srv.port}", options=[("grpc.use_local_subchannel_pool", 1)]
    )


def _log_since(srv: Server, offset: int) -> str:
    path = srv.workdir / f"server-{srv.starts}.log"
    with open(path, encoding="utf-8", errors="replace") as f:
        f.seek(offset)
        return f.read()


def _log_size(srv: Server) -> int:
    return (srv.workdir / f"server-{srv.starts}.log").stat().st_size


def aio_failure(err: grpc.aio.AioRpcError) -> Failure:
    """``failure_of`` for an error of a grpc.aio call."""
    out = Failure(err.code(), err.details() or "")
    status = rpc_status.from_call(err)  # type: ignore[arg-type]  # duck-typed: code, metadata
    for detail in status.details if status is not None else ():
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            out.reason = info.reason
    return out


def _stream_failure(call: Any) -> Failure:
    """Read a stream to its end; it must end with an error."""
    try:
        for _ in call:
            pass
    except grpc.RpcError as err:
        return failure_of(err)
    raise AssertionError("the stream ended with OK")


def test_malformed_requests_get_invalid_argument(shared_server: Server) -> None:
    srv = shared_server
    table = create_match(srv.stub, bots=(1, 2, 3), seed=71)
    token = seat_md(table.tokens[0])
    start = _log_size(srv)
    failures: list[tuple[str, bytes, Failure]] = []
    channel = _raw_channel(srv)
    try:
        # Unary methods, with and without credentials (parsing comes first).
        for method, md in (
            ("Ping", ()),
            ("GetView", token),
            ("SubmitAction", token),
            ("CreateMatch", OP),
        ):
            call = channel.unary_unary(SERVICE + method)
            for body in MALFORMED:
                if method == "Ping" and body == INVALID_UTF8:
                    continue  # PingRequest has no fields: an unknown field parses
                try:
                    call(body, metadata=md, timeout=RPC_TIMEOUT)
                except grpc.RpcError as err:
                    failures.append((method, body, failure_of(err)))
                else:
                    raise AssertionError(f"{method} accepted {body!r}")
        # Server-streaming methods.
        for method, md in (("StreamEvents", token), ("Spectate", ())):
            stream = channel.unary_stream(SERVICE + method)
            for body in MALFORMED:
                f = _stream_failure(stream(body, metadata=md, timeout=RPC_TIMEOUT))
                failures.append((method, body, f))
        # Play: a malformed first message, and a malformed action after a good open.
        play = channel.stream_stream(SERVICE + "Play")
        opening = pb.PlayRequest(open=pb.PlayOpen(match_id=table.match_id)).SerializeToString()
        for body in MALFORMED:
            f = _stream_failure(play(iter([body]), metadata=token, timeout=RPC_TIMEOUT))
            failures.append(("Play open", body, f))
            f = _stream_failure(play(iter([opening, body]), metadata=token, timeout=RPC_TIMEOUT))
            failures.append(("Play action", body, f))
    finally:
        channel.close()

    for method, body, f in failures:
        assert f.code == grpc.StatusCode.INVALID_ARGUMENT, (method, body, f)
        assert f.reason == "MALFORMED_REQUEST", (method, body, f)
        assert "class" not in f.message and "Unexpected" not in f.message, f
    # Each refusal is logged as one, without a traceback.
    wait_until(
        lambda: _log_since(srv, start).count('"MALFORMED_REQUEST"') >= len(failures),
        "the refusals in the server's log",
    )
    log = _log_since(srv, start)
    assert "Traceback" not in log and "Unexpected" not in log, log[-3000:]
    # The match is untouched and the server still serves it.
    assert get_view(srv.stub, table, 0).as_of_seq == table.summary.last_seq


def test_a_call_without_its_request_is_ended(make_server: Any) -> None:
    srv = make_server("--request-timeout-seconds", "0.5")
    table = create_match(srv.stub, bots=(1, 2, 3), seed=72)
    token = seat_md(table.tokens[0])
    channel = _raw_channel(srv)
    try:
        # Half-closed at once, with no request: answered at once.
        for method in ("Ping", "GetView", "SubmitAction"):
            d = Deadline(RPC_TIMEOUT)
            try:
                channel.stream_unary(SERVICE + method)(
                    iter([]), metadata=token, timeout=RPC_TIMEOUT
                )
            except grpc.RpcError as err:
                f = failure_of(err)
            else:
                raise AssertionError(f"{method} answered OK without a request")
            assert (f.code, f.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "REQUEST_EXPECTED"), f
            assert d.left() > RPC_TIMEOUT - 2, "not answered at once"
        stream = channel.stream_stream(SERVICE + "StreamEvents")
        f = _stream_failure(stream(iter([]), metadata=token, timeout=RPC_TIMEOUT))
        assert (f.code, f.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "REQUEST_EXPECTED"), f
    finally:
        channel.close()

    # Open, and never send: ended by the server after the request timeout.
    async def never_send() -> list[tuple[str, Failure, float]]:
        async with grpc.aio.insecure_channel(
            f"127.0.0.1:{srv.port}", options=[("grpc.use_local_subchannel_pool", 1)]
        ) as ch:
            t0 = time.monotonic()
            calls = {
                "Ping": ch.stream_unary(SERVICE + "Ping")(timeout=RPC_TIMEOUT),
                "StreamEvents": ch.stream_stream(SERVICE + "StreamEvents")(
                    metadata=token, timeout=RPC_TIMEOUT
                ),
                "Play": ch.stream_stream(SERVICE + "Play")(metadata=token, timeout=RPC_TIMEOUT),
            }

            async def ended(name: str, call: Any) -> tuple[str, Failure, float]:
                try:
                    await (call if name == "Ping" else call.read())
                except grpc.RpcError as err:
                    return name, aio_failure(err), time.monotonic() - t0
                raise AssertionError(f"{name} answered without a request")

            return await asyncio.gather(*(ended(n, c) for n, c in calls.items()))

    for name, f, after in asyncio.run(never_send()):
        reason = "OPEN_EXPECTED" if name == "Play" else "REQUEST_EXPECTED"
        assert (f.code, f.reason) == (grpc.StatusCode.INVALID_ARGUMENT, reason), (name, f)
        assert 0.4 < after < 3.0, (name, after)


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


class Pinger:
    """Pings on its own connection every few ms until stopped; keeps the latencies."""

    def __init__(self, srv: Server) -> None:
        self.channel = _raw_channel(srv)
        self.ping = self.channel.unary_unary(
            SERVICE + "Ping",
            request_serializer=pb.PingRequest.SerializeToString,
            response_deserializer=pb.PingResponse.FromString,
        )
        self.ping(pb.PingRequest(), timeout=RPC_TIMEOUT)
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        d = Deadline(120)
        while not self.stopped.is_set() and not d.expired():
            t0 = time.perf_counter()
            try:
                self.ping(pb.PingRequest(), timeout=RPC_TIMEOUT)
            except grpc.RpcError as err:
                self.errors.append(repr(err.code()))
            self.latencies.append(time.perf_counter() - t0)
            self.stopped.wait(0.005)

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(RPC_TIMEOUT + 5)
        self.channel.close()


# Opens N calls of GetView spread over C connections, never sends their
# requests, and prints how they ended as JSON; run as its own process so that
# its work does not slow the Pings measured in the test's.
_FLOOD = """
import asyncio, json, sys, time
from collections import Counter
import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

async def main(port, n, connections):
    channels = [
        grpc.aio.insecure_channel(
            f"127.0.0.1:{port}",
            options=[("grpc.use_local_subchannel_pool", 1), ("grpc.channel_id", i)],
        )
        for i in range(connections)
    ]
    await asyncio.wait_for(asyncio.gather(*(c.channel_ready() for c in channels)), 20)
    t0 = time.monotonic()
    method = "/spades.v1.SpadesService/GetView"
    calls = [channels[i % connections].stream_unary(method)(timeout=60) for i in range(n)]

    async def ended(call):
        try:
            await asyncio.wait_for(call, 30)
        except grpc.RpcError as err:
            reason = ""
            status = rpc_status.from_call(err)
            for d in status.details if status is not None else ():
                info = error_details_pb2.ErrorInfo()
                if d.Unpack(info):
                    reason = info.reason
            return f"{err.code().name} {reason}".strip(), time.monotonic() - t0
        except TimeoutError:
            call.cancel()
            return "NEVER", time.monotonic() - t0
        return "OK", time.monotonic() - t0

    results = await asyncio.gather(*(ended(c) for c in calls))
    codes = Counter(r for r, _ in results)
    print(json.dumps({"codes": codes, "last": max(t for _, t in results)}))
    await asyncio.gather(*(c.close() for c in channels))

asyncio.run(main(*map(int, sys.argv[1:])))
"""


def _ended_by_the_sweeper(log: str) -> int:
    """The calls the server's log counts as ended without their request."""
    total = 0
    for line in log.splitlines():
        if '"calls ended without their request"' in line:
            entry = json.loads(line)
            total += entry["timed_out"] + entry["ended_for_room"]
    return total


def test_calls_that_never_send_a_request_are_bounded(make_server: Any) -> None:
    """6,000 calls over 60 connections that never send their request: the
    server takes up as many as its event loop keeps pace with (gRPC cancels
    the rest past --max-pending-calls), holds at most --max-waiting-calls of
    them, ends the others after the request timeout a few at a time, and logs
    them as a count rather than a line each. Its memory stays bounded, and
    another client's Pings stay fast and never fail. (bench/hung_calls.py
    measures the same at 10,000 calls; before these bounds, this flood held
    Pings up for 250 to 310 ms and grew the server by 75 to 90 MB.)"""
    timeout_s = 1.0
    srv = make_server("--request-timeout-seconds", str(timeout_s))
    n, connections = 6000, 60
    log_start = _log_size(srv)
    rss_before = _rss_mb(srv.pid)
    peak = rss_before
    pinger = Pinger(srv)
    try:
        flood = subprocess.Popen(
            [sys.executable, "-c", _FLOOD, str(srv.port), str(n), str(connections)],
            stdout=subprocess.PIPE,
            text=True,
        )
        d = Deadline(60)
        while flood.poll() is None and not d.expired():
            peak = max(peak, _rss_mb(srv.pid))
            time.sleep(0.05)
        if flood.poll() is None:
            flood.kill()
        out, _ = flood.communicate(timeout=10)
    finally:
        pinger.stop()
    assert flood.returncode == 0, out
    summary = json.loads(out)
    codes, last = summary["codes"], summary["last"]
    # Ended by the server with its reason; or cancelled by gRPC before the
    # server took them up (past --max-pending-calls), or refused as streams
    # past --max-calls-per-connection (UNAVAILABLE).
    ended = codes.get("INVALID_ARGUMENT REQUEST_EXPECTED", 0)
    assert set(codes) <= {"INVALID_ARGUMENT REQUEST_EXPECTED", "CANCELLED", "UNAVAILABLE"}, codes
    assert ended >= 1000, codes
    assert last < 8 * timeout_s, f"the last call ended after {last:.1f} s"
    growth = peak - rss_before
    assert growth < 55, f"the server grew by {growth:.0f} MB"
    assert not pinger.errors, pinger.errors
    worst = max(pinger.latencies)
    assert worst < 0.2, f"Ping max {worst * 1000:.0f} ms"
    # One log line a second counts them; none has a line of its own.
    wait_until(
        lambda: _ended_by_the_sweeper(_log_since(srv, log_start)) == ended,
        "the ended calls counted in the server's log",
    )
    assert '"REQUEST_EXPECTED"' not in _log_since(srv, log_start)
    print(
        f"\n{n} calls ended by {last:.2f} s ({codes}); server RSS {rss_before:.0f} -> "
        f"peak {peak:.0f} MB; {len(pinger.latencies)} Pings, max {worst * 1000:.0f} ms"
    )
    assert srv.stub.Ping(pb.PingRequest(), timeout=RPC_TIMEOUT) == pb.PingResponse()


def test_past_max_waiting_calls_the_longest_waiting_call_is_ended(make_server: Any) -> None:
    """Past --max-waiting-calls calls that have not sent their request, a new
    call ends the one that has waited longest, at once, with REQUEST_EXPECTED;
    a call that sends its request at once is served all the same."""
    srv = make_server("--request-timeout-seconds", "30", "--max-waiting-calls", "3")

    async def flood() -> tuple[list[tuple[Failure, float]], int]:
        async with grpc.aio.insecure_channel(
            f"127.0.0.1:{srv.port}", options=[("grpc.use_local_subchannel_pool", 1)]
        ) as ch:
            await asyncio.wait_for(ch.channel_ready(), RPC_TIMEOUT)
            get_view = ch.stream_unary(SERVICE + "GetView")
            t0 = time.monotonic()
            ended: list[tuple[Failure, float]] = []
            calls = []
            for _ in range(5):
                calls.append(get_view(timeout=RPC_TIMEOUT))
                await asyncio.sleep(0.2)  # in order of arrival
            # Three wait; the first two were ended to make room, oldest first.
            for call in calls[:2]:
                try:
                    await asyncio.wait_for(call, RPC_TIMEOUT)
                except grpc.RpcError as err:
                    ended.append((aio_failure(err), time.monotonic() - t0))
            # A Ping sends its request: it is answered (and ends another waiting call).
            ping = ch.unary_unary(
                SERVICE + "Ping",
                request_serializer=pb.PingRequest.SerializeToString,
                response_deserializer=pb.PingResponse.FromString,
            )
            answered = 0
            for _ in range(3):
                assert await ping(pb.PingRequest(), timeout=RPC_TIMEOUT) == pb.PingResponse()
                answered += 1
            for call in calls[2:]:
                call.cancel()
            return ended, answered

    ended, answered = asyncio.run(flood())
    assert answered == 3
    assert len(ended) == 2
    for f, after in ended:
        assert (f.code, f.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "REQUEST_EXPECTED"), f
        assert "at most 3 calls" in f.message and "waited longest" in f.message, f
        assert after < 5, after  # at once, not after the 30 s timeout


def test_a_play_call_ended_to_make_room_says_so(make_server: Any) -> None:
    """A Play call that has not sent `open` is a waiting call like any other:
    past --max-waiting-calls the oldest ends with OPEN_EXPECTED, and its
    message says why (room, not the timeout)."""
    srv = make_server("--request-timeout-seconds", "30", "--max-waiting-calls", "1")

    async def two_calls() -> tuple[Failure, float]:
        async with grpc.aio.insecure_channel(
            f"127.0.0.1:{srv.port}", options=[("grpc.use_local_subchannel_pool", 1)]
        ) as ch:
            await asyncio.wait_for(ch.channel_ready(), RPC_TIMEOUT)
            play = ch.stream_stream(SERVICE + "Play")
            t0 = time.monotonic()
            first = play(timeout=RPC_TIMEOUT)
            await asyncio.sleep(0.2)
            second = play(timeout=RPC_TIMEOUT)
            try:
                await asyncio.wait_for(first.read(), RPC_TIMEOUT)
                raise AssertionError("the first call was not ended")
            except grpc.aio.AioRpcError as err:
                return aio_failure(err), time.monotonic() - t0
            finally:
                second.cancel()

    failure, after = asyncio.run(two_calls())
    assert (failure.code, failure.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "OPEN_EXPECTED")
    assert "at most 1 calls" in failure.message, failure
    assert "waited longest" in failure.message, failure
    assert after < 5, after


def test_a_quiet_play_call_outlives_every_idle_limit(make_server: Any) -> None:
    """The request timeout is for a call's first message only; the server's
    keepalive pings and connection idle limit leave a quiet Play call open."""
    srv = make_server(
        "--request-timeout-seconds",
        "0.3",
        "--connection-idle-seconds",
        "0.5",
        "--keepalive-seconds",
        "0.5",
        "--keepalive-timeout-seconds",
        "1",
    )
    table = create_match(srv.stub, bots=(1, 2, 3), seed=73)
    play = PlayCall(srv.stub, table, 0)
    try:
        play.wait_seq(1)
        wait_until(lambda: bool(get_view(srv.stub, table, 0).legal_actions), "seat 0's turn")
        before = play.last_seq
        time.sleep(2.5)  # quiet: no message either way
        assert not play.done, play.error
        view = get_view(srv.stub, table, 0)
        action_id = play.act(choose(view))
        result = play.result(action_id)
        assert not result.HasField("error"), result
        play.wait_seq(result.last_seq)
        assert play.last_seq > before
    finally:
        play.cancel()


def test_limits_are_flags_and_documented() -> None:
    flags = (
        "--request-timeout-seconds",
        "--max-calls",
        "--max-waiting-calls",
        "--max-pending-calls",
        "--max-calls-per-connection",
        "--connection-idle-seconds",
        "--connection-age-seconds",
        "--connection-age-grace-seconds",
        "--keepalive-seconds",
        "--keepalive-timeout-seconds",
        "--min-client-ping-seconds",
        "--max-message-bytes",
        "--streams-per-match",
        "--actions-per-second",
        "--max-matches",
        "--chat-per-hand",
        "--seat-changes-per-hand",
    )
    out = subprocess.run(
        [sys.executable, "-m", "spades_server.main", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=dict(os.environ, COLUMNS="200"),
    ).stdout
    api = (ROOT / "docs" / "api.md").read_text()
    limits = api[api.index("## Limits") :]
    limits = limits[: limits.index("\n## ", 1)]
    for flag in flags:
        assert flag in out, flag
        assert f"`{flag}`" in limits, f"{flag} is not in docs/api.md's Limits"
    for reason in ("MALFORMED_REQUEST", "REQUEST_EXPECTED", "TOO_MANY_CALLS"):
        assert reason in api[api.index("## Errors") :], reason


def test_calls_past_the_server_bound_are_refused(make_server: Any) -> None:
    srv = make_server("--max-calls", "3")
    table = create_match(srv.stub, bots=(1, 2, 3), seed=74)
    streams = [
        srv.stub.Spectate(pb.SpectateRequest(match_id=table.match_id), timeout=RPC_TIMEOUT)
        for _ in range(3)
    ]
    try:
        for s in streams:
            next(iter(s))  # open, and counted
        try:
            srv.stub.Ping(pb.PingRequest(), timeout=RPC_TIMEOUT)
        except grpc.RpcError as err:
            f = failure_of(err)
        else:
            raise AssertionError("a fourth call was admitted")
        assert (f.code, f.reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_CALLS"), f
    finally:
        streams[0].cancel()
    # A freed place is taken again.
    d = Deadline(RPC_TIMEOUT)
    while True:
        try:
            srv.stub.Ping(pb.PingRequest(), timeout=RPC_TIMEOUT)
            break
        except grpc.RpcError as err:
            assert failure_of(err).reason == "TOO_MANY_CALLS"
            d.check("the cancelled stream's place")
            time.sleep(0.02)
    for s in streams[1:]:
        s.cancel()


HEALTH = "/grpc.health.v1.Health/"
REFLECTION = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"


def test_the_standard_services_are_bounded_too(make_server: Any) -> None:
    """Health and reflection: malformed requests, missing requests and the
    server-wide bound on calls are answered as on the game's own service."""
    srv = make_server("--request-timeout-seconds", "0.5", "--max-calls", "2")
    channel = _raw_channel(srv)
    try:
        invalid = grpc.StatusCode.INVALID_ARGUMENT
        for body in (GARBAGE, TRUNCATED):
            check = channel.unary_unary(HEALTH + "Check")
            f = expect_failure(invalid, check, body, timeout=RPC_TIMEOUT)
            assert f.reason == "MALFORMED_REQUEST", f
            f = _stream_failure(channel.stream_stream(REFLECTION)(iter([body]), timeout=10))
            assert (f.code, f.reason) == (invalid, "MALFORMED_REQUEST"), f
        check_without = channel.stream_unary(HEALTH + "Check")
        f = expect_failure(invalid, check_without, iter([]), timeout=RPC_TIMEOUT)
        assert f.reason == "REQUEST_EXPECTED", f
    finally:
        channel.close()

    async def never_send() -> list[tuple[Failure, float]]:
        async with grpc.aio.insecure_channel(
            f"127.0.0.1:{srv.port}", options=[("grpc.use_local_subchannel_pool", 1)]
        ) as ch:
            t0 = time.monotonic()
            check = ch.stream_unary(HEALTH + "Check")(timeout=RPC_TIMEOUT)
            watch = ch.stream_stream(HEALTH + "Watch")(timeout=RPC_TIMEOUT)

            async def ended(wait: Any) -> tuple[Failure, float]:
                try:
                    await wait
                except grpc.RpcError as err:
                    return aio_failure(err), time.monotonic() - t0
                raise AssertionError("a health call answered without a request")

            return await asyncio.gather(ended(check), ended(watch.read()))

    for f, after in asyncio.run(never_send()):
        assert (f.code, f.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "REQUEST_EXPECTED"), f
        assert 0.4 < after < 3.0, after

    # Two health watches hold both places; a third call of any service waits its turn.
    channel = _raw_channel(srv)
    health = health_pb2_grpc.HealthStub(channel)
    watches = [
        health.Watch(health_pb2.HealthCheckRequest(service=""), timeout=RPC_TIMEOUT)
        for _ in range(2)
    ]
    try:
        for w in watches:
            assert next(iter(w)).status == health_pb2.HealthCheckResponse.SERVING
        for call, request in (
            (srv.stub.Ping, pb.PingRequest()),
            (health.Check, health_pb2.HealthCheckRequest()),
        ):
            f = expect_failure(
                grpc.StatusCode.RESOURCE_EXHAUSTED, call, request, timeout=RPC_TIMEOUT
            )
            assert f.reason == "TOO_MANY_CALLS", f
    finally:
        for w in watches:
            w.cancel()
        channel.close()
