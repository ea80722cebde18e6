"""The web table's own server: its static files and the one call a page cannot make.

A browser page must never hold the operator credential, yet starting a match
(``CreateMatch``) needs it. This server holds it instead and offers the page,
on the page's own origin, exactly one operator action in a narrow form:

* ``POST /api/new-match`` with a JSON body (preset, players, bot levels, a few
  variants, an optional seed) creates a match with **one** human seat (seat 0)
  and bots in every other seat, and answers ``{"matchId", "seat", "token"}``:
  the human seat's token only. Nothing else about the operator leaks; a
  caller can make nothing but bot matches, at a bounded rate.
* ``POST /api/guest`` (**development only**: ``make run``'s stand-in for a
  game's identity provider) with a JSON body ``{"name": optional, at most 32
  characters}`` answers ``{"credential", "playerId", "name", "expiresAtMs"}``:
  a player credential for a new guest, ``guest-<random hex>``, an EdDSA JWT
  (``iss`` spades-guest, ``aud`` spades, ``sub``, ``name``, ``iat``, ``nbf``,
  ``exp``) valid 30 minutes, signed with the private key whose file
  ``SPADES_GUEST_KEY`` names; the server checks it with the public key
  (``--player-public-key``, docs/security.md, "Player credentials"). Anyone
  who reaches the page gets one, so such credentials prove nothing about who
  plays: never give a production server the guest key. Rate limited like a
  new match; without the variable it answers 501.
* ``GET /api/match/<id>`` answers the match's public summary (``GetMatch``:
  seats, names, rules, scores; no card), so that a spectator's page can name
  the seats. ``Spectate`` itself needs no credential and goes through Envoy.
* Everything else is a static file of ``--dir`` (the Vite build,
  ``clients/web/dist``), served as the launcher's file server serves it
  (``spades_server.stack``), without directory listings.

Refusals are JSON, ``{"error": {"title", "message", "reason", "code",
"rule"}}``: the server's ``ErrorInfo`` reason and rule when ``CreateMatch``
refused (``INVALID_RULESET`` for variants that cannot be played together).

A POST must be ``application/json`` (a cross-origin page cannot send that
without a CORS preflight, which this server never grants) and, when the
browser says where it comes from (``Origin``), come from this host.

``make run`` (``python -m spades_server.stack``) starts it as the stack's
file server, behind Envoy, which routes ``/spades.v1.SpadesService/*`` to the
gRPC server and the rest here; it calls the service through Envoy's listener
(native gRPC). By hand: ``SPADES_OPERATOR_TOKEN=... python -m
spades_server.webapp --dir clients/web/dist --target 127.0.0.1:50051``. The
token comes only from the environment, so it never shows in ``ps``; without
it the API answers 501 and the files are still served (``/api/guest`` needs
only ``SPADES_GUEST_KEY``). SIGTERM or SIGINT stops it with status 0.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import grpc
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed448, ed25519
from google.protobuf import json_format
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from .gen.spades.v1 import spades_pb2 as pb
from .gen.spades.v1 import spades_pb2_grpc as pb_grpc
from .players import GUEST_AUDIENCE, GUEST_ISSUER, clean_name
from .stack import WEB_DIST, WebTableHandler

PRESETS = ("classic", "polish", "german", "bulgarian")
BOT_LEVELS = frozenset(
    (
        pb.BOT_LEVEL_RANDOM,
        pb.BOT_LEVEL_EASY,
        pb.BOT_LEVEL_NORMAL,
        pb.BOT_LEVEL_HARD,
        pb.BOT_LEVEL_EXPERT,
    )
)
# The bots' names by the number of players, clockwise from the seat left of the player.
BOT_NAMES = {
    2: ("North",),
    3: ("West", "East"),
    4: ("West", "North", "East"),
    5: ("West", "Northwest", "Northeast", "East"),
}
FIELDS = frozenset(
    (
        "name",
        "preset",
        "players",
        "botLevels",
        "botNames",
        "targetScore",
        "blindNil",
        "auctionTrump",
        "suicide",
        "deucesHigh",
        "jokers",
        "seed",
    )
)
MAX_BODY = 4096
GUEST_LIFETIME_S = 30 * 60
MAX_GUEST_NAME = 32
GUEST_KEY_ENV = "SPADES_GUEST_KEY"
# How long after its expiry a guest credential may still be renewed for the same player.
RENEW_GRACE_S = 7 * 24 * 3600
MATCH_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
UINT64_MAX = 2**64 - 1

# gRPC codes as HTTP statuses for the page. The operator credential refused
# (UNAUTHENTICATED, PERMISSION_DENIED) is this server's misconfiguration: 502.
HTTP_OF = {
    grpc.StatusCode.INVALID_ARGUMENT: HTTPStatus.BAD_REQUEST,
    grpc.StatusCode.FAILED_PRECONDITION: HTTPStatus.CONFLICT,
    grpc.StatusCode.NOT_FOUND: HTTPStatus.NOT_FOUND,
    grpc.StatusCode.RESOURCE_EXHAUSTED: HTTPStatus.TOO_MANY_REQUESTS,
    grpc.StatusCode.UNAVAILABLE: HTTPStatus.SERVICE_UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED: HTTPStatus.GATEWAY_TIMEOUT,
    grpc.StatusCode.UNAUTHENTICATED: HTTPStatus.BAD_GATEWAY,
    grpc.StatusCode.PERMISSION_DENIED: HTTPStatus.BAD_GATEWAY,
}


class ApiError(Exception):
    """A refusal for the page: an HTTP status and the JSON error it reads."""

    def __init__(
        self,
        status: HTTPStatus,
        message: str,
        *,
        title: str = "Not accepted",
        reason: str = "",
        code: str = "",
        rule: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body: dict[str, Any] = {
            "error": {"title": title, "message": message, "reason": reason, "code": code}
        }
        if rule:
            self.body["error"]["rule"] = rule


def _bad(field: str, what: str) -> ApiError:
    return ApiError(
        HTTPStatus.BAD_REQUEST,
        f"{field}: {what}",
        reason="INVALID_ARGUMENT",
        code="INVALID_ARGUMENT",
    )


def _bool(body: dict[str, Any], key: str) -> bool:
    value = body.get(key, False)
    if type(value) is not bool:
        raise _bad(key, "must be true or false")
    return value


def _int(body: dict[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = body.get(key, default)
    if type(value) is not int or not low <= value <= high:
        raise _bad(key, f"must be a whole number from {low} to {high}")
    return value


MAX_BOT_NAME = 32


def _bot_names(body: dict[str, Any], players: int) -> tuple[str, ...]:
    """The bots' names: the page's (in its reader's language), or the English compass points."""
    names = body.get("botNames")
    if names is None:
        return BOT_NAMES[players]
    if (
        not isinstance(names, list)
        or len(names) != players - 1
        or any(not isinstance(n, str) or not 1 <= len(n.strip()) <= MAX_BOT_NAME for n in names)
    ):
        raise _bad("botNames", f"must be {players - 1} names of 1 to {MAX_BOT_NAME} characters")
    return tuple(n.strip() for n in names)


def create_request(body: object) -> pb.CreateMatchRequest:
    """The CreateMatch request a page's JSON asks for: seat 0 human, bots elsewhere.

    Raises ApiError for anything but the fields of FIELDS with their types and
    ranges; whether the rules go together is the server's to say.
    """
    if not isinstance(body, dict):
        raise _bad("body", "must be a JSON object")
    unknown = sorted(set(body) - FIELDS)
    if unknown:
        raise _bad(unknown[0], "is not a field of a new match")
    name = body.get("name", "Player")
    if not isinstance(name, str) or not 1 <= len(name.strip()) <= 64:
        raise _bad("name", "must be 1 to 64 characters")
    preset = body.get("preset", "classic")
    if preset not in PRESETS:
        raise _bad("preset", f"must be one of {', '.join(PRESETS)}")
    players = _int(body, "players", 4, 2, 5)
    levels = body.get("botLevels", [pb.BOT_LEVEL_NORMAL] * (players - 1))
    if (
        not isinstance(levels, list)
        or len(levels) != players - 1
        or any(type(x) is not int or x not in BOT_LEVELS for x in levels)
    ):
        raise _bad("botLevels", f"must be {players - 1} bot levels from 1 (random) to 5 (expert)")
    names = _bot_names(body, players)
    ruleset = pb.Ruleset(preset=preset)
    if players != 4:
        ruleset.players = players
    if "targetScore" in body:
        ruleset.target_score = _int(body, "targetScore", 500, 1, 100_000)
    if _bool(body, "blindNil"):
        # Blind nil from the first hand: nobody trails by 100 points at 0 to 0.
        ruleset.blind_nil = True
        ruleset.blind_nil_deficit = 0
    if _bool(body, "auctionTrump"):
        ruleset.auction_trump = True
    if _bool(body, "suicide"):
        ruleset.suicide = True
    if _bool(body, "deucesHigh"):
        ruleset.deuces_high = True
        ruleset.jokers = True  # deuces high needs the jokers
    if _bool(body, "jokers"):
        ruleset.jokers = True
    request = pb.CreateMatchRequest(ruleset=ruleset)
    request.seats.append(pb.SeatConfig(name=name.strip()))
    for bot_name, level in zip(names, levels, strict=True):
        request.seats.append(pb.SeatConfig(name=bot_name, bot=True, bot_level=level))
    seed = body.get("seed")
    if seed is not None:
        if (
            not isinstance(seed, str)
            or not re.fullmatch(r"\d{1,20}", seed)
            or int(seed) > UINT64_MAX
        ):
            raise _bad("seed", f"must be a whole number from 0 to {UINT64_MAX}, as a string")
        request.seed = int(seed)
        request.has_seed = True
    return request


def _refusal(err: grpc.RpcError) -> ApiError:
    """A gRPC refusal as the page's JSON error, with ErrorInfo's reason and rule."""
    code = err.code() if isinstance(err, grpc.Call) else grpc.StatusCode.UNKNOWN
    message = (err.details() if isinstance(err, grpc.Call) else None) or str(code)
    reason, rule = "", None
    status = rpc_status.from_call(err) if isinstance(err, grpc.Call) else None
    details: list[Any] = list(status.details) if status is not None else []
    for detail in details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            reason = info.reason
            rule = info.metadata.get("rule")
    http = HTTP_OF.get(code, HTTPStatus.BAD_GATEWAY)
    if http == HTTPStatus.BAD_GATEWAY:
        title = "Server error"
        if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
            message = "the game server refused this web server's operator credential"
    elif code == grpc.StatusCode.UNAVAILABLE:
        title, message = "Connection lost", "the game server cannot be reached"
    else:
        title = "Not accepted"
    return ApiError(http, message, title=title, reason=reason, code=code.name, rule=rule)


class RateLimit:
    """A token bucket: ``rate`` per minute, bursts of ``burst``, for the whole process."""

    def __init__(self, per_minute: float, burst: int) -> None:
        self.rate = per_minute / 60.0
        self.burst = float(burst)
        self.tokens = float(burst)
        self.at = time.monotonic()
        self.lock = threading.Lock()

    def take(self) -> bool:
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
            self.at = now
            if self.tokens < 1.0:
                return False
            self.tokens -= 1.0
            return True


class WebApi:
    """The operator calls made for pages, over one gRPC channel to the server."""

    def __init__(
        self,
        target: str,
        operator_token: str,
        *,
        matches_per_minute: float = 30,
        burst: int = 10,
        timeout_s: float = 10.0,
    ) -> None:
        if not operator_token:
            raise ValueError("the web API needs the operator token")
        self.channel = grpc.insecure_channel(target)
        self.stub = pb_grpc.SpadesServiceStub(self.channel)
        self.metadata = (("authorization", f"Bearer {operator_token}"),)
        self.limit = RateLimit(matches_per_minute, burst)
        self.timeout_s = timeout_s

    def new_match(self, body: object) -> dict[str, Any]:
        request = create_request(body)
        if not self.limit.take():
            raise ApiError(
                HTTPStatus.TOO_MANY_REQUESTS,
                "too many new matches at once; try again in a minute",
                title="Slow down",
                reason="RATE_LIMITED",
                code="RESOURCE_EXHAUSTED",
            )
        try:
            res = self.stub.CreateMatch(request, metadata=self.metadata, timeout=self.timeout_s)
        except grpc.RpcError as err:
            raise _refusal(err) from None
        token = next((t for t in res.seat_tokens if t.seat == 0), None)
        if token is None:
            raise ApiError(
                HTTPStatus.BAD_GATEWAY, "the new match has no human seat", title="Server error"
            )
        return {"matchId": res.match.match_id, "seat": token.seat, "token": token.token}

    def match_summary(self, match_id: str) -> dict[str, Any]:
        if not MATCH_ID.fullmatch(match_id):
            raise ApiError(
                HTTPStatus.NOT_FOUND, "there is no match with that id", title="Not found"
            )
        try:
            res = self.stub.GetMatch(
                pb.GetMatchRequest(match_id=match_id),
                metadata=self.metadata,
                timeout=self.timeout_s,
            )
        except grpc.RpcError as err:
            raise _refusal(err) from None
        summary: dict[str, Any] = json_format.MessageToDict(res.match)
        return summary

    def close(self) -> None:
        self.channel.close()


class GuestIssuer:
    """Development only: player credentials for guests, signed with an Ed25519
    (or Ed448) private key, as a game's identity provider would sign them."""

    def __init__(
        self,
        private_key: ed25519.Ed25519PrivateKey | ed448.Ed448PrivateKey,
        *,
        per_minute: float = 30,
        burst: int = 10,
        lifetime_s: int = GUEST_LIFETIME_S,
    ) -> None:
        self.key = private_key
        self.limit = RateLimit(per_minute, burst)
        self.lifetime_s = lifetime_s

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], **kwargs: Any) -> GuestIssuer:
        """The issuer of a PEM private key file (PKCS#8, unencrypted); ValueError
        (its message says why) for anything else."""
        try:
            data = Path(path).read_bytes()
        except OSError as e:
            raise ValueError(f"cannot read {os.fspath(path)}: {e.strerror or e}") from None
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as e:
            raise ValueError(f"{os.fspath(path)}: not a PEM private key ({e})") from None
        if not isinstance(key, (ed25519.Ed25519PrivateKey, ed448.Ed448PrivateKey)):
            raise ValueError(f"{os.fspath(path)}: not an Ed25519 or Ed448 key")
        return cls(key, **kwargs)

    def _renewed(self, credential: object) -> str | None:
        """The player id of a guest credential this issuer signed (expired up to
        RENEW_GRACE_S ago), so a guest keeps its id, ratings and tables when its
        page renews; None when there is none to renew."""
        if credential is None:
            return None
        if not isinstance(credential, str) or len(credential) > 4096:
            raise _bad("renew", "must be a guest credential")
        try:
            claims = jwt.decode(
                credential,
                self.key.public_key(),
                algorithms=["EdDSA"],
                audience=GUEST_AUDIENCE,
                issuer=GUEST_ISSUER,
                leeway=RENEW_GRACE_S,
                options={"require": ["sub", "exp"]},
            )
        except jwt.PyJWTError:
            raise _bad("renew", "is not a guest credential of this server") from None
        sub = claims.get("sub")
        if not isinstance(sub, str) or not sub.startswith("guest-"):
            raise _bad("renew", "is not a guest credential of this server")
        return sub

    def issue(self, body: object) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise _bad("body", "must be a JSON object")
        unknown = sorted(set(body) - {"name", "renew"})
        if unknown:
            raise _bad(unknown[0], "is not a field of a guest")
        suffix = secrets.token_hex(8)
        renewed = self._renewed(body.get("renew"))
        name = body.get("name")
        if name is None:
            name = f"Guest {suffix[:4]}"
        elif not isinstance(name, str) or not 1 <= len(name) <= MAX_GUEST_NAME:
            raise _bad("name", f"must be 1 to {MAX_GUEST_NAME} characters")
        else:
            name = clean_name(name)
            if not name:
                raise _bad("name", "must have a letter that shows")
        if not self.limit.take():
            raise ApiError(
                HTTPStatus.TOO_MANY_REQUESTS,
                "too many guests at once; try again in a minute",
                title="Slow down",
                reason="RATE_LIMITED",
                code="RESOURCE_EXHAUSTED",
            )
        now = int(time.time())
        exp = now + self.lifetime_s
        player_id = renewed or f"guest-{suffix}"
        claims = {
            "iss": GUEST_ISSUER,
            "aud": GUEST_AUDIENCE,
            "sub": player_id,
            "name": name,
            "iat": now,
            "nbf": now,
            "exp": exp,
        }
        credential = jwt.encode(claims, self.key, algorithm="EdDSA")
        return {
            "credential": credential,
            "playerId": player_id,
            "name": name,
            "expiresAtMs": exp * 1000,
        }


def make_handler(
    dist: Path, api: WebApi | None, guests: GuestIssuer | None = None
) -> type[SimpleHTTPRequestHandler]:
    """A request handler: ``api``'s two calls and ``guests``' one under /api/,
    and the launcher's file serving (stack.WebTableHandler: the files of
    ``dist``, its routes to index.html, the page that says how to build the
    table) for the rest."""
    root = str(dist.resolve())

    class Handler(WebTableHandler):
        server_version = "spades-web"
        sys_version = ""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=root, **kwargs)

        def log_message(self, format: str, *args: Any) -> None:
            if os.environ.get("SPADES_WEB_LOG"):
                super().log_message(format, *args)

        def end_headers(self) -> None:
            if urlsplit(self.path).path.startswith("/api/"):
                # A seat token is in these answers: never stored by a cache.
                self.send_header("Cache-Control", "no-store")
                self.send_header("X-Content-Type-Options", "nosniff")
                SimpleHTTPRequestHandler.end_headers(self)
            else:
                super().end_headers()

        def list_directory(self, path: str | os.PathLike[str]) -> None:
            self.send_error(HTTPStatus.NOT_FOUND, "no such file")

        def _json(self, status: HTTPStatus, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _api(self, call: Callable[[WebApi], dict[str, Any]]) -> None:
            if api is None:
                off = ApiError(
                    HTTPStatus.NOT_IMPLEMENTED,
                    "this web server was started without the operator token",
                    title="Not available",
                )
                self._json(off.status, off.body)
                return
            try:
                self._json(HTTPStatus.OK, call(api))
            except ApiError as e:
                self._json(e.status, e.body)

        def _no_such_call(self) -> None:
            self._json(HTTPStatus.NOT_FOUND, ApiError(HTTPStatus.NOT_FOUND, "no such call").body)

        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            if path.startswith("/api/match/"):
                match_id = path[len("/api/match/") :]
                self._api(lambda a: a.match_summary(match_id))
            elif path.startswith("/api/"):
                self._no_such_call()
            else:
                super().do_GET()

        def do_HEAD(self) -> None:
            if urlsplit(self.path).path.startswith("/api/"):
                self.send_error(HTTPStatus.METHOD_NOT_ALLOWED)
            else:
                super().do_HEAD()

        def do_POST(self) -> None:
            path = urlsplit(self.path).path
            if path not in ("/api/new-match", "/api/guest"):
                self._no_such_call()
                return
            what = "a new match is" if path == "/api/new-match" else "guest credentials are"
            problem = self._check_post(what)
            if problem is not None:
                self._json(problem.status, problem.body)
                return
            raw = self.rfile.read(int(self.headers["Content-Length"]))
            try:
                body = json.loads(raw)
            except (ValueError, UnicodeDecodeError):
                self._json(HTTPStatus.BAD_REQUEST, _bad("body", "is not JSON").body)
                return
            if path == "/api/guest":
                self._guest(body)
            else:
                self._api(lambda a: a.new_match(body))

        def _guest(self, body: object) -> None:
            if guests is None:
                off = ApiError(
                    HTTPStatus.NOT_IMPLEMENTED,
                    f"this web server was started without a guest signing key ({GUEST_KEY_ENV})",
                    title="Not available",
                )
                self._json(off.status, off.body)
                return
            try:
                self._json(HTTPStatus.OK, guests.issue(body))
            except ApiError as e:
                self._json(e.status, e.body)

        def _check_post(self, what: str) -> ApiError | None:
            ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
            if ctype != "application/json":
                return ApiError(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "send application/json")
            origin = self.headers.get("Origin")
            host = self.headers.get("Host") or ""
            if origin is not None and urlsplit(origin).netloc != host:
                return ApiError(HTTPStatus.FORBIDDEN, f"{what} made only for this site's own pages")
            try:
                length = int(self.headers.get("Content-Length") or "")
            except ValueError:
                return ApiError(HTTPStatus.LENGTH_REQUIRED, "send a Content-Length")
            if not 0 < length <= MAX_BODY:
                return ApiError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"send 1 to {MAX_BODY} bytes")
            return None

    return Handler


def serve(
    host: str, port: int, dist: Path, api: WebApi | None, guests: GuestIssuer | None = None
) -> ThreadingHTTPServer:
    """A server to run with serve_forever (port 0: a free one)."""
    httpd = ThreadingHTTPServer((host, port), make_handler(dist, api, guests))
    httpd.daemon_threads = True
    return httpd


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m spades_server.webapp", description=(__doc__ or "").split("\n\n")[0]
    )
    p.add_argument("--dir", type=Path, default=WEB_DIST, help="the built page (clients/web/dist)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port (default 0: any free port)")
    p.add_argument(
        "--target",
        default="127.0.0.1:50051",
        help="where the gRPC service answers (the server, or Envoy's listener)",
    )
    p.add_argument(
        "--matches-per-minute", type=float, default=30, help="new matches a minute (default 30)"
    )
    p.add_argument(
        "--guests-per-minute",
        type=float,
        default=30,
        help=f"guest credentials a minute, with {GUEST_KEY_ENV} (default 30)",
    )
    args = p.parse_args(argv)
    guests = None
    if key_file := os.environ.get(GUEST_KEY_ENV, ""):
        try:
            guests = GuestIssuer.from_file(key_file, per_minute=args.guests_per_minute)
        except ValueError as e:
            p.error(f"{GUEST_KEY_ENV}: {e}")
    token = os.environ.get("SPADES_OPERATOR_TOKEN", "")
    api = WebApi(args.target, token, matches_per_minute=args.matches_per_minute) if token else None
    stops = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stops)  # the serving thread inherits the mask
    httpd = serve(args.host, args.port, args.dir, api, guests)
    thread = threading.Thread(target=httpd.serve_forever, name="web", daemon=True)
    thread.start()
    host, port = httpd.server_address[:2]
    # The launcher (spades_server.stack) waits for this line.
    print(f"static files on {host!s}:{port} from {args.dir}", flush=True)
    if api is None:
        print("no SPADES_OPERATOR_TOKEN: /api/new-match is off", flush=True)
    else:
        print(f"/api/new-match and /api/match/<id> call {args.target}", flush=True)
    if guests is not None:
        print("/api/guest hands out guest credentials (development only)", flush=True)
    signal.sigwait(stops)
    httpd.shutdown()
    thread.join(5)
    httpd.server_close()
    if api is not None:
        api.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
