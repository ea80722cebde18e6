"""What the benches' load clients and reports share: a gRPC channel as every
client opens it, the project's clients' retry backoff, a browser's calls
through Envoy (gRPC-Web and Connect over HTTP/1.1, framed by hand), and the
figures: nearest-rank percentiles, milliseconds, aligned tables.

Processes (servers, Redis, Envoy, the client processes themselves) are in
processes.py; CPU meters in cpu_usage.py.
"""

from __future__ import annotations

import random
import re
import time
from collections import Counter
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import grpc

if TYPE_CHECKING:  # an annotation only: the benches without a browser's calls skip its import
    import aiohttp

SERVICE = "/spades.v1.SpadesService/"
# A failed call is sent again as the project's clients do (spades_client.Backoff's
# defaults): the n-th retry in a row after a random 0.5 to 1 times min(5 s, 0.1 s x 2^n).
RETRY_INITIAL_S, RETRY_MAX_S, RETRY_JITTER = 0.1, 5.0, 0.5


def channel(address: str) -> grpc.aio.Channel:
    # A subchannel of its own and no retries: every call the bench makes is
    # one the server sees, on connections no other channel shares.
    return grpc.aio.insecure_channel(
        address,
        options=[("grpc.use_local_subchannel_pool", 1), ("grpc.enable_retries", 0)],
    )


def retry_delay(retry: int) -> float:
    """Seconds before retry number ``retry`` (from 0) of a failed call."""
    cap = min(RETRY_MAX_S, RETRY_INITIAL_S * 2 ** min(retry, 16))
    return cap * (1 - RETRY_JITTER * random.random())


def error_counts(errors: list[str]) -> list[tuple[str, int]]:
    """The errors, grouped by their text (sequence numbers and ids aside)."""
    kinds = Counter(re.sub(r"[0-9a-f]{16}|\d+", "N", e)[:160] for e in errors)
    return kinds.most_common(10)


# -- gRPC-Web and Connect framing ---------------------------------------------------------------


def envelope(message: bytes, flag: int = 0) -> bytes:
    """One frame of gRPC-Web or Connect: a flag byte, a 4-byte big-endian length."""
    return bytes([flag]) + len(message).to_bytes(4, "big") + message


def frames(buf: bytearray) -> list[tuple[int, bytes]]:
    """The complete frames at the start of ``buf`` (removed from it), as
    (flag, bytes); an incomplete frame stays for the next read."""
    out = []
    pos, n = 0, len(buf)
    while n - pos >= 5:
        size = int.from_bytes(buf[pos + 1 : pos + 5], "big")
        if n - pos - 5 < size:
            break
        out.append((buf[pos], bytes(buf[pos + 5 : pos + 5 + size])))
        pos += 5 + size
    del buf[:pos]
    return out


def grpc_web_trailers(data: bytes) -> dict[str, str]:
    """A gRPC-Web trailers frame (flag 0x80): HTTP/1-style header lines."""
    out = {}
    for line in data.decode(errors="replace").split("\r\n"):
        name, sep, value = line.partition(":")
        if sep:
            out[name.strip().lower()] = value.strip()
    return out


# -- browser-style server streams over HTTP/1.1 ---------------------------------------------------


class StreamError(Exception):
    pass


def web_headers(protocol: str, origin: str, token: str | None) -> dict[str, str]:
    """The headers of a browser's server-stream call: ``protocol`` "grpc-web"
    or "connect", the page's ``origin``, a seat token or none (a spectator)."""
    if protocol == "grpc-web":
        headers = {"content-type": "application/grpc-web+proto", "x-grpc-web": "1"}
    else:
        headers = {"content-type": "application/connect+proto", "connect-protocol-version": "1"}
    headers["origin"] = origin  # as a browser's fetch sends it
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    return headers


async def http_stream(
    session: aiohttp.ClientSession, url: str, request: bytes, headers: dict[str, str]
) -> AsyncIterator[tuple[float, bytes]]:
    """A gRPC-Web or Connect server stream (by ``headers``' content type): each
    message as (``time.monotonic()`` when the bytes completing it were read, its
    bytes); a StreamError when the stream ends (trailers, Connect's end of
    stream, EOF) or is refused. Close it with ``contextlib.aclosing``."""
    async with session.post(url, data=envelope(request), headers=headers) as resp:
        if resp.status != 200:
            raise StreamError(f"HTTP {resp.status}: {(await resp.read())[:200]!r}")
        if "grpc-status" in resp.headers:  # a gRPC-Web call refused at once
            raise StreamError(
                f"grpc-status {resp.headers['grpc-status']} {resp.headers.get('grpc-message', '')}"
            )
        buf = bytearray()
        clock = time.monotonic
        read = resp.content.readany
        while chunk := await read():
            now = clock()
            buf += chunk
            for flag, data in frames(buf):
                if flag == 0:
                    yield now, data
                elif flag & 0x80:  # gRPC-Web trailers
                    t = grpc_web_trailers(data)
                    raise StreamError(
                        f"trailers grpc-status {t.get('grpc-status')} {t.get('grpc-message', '')}"
                    )
                elif flag & 0x02:  # Connect: end of stream, JSON
                    raise StreamError(f"end of stream {data[:200]!r}")
        raise StreamError("the stream ended before its match")


# -- figures --------------------------------------------------------------------------------------


def pct(sorted_values: list[float], q: float) -> float:
    """The q-quantile (nearest rank) of an ascending list; NaN when empty."""
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def ms(seconds: float) -> float:
    return 1000.0 * seconds


def split(total: int, parts: int) -> list[int]:
    """``total`` in ``parts`` near-equal whole shares."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def print_grid(header: list[str], rows: list[list[str]], left: int = 1) -> None:
    """A table: the first ``left`` columns left-aligned, the others right-aligned."""
    w = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(r: list[str]) -> str:
        cells = [c.ljust(w[i]) if i < left else c.rjust(w[i]) for i, c in enumerate(r)]
        return "  ".join(cells).rstrip()

    print(line(header))
    print("-" * len(line(header)))
    for r in rows:
        print(line(r))


def print_table(rows: list[tuple[str, str, str, str]]) -> None:
    """Rows of (measure, value, target, ok), aligned."""
    w = [max(len(r[i]) for r in rows) for i in range(3)]
    header = f"{'measure':<{w[0]}}  {'value':>{w[1]}}  {'target':<{w[2]}}  ok"
    print(header)
    print("-" * len(header))
    for name, value, target, passed in rows:
        print(f"{name:<{w[0]}}  {value:>{w[1]}}  {target:<{w[2]}}  {passed}".rstrip())
