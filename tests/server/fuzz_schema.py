"""What test_fuzz_schema.py sends: requests generated from the proto descriptors,
bytes that are not the request's message, and raw HTTP/2 connections.

Nothing here names a request type or a field of spades.v1: the strategies walk
``FieldDescriptor``s, so an RPC or a field added to the proto is fuzzed the day
it is added. The only names used are the few the valid-but-wrong requests of
the test substitute into (``match_id``, ``expected_seq``, ...), looked up by
name wherever they occur.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from hypothesis import strategies as st

# How deep nested messages go; a recursive message type (none of spades.v1's
# requests is one today) stops here with the field unset.
MAX_DEPTH = 4
MAX_REPEATED = 5
# A string over the server's --max-message-bytes (the test runs it with a low
# limit): grpc core refuses it before the service sees it.
HUGE = 300_000

_F = FieldDescriptor
_INT_RANGES = {
    _F.TYPE_INT32: (-(2**31), 2**31 - 1),
    _F.TYPE_SINT32: (-(2**31), 2**31 - 1),
    _F.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    _F.TYPE_INT64: (-(2**63), 2**63 - 1),
    _F.TYPE_SINT64: (-(2**63), 2**63 - 1),
    _F.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    _F.TYPE_UINT32: (0, 2**32 - 1),
    _F.TYPE_FIXED32: (0, 2**32 - 1),
    _F.TYPE_UINT64: (0, 2**64 - 1),
    _F.TYPE_FIXED64: (0, 2**64 - 1),
}

# Strings that have broken servers: empty, blank, NUL, just over the limits
# this server documents (64, 200, 256 characters), astral and combining
# characters, right-to-left marks, and one over the message size limit.
EDGE_STRINGS = (
    "",
    " ",
    "\x00",
    "a\x00b",
    "\t\n\r",
    "." * 3,
    "x" * 64,
    "x" * 65,
    "é" * 65,
    "x" * 200,
    "x" * 201,
    "x" * 257,
    "🂡" * 70,
    "e\u0301" * 40,
    "\u202e\u200b\ufeff",
    "%s%n{0}",
    "../../etc/passwd",
    "' OR 1=1 --",
    "classic",
    "x" * 5000,
)


def _int_strategy(lo: int, hi: int) -> st.SearchStrategy[int]:
    edges = sorted(
        {v for v in (0, 1, -1, 2, 13, 14, 64, 255, 256, lo, hi, lo + 1, hi - 1) if lo <= v <= hi}
    )
    return st.one_of(st.sampled_from(edges), st.integers(lo, hi))


def _scalar(field: FieldDescriptor) -> st.SearchStrategy[Any]:
    t = field.type
    if t in _INT_RANGES:
        return _int_strategy(*_INT_RANGES[t])
    if t == _F.TYPE_BOOL:
        return st.booleans()
    if t == _F.TYPE_FLOAT:
        return st.floats(width=32)
    if t == _F.TYPE_DOUBLE:
        return st.floats()
    if t == _F.TYPE_STRING:
        return st.one_of(st.sampled_from((*EDGE_STRINGS, "y" * HUGE)), st.text(max_size=40))
    if t == _F.TYPE_BYTES:
        return st.one_of(
            st.binary(max_size=64),
            st.sampled_from((b"", b"\x00" * 1000, b"\xff" * 17, b"{}", b"[]")),
        )
    if t == _F.TYPE_ENUM:
        known = sorted(v.number for v in field.enum_type.values)
        # proto3 enums are open: any int32 goes on the wire, known or not.
        return st.one_of(st.sampled_from(known), _int_strategy(-(2**31), 2**31 - 1))
    raise TypeError(f"{field.full_name}: no strategy for field type {t}")


def _is_map(field: FieldDescriptor) -> bool:
    return (
        field.type == _F.TYPE_MESSAGE
        and field.message_type is not None
        and field.message_type.GetOptions().map_entry
    )


def _is_repeated(field: FieldDescriptor) -> bool:
    return bool(field.is_repeated)


_ABSENT = object()
_cache: dict[tuple[str, int], st.SearchStrategy[Any]] = {}


def message_strategy(desc: Descriptor, depth: int = 0) -> st.SearchStrategy[Any]:
    """Messages of type ``desc``: each field set or not, each oneof with at most
    one member, enums with unknown numbers, edge values of every scalar type,
    nested messages down to ``MAX_DEPTH``."""
    key = (desc.full_name, depth)
    if key not in _cache:
        _cache[key] = _build(desc, depth)
    return _cache[key]


def _value(field: FieldDescriptor, depth: int) -> st.SearchStrategy[Any] | None:
    """Values of one (non-repeated) field; None if the depth bound leaves it unset."""
    if field.type in (_F.TYPE_MESSAGE, _F.TYPE_GROUP):
        if depth + 1 >= MAX_DEPTH:
            return None
        return message_strategy(field.message_type, depth + 1)
    return _scalar(field)


def _build(desc: Descriptor, depth: int) -> st.SearchStrategy[Any]:
    cls = message_factory.GetMessageClass(desc)
    parts: dict[str, st.SearchStrategy[Any]] = {}
    # Real oneofs: one member at most. proto3 `optional` fields sit in a
    # synthetic oneof of one, which is just "set or not".
    in_oneof: set[str] = set()
    for oneof in desc.oneofs:
        members = list(oneof.fields)
        if len(members) == 1 and oneof.name.startswith("_"):
            continue
        in_oneof.update(f.name for f in members)
        options: list[st.SearchStrategy[Any]] = [st.just(_ABSENT)]
        for f in members:
            v = _value(f, depth)
            if v is not None:
                options.append(st.tuples(st.just(f.name), v))
        parts[f"oneof:{oneof.name}"] = st.one_of(options)
    for f in desc.fields:
        if f.name in in_oneof:
            continue
        if _is_map(f):
            if depth + 1 >= MAX_DEPTH:
                continue
            kf, vf = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
            kv, vv = _value(kf, depth), _value(vf, depth)
            if kv is None or vv is None:
                continue
            parts[f.name] = st.one_of(
                st.just(_ABSENT), st.dictionaries(kv, vv, max_size=MAX_REPEATED)
            )
            continue
        v = _value(f, depth)
        if v is None:
            continue
        if _is_repeated(f):
            parts[f.name] = st.one_of(st.just(_ABSENT), st.lists(v, max_size=MAX_REPEATED))
        else:
            parts[f.name] = st.one_of(st.just(_ABSENT), v)

    def make(values: dict[str, Any]) -> Any:
        msg = cls()
        for name, value in values.items():
            if value is _ABSENT:
                continue
            field_name, field_value = value if name.startswith("oneof:") else (name, value)
            _assign(msg, desc.fields_by_name[field_name], field_value)
        return msg

    return st.fixed_dictionaries(parts).map(make)


def _assign(msg: Any, field: FieldDescriptor, value: Any) -> None:
    if _is_map(field):
        target = getattr(msg, field.name)
        for k, v in value.items():
            if field.message_type.fields_by_name["value"].type == _F.TYPE_MESSAGE:
                target[k].CopyFrom(v)
            else:
                target[k] = v
    elif _is_repeated(field):
        target = getattr(msg, field.name)
        if field.type == _F.TYPE_MESSAGE:
            for v in value:
                target.add().CopyFrom(v)
        else:
            target.extend(value)
    elif field.type == _F.TYPE_MESSAGE:
        getattr(msg, field.name).CopyFrom(value)
        getattr(msg, field.name).SetInParent()  # an empty message is still "set"
    else:
        setattr(msg, field.name, value)


def fields_named(msg: Any, name: str) -> Iterator[tuple[Any, FieldDescriptor]]:
    """Every (message, field) inside ``msg`` whose field is called ``name``,
    set or not, in the messages that are set (and ``msg`` itself)."""
    desc = msg.DESCRIPTOR
    if name in desc.fields_by_name:
        yield msg, desc.fields_by_name[name]
    for f, value in msg.ListFields():
        if f.type != _F.TYPE_MESSAGE or _is_map(f):
            continue
        for item in value if _is_repeated(f) else [value]:
            yield from fields_named(item, name)


def type_has_field(desc: Descriptor, name: str, seen: frozenset[str] = frozenset()) -> bool:
    """Whether a message of type ``desc`` may hold a field ``name`` at any depth."""
    if desc.full_name in seen:
        return False
    if name in desc.fields_by_name:
        return True
    seen = seen | {desc.full_name}
    return any(
        type_has_field(f.message_type, name, seen) for f in desc.fields if f.type == _F.TYPE_MESSAGE
    )


# -- every field at its edges, one request each -------------------------------------------

SWEEP_STRINGS = ("", "\x00", "a\x00b", " ", "x" * 65, "é" * 65, "x" * 257, "🂡" * 70, "x" * 5000)


def edge_values(field: FieldDescriptor) -> list[Any]:
    """A few values of ``field``'s type at the edges: the sweep's, fewer than
    the strategies' (every one is sent with each credential)."""
    t = field.type
    if t in _INT_RANGES:
        lo, hi = _INT_RANGES[t]
        return sorted({v for v in (0, 1, -1, 13, 14, 2**31 - 1, lo, hi) if lo <= v <= hi})
    if t == _F.TYPE_BOOL:
        return [True]
    if t in (_F.TYPE_FLOAT, _F.TYPE_DOUBLE):
        return [float("nan"), float("inf"), -0.0, 1e300 if t == _F.TYPE_DOUBLE else 3e38]
    if t == _F.TYPE_STRING:
        return [*SWEEP_STRINGS, "y" * HUGE]
    if t == _F.TYPE_BYTES:
        return [b"", b"\x00" * 100, b"\xff" * 17]
    if t == _F.TYPE_ENUM:
        known = [v.number for v in field.enum_type.values]
        return [*known, max(known) + 1, -1, 2**31 - 1]
    raise TypeError(f"{field.full_name}: no edge values for field type {t}")


def field_paths(
    desc: Descriptor, prefix: tuple[FieldDescriptor, ...] = (), seen: frozenset[str] = frozenset()
) -> Iterator[tuple[FieldDescriptor, ...]]:
    """Every path from ``desc`` to a scalar field (a message field that would
    recurse, or is past MAX_DEPTH, ends the path as an empty message)."""
    for f in desc.fields:
        path = (*prefix, f)
        if (
            f.type != _F.TYPE_MESSAGE
            or _is_map(f)
            or f.message_type.full_name in seen
            or len(path) >= MAX_DEPTH
        ):
            yield path
        else:
            yield from field_paths(f.message_type, path, seen | {desc.full_name})


def with_value(msg: Any, path: Sequence[FieldDescriptor], value: Any) -> None:
    """Set the field at ``path`` in ``msg`` (a repeated field gets one element;
    a message at the end of a path is set empty)."""
    for f in path[:-1]:
        msg = getattr(msg, f.name).add() if _is_repeated(f) else getattr(msg, f.name)
    last = path[-1]
    if last.type == _F.TYPE_MESSAGE:
        target = getattr(msg, last.name)
        if _is_repeated(last) and not _is_map(last):
            target.add()
        elif not _is_map(last):
            target.SetInParent()
    elif _is_repeated(last):
        getattr(msg, last.name).append(value)
    else:
        setattr(msg, last.name, value)


def sweep_values(path: Sequence[FieldDescriptor]) -> list[Any]:
    last = path[-1]
    return [None] if last.type == _F.TYPE_MESSAGE else edge_values(last)


# -- bytes that are not the request's message ---------------------------------------------


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _tag(number: int, wire_type: int) -> bytes:
    return _varint(number << 3 | wire_type)


def malformed_payloads(desc: Descriptor, valid: bytes) -> list[tuple[str, bytes]]:
    """Bytes that no parser of ``desc`` accepts, each labelled: protobuf's wire
    format broken in the ways a parser must notice (a truncated field, a length
    past the end, a varint over ten bytes, a group never closed or closed
    unopened, a field number 0, the reserved wire types), and, for each string
    field of ``desc``, that field holding bytes that are not UTF-8. ``valid``
    is a serialized message of the type, cut short for the truncation cases."""
    out = [
        ("length past the end", _tag(1, 2) + _varint(1000) + b"abc"),
        ("varint of 11 bytes", _tag(1, 0) + b"\xff" * 10 + b"\x01"),
        ("a tag cut short", b"\x80"),
        ("field number 0", _tag(0, 0) + b"\x01"),
        ("wire type 6", bytes([1 << 3 | 6]) + b"\x00"),
        ("wire type 7", bytes([1 << 3 | 7]) + b"\x00"),
        ("end group without a start", _tag(1, 4)),
        ("start group never ended", _tag(1, 3) + _tag(2, 0) + b"\x01"),
        ("fixed64 cut short", _tag(1, 1) + b"\x01\x02"),
        ("fixed32 cut short", _tag(1, 5) + b"\x01"),
        ("a gigabyte length", _tag(1, 2) + _varint(1 << 30)),
        ("not protobuf (JSON)", b'{"match_id": "x"}'),
    ]
    if len(valid) > 1:
        out.append(("a valid message cut short", valid[:-1]))
    for f in desc.fields:
        if f.type == _F.TYPE_STRING:
            out.append((f"{f.name}: not UTF-8", _tag(f.number, 2) + _varint(3) + b"\xff\xfe\xc0"))
            out.append((f"{f.name}: a lone surrogate", _tag(f.number, 2) + b"\x03\xed\xa0\x80"))
        elif f.type == _F.TYPE_MESSAGE and not _is_map(f):
            # A nested message whose own bytes are broken.
            inner = _tag(1, 2) + _varint(50) + b"x"
            out.append(
                (
                    f"{f.name}: a broken nested message",
                    _tag(f.number, 2) + _varint(len(inner)) + inner,
                )
            )
    return out


# -- raw HTTP/2 ---------------------------------------------------------------------------

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
(
    DATA,
    HEADERS,
    PRIORITY,
    RST_STREAM,
    SETTINGS,
    PUSH_PROMISE,
    PING,
    GOAWAY,
    WINDOW_UPDATE,
    CONTINUATION,
) = range(10)
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY_FLAG = 0x1, 0x1, 0x4, 0x8, 0x20


def frame(
    kind: int, flags: int, stream: int, payload: bytes, *, length: int | None = None
) -> bytes:
    """One HTTP/2 frame; ``length`` overrides the header's length (to lie about it)."""
    n = len(payload) if length is None else length
    return struct.pack(">I", n)[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def _hpack_literal(name: str, value: str) -> bytes:
    """A header as "literal without indexing, new name" (RFC 7541 6.2.2), no Huffman."""

    def s(text: str) -> bytes:
        raw = text.encode()
        assert len(raw) < 127
        return bytes([len(raw)]) + raw

    return b"\x00" + s(name) + s(value)


def grpc_headers(path: str, *extra: tuple[str, str]) -> bytes:
    pairs = [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", path),
        (":authority", "127.0.0.1"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
        *extra,
    ]
    return b"".join(_hpack_literal(n, v) for n, v in pairs)


def grpc_message(payload: bytes, *, compressed: bool = False, length: int | None = None) -> bytes:
    """A gRPC length-prefixed message; ``length`` may lie."""
    n = len(payload) if length is None else length
    return bytes([1 if compressed else 0]) + struct.pack(">I", n) + payload


def raw_connections(ping_path: str) -> list[tuple[str, bytes]]:
    """Byte streams to write on a fresh TCP connection to the server, each
    broken in a way a server must survive (and one well-formed call, the control
    that the others reach gRPC's framing at all)."""
    settings = frame(SETTINGS, 0, 0, b"")
    ok_headers = grpc_headers(ping_path)
    good = (
        PREFACE
        + settings
        + frame(HEADERS, END_HEADERS, 1, ok_headers)
        + frame(DATA, END_STREAM, 1, grpc_message(b""))
    )
    start = PREFACE + settings
    return [
        ("a well-formed Ping (control)", good),
        ("not HTTP/2 at all", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("random bytes", bytes(range(256)) * 4),
        ("a preface cut short", PREFACE[:10]),
        ("a preface then nothing", PREFACE),
        ("a bad preface", b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n" + settings),
        ("SETTINGS of length 5", PREFACE + frame(SETTINGS, 0, 0, b"\x00" * 5)),
        ("SETTINGS on a stream", PREFACE + frame(SETTINGS, 0, 1, b"")),
        (
            "SETTINGS with a huge window",
            PREFACE + frame(SETTINGS, 0, 0, struct.pack(">HI", 4, 2**31)),
        ),
        (
            "SETTINGS with a tiny frame size",
            PREFACE + frame(SETTINGS, 0, 0, struct.pack(">HI", 5, 1)),
        ),
        ("a frame header claiming 16 MiB", start + frame(DATA, 0, 1, b"xx", length=0xFFFFFF)),
        ("a frame cut short", start + frame(HEADERS, END_HEADERS, 1, ok_headers)[:-5]),
        (
            "HEADERS of junk HPACK",
            start + frame(HEADERS, END_HEADERS, 1, b"\xff\xff\xff\xff\x7f" * 8),
        ),
        ("HEADERS indexing past the table", start + frame(HEADERS, END_HEADERS, 1, b"\xfe\x7f")),
        ("HEADERS on stream 0", start + frame(HEADERS, END_HEADERS, 0, ok_headers)),
        ("HEADERS on an even stream", start + frame(HEADERS, END_HEADERS, 2, ok_headers)),
        (
            "HEADERS padded past its length",
            start + frame(HEADERS, END_HEADERS | PADDED, 1, b"\xf0" + ok_headers),
        ),
        (
            "HEADERS depending on itself",
            start
            + frame(
                HEADERS, END_HEADERS | PRIORITY_FLAG, 1, struct.pack(">IB", 1, 15) + ok_headers
            ),
        ),
        (
            "HEADERS without END_HEADERS, then DATA",
            start + frame(HEADERS, 0, 1, ok_headers) + frame(DATA, 0, 1, b"x"),
        ),
        ("CONTINUATION alone", start + frame(CONTINUATION, END_HEADERS, 1, ok_headers)),
        ("DATA on an idle stream", start + frame(DATA, END_STREAM, 7, grpc_message(b""))),
        (
            "PUSH_PROMISE from a client",
            start + frame(PUSH_PROMISE, END_HEADERS, 1, b"\x00\x00\x00\x02" + ok_headers),
        ),
        ("WINDOW_UPDATE of 0", start + frame(WINDOW_UPDATE, 0, 0, b"\x00\x00\x00\x00")),
        ("WINDOW_UPDATE overflowing", start + frame(WINDOW_UPDATE, 0, 0, b"\x7f\xff\xff\xff") * 3),
        ("PING of 7 bytes", start + frame(PING, 0, 0, b"\x00" * 7)),
        ("RST_STREAM on stream 0", start + frame(RST_STREAM, 0, 0, b"\x00\x00\x00\x01")),
        ("GOAWAY of garbage", start + frame(GOAWAY, 0, 0, b"\x01")),
        ("an unknown frame type", start + frame(0xEE, 0xFF, 1, b"hello")),
        (
            "a path that is no method",
            start
            + frame(HEADERS, END_HEADERS, 1, grpc_headers("/no.Such/Method"))
            + frame(DATA, END_STREAM, 1, grpc_message(b"")),
        ),
        (
            "a gRPC length past the data",
            start
            + frame(HEADERS, END_HEADERS, 1, ok_headers)
            + frame(DATA, END_STREAM, 1, grpc_message(b"", length=1000)),
        ),
        (
            "a gRPC message flagged compressed",
            start
            + frame(HEADERS, END_HEADERS, 1, ok_headers)
            + frame(DATA, END_STREAM, 1, grpc_message(b"\x01\x02", compressed=True)),
        ),
        (
            "an unknown grpc-encoding",
            start
            + frame(HEADERS, END_HEADERS, 1, grpc_headers(ping_path, ("grpc-encoding", "zzz")))
            + frame(DATA, END_STREAM, 1, grpc_message(b"", compressed=True)),
        ),
        (
            "a grpc-timeout of nonsense",
            start
            + frame(
                HEADERS, END_HEADERS, 1, grpc_headers(ping_path, ("grpc-timeout", "99999999999n?"))
            )
            + frame(DATA, END_STREAM, 1, grpc_message(b"")),
        ),
        (
            "a content-type not gRPC",
            start
            + frame(
                HEADERS,
                END_HEADERS,
                1,
                ok_headers.replace(b"application/grpc", b"text/html\x00\x00\x00\x00\x00\x00\x00"),
            )
            + frame(DATA, END_STREAM, 1, grpc_message(b"")),
        ),
        (
            "1000 streams opened and reset",
            start
            + b"".join(
                frame(HEADERS, END_HEADERS, 2 * i + 1, ok_headers)
                + frame(RST_STREAM, 0, 2 * i + 1, b"\x00\x00\x00\x08")
                for i in range(1000)
            ),
        ),
    ]


def frames_in(data: bytes) -> list[tuple[int, int, int]]:
    """(type, flags, stream) of each whole frame in ``data``, a server's bytes
    after the connection preface (its first frame is SETTINGS)."""
    out = []
    i = 0
    while i + 9 <= len(data):
        n = int.from_bytes(data[i : i + 3], "big")
        kind, flags = data[i + 3], data[i + 4]
        stream = int.from_bytes(data[i + 5 : i + 9], "big") & 0x7FFFFFFF
        if i + 9 + n > len(data):
            break
        out.append((kind, flags, stream))
        i += 9 + n
    return out


def send_raw(
    port: int,
    data: bytes,
    *,
    read_for: float = 1.0,
    enough: Callable[[bytes], bool] | None = None,
) -> bytes:
    """Write ``data`` on a new loopback connection, then read what the server
    answers until it closes the connection, ``enough(answer)`` holds, or
    ``read_for`` seconds pass."""
    got = bytearray()
    with socket.create_connection(("127.0.0.1", port), timeout=5.0) as sock:
        try:
            sock.sendall(data)
        except OSError:
            return bytes(got)  # the server closed the connection mid-write: fine
        end = time.monotonic() + read_for
        while (left := end - time.monotonic()) > 0:
            sock.settimeout(left)
            try:
                chunk = sock.recv(65536)
            except (TimeoutError, OSError):
                break
            if not chunk:
                break
            got += chunk
            if enough is not None and enough(bytes(got)):
                break
    return bytes(got)
