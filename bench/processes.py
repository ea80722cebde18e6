"""What the benches share to start and stop the processes they measure:
loopback ports; the server's replicas (``python -m spades_server.main``);
redis-server (one, or a Redis Cluster of N primaries); Envoy in front of N
replicas (deploy/envoy/envoy.yaml rendered as ``make run`` renders it);
children that say when they are ready (the stack, its static file server,
the Go edge, the Colyseus peer); the benches' own client processes; and a
``Procs`` that stops all of them at the end whatever happens. A bench file
holds its experiment; the processes come from here.

Nothing here measures: CPU meters are in cpu_usage.py, what the load
clients share in load.py.
"""

from __future__ import annotations

import ctypes
import json
import multiprocessing
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.context import SpawnProcess
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, TypeVar

import redis
import redis.cluster
from spades_server import stack

ROOT = Path(__file__).resolve().parent.parent
COLYSEUS = ROOT / "bench" / "peer" / "colyseus"
OPERATOR_TOKEN = "bench-operator"
OPERATOR_MD = (("authorization", f"Bearer {OPERATOR_TOKEN}"),)
READY = re.compile(r"listening on (\S+):(\d+) \(gRPC\)")
METRICS = re.compile(r"metrics at (http://\S+)")
REDIS_START_S = 10.0
CLUSTER_READY_S = 60.0
READY_S = 120.0  # a child started here to say it is ready
STOP_WAIT_S = 10.0
CHILD_STOP_S = 40.0  # the stack stops its own children first
_PR_SET_PDEATHSIG = 1  # prctl(2)
T = TypeVar("T")

try:
    _prctl: Any = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux: no parent-death signal
    _prctl = None


def die_with_parent() -> None:
    """SIGTERM from the kernel when the parent dies: run in a client process,
    or between fork and exec in a detached child."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))


def _interrupt(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt


def stop_on_signals() -> None:
    """Ctrl-C, SIGTERM and SIGHUP unwind to the bench's ``finally``, which
    stops its processes; SIGINT too when inherited ignored (a background job)."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def free_cluster_port() -> int:
    """A free port whose cluster bus port (10,000 above) is free too; a
    cluster node's port must be at most 55,535."""
    rng = random.Random()
    for _ in range(1000):
        port = rng.randrange(20_000, 30_000)
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("127.0.0.1", port))
                b.bind(("127.0.0.1", port + 10_000))
        except OSError:
            continue
        return port
    raise SystemExit("no free pair of ports for a Redis Cluster node")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS in /proc/{pid}/status")


def tail(path: Path, chars: int = 2000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def stop_popen(proc: subprocess.Popen[Any], timeout: float = 15.0) -> None:
    """SIGTERM, then SIGKILL past ``timeout``."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- children that print a ready line on stdout ---------------------------------------------


@dataclass
class Proc:
    """A child started by ``launch``: its stderr in ``log_path``, ``line`` the
    first line it printed on stdout (its ready line; empty if it exited first)."""

    name: str
    proc: subprocess.Popen[str]
    line: str
    log_path: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def tail(self, lines: int = 25) -> str:
        return "\n".join(tail(self.log_path, 20_000).splitlines()[-lines:])

    def rss_kib(self) -> int:
        return rss_kib(self.pid)

    def stop(self) -> None:
        stop_popen(self.proc)


def launch(
    name: str, argv: list[str], log_path: Path, cwd: Path | None = None, detached: bool = False
) -> Proc:
    """``argv`` started; returns once it has printed its first line.

    ``detached``: in a session of its own (Ctrl-C is the bench's, which stops
    it in order) and sent SIGTERM by the kernel if the bench dies first. Only
    for a bench with no gRPC call of its own yet: that takes a real fork(),
    which gRPC's threads in the bench do not survive cleanly (a plain start
    is a vfork())."""
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            cwd=cwd,
            start_new_session=detached,
            preexec_fn=die_with_parent if detached else None,  # noqa: PLW1509
        )
    assert proc.stdout is not None
    return Proc(name, proc, proc.stdout.readline().strip(), log_path)


def start_listening(name: str, argv: list[str], log_path: Path) -> tuple[Proc, str]:
    """A child that prints ``listening HOST:PORT`` once it listens (the Go
    edge, bench/edge/core.py); and that address."""
    p = launch(name, argv, log_path, ROOT)
    if not p.line.startswith("listening "):
        p.stop()
        raise RuntimeError(f"{name}: {p.line!r}; the end of its log:\n{p.tail()}")
    return p, p.line.split()[1]


def start_colyseus(log_path: Path) -> tuple[Proc, str]:
    """The Colyseus peer (bench/peer/colyseus/server.mjs) on a free loopback
    port, and its ``ws://`` URL."""
    argv = ["node", "server.mjs", "--port", str(free_port()), "--host", "127.0.0.1"]
    p = launch("colyseus", argv, log_path, COLYSEUS)
    try:
        ready = json.loads(p.line)  # {"event":"listening","port":N,"pid":P}
    except ValueError:
        ready = {}
    if ready.get("event") != "listening":
        p.stop()
        raise RuntimeError(f"colyseus server did not start: {p.line!r}\n{p.tail()}")
    if ready.get("pid") != p.pid:  # node run directly: its figures are read from this pid
        p.stop()
        raise RuntimeError(f"colyseus server says pid {ready.get('pid')}, started {p.pid}")
    return p, f"ws://127.0.0.1:{ready['port']}"


# -- the server ---------------------------------------------------------------------------


@dataclass
class Server(Proc):
    """A replica (``start_server``): where it listens, and its /metrics."""

    address: str = ""
    metrics_url: str = ""  # "" when its --metrics-port is -1

    @property
    def port(self) -> int:
        return int(self.address.rpartition(":")[2])


def start_server(
    store: str,
    workdir: Path,
    extra: list[str],
    profile: str | None = None,
    *,
    port: int = 0,
    log_path: Path | None = None,
    detached: bool = False,
) -> Server:
    """A replica on ``port`` (0: a free one), with no rate limit and room for
    every match (the benches measure the server, not its limits); returns
    once it prints that it listens. ``detached``: as ``launch``'s."""
    log_path = log_path or workdir / "server.log"
    prefix = ["-m", "cProfile", "-o", profile] if profile else []
    cmd = [sys.executable, *prefix, "-m", "spades_server.main", "--port", str(port)]
    cmd += ["--metrics-port", "0", "--store", store, "--db", str(workdir / "s.db")]
    cmd += ["--operator-token", OPERATOR_TOKEN, "--actions-per-second", "1000000"]
    cmd += ["--max-matches", "1000000", "--grace-seconds", "2", *extra]
    p = launch("server", cmd, log_path, detached=detached)
    found = READY.search(p.line)
    if found is None:
        p.proc.kill()
        p.proc.wait()
        raise SystemExit(f"server did not start: {p.line!r}\n{tail(log_path)}")
    metrics = METRICS.search(p.line)
    address = f"{found.group(1)}:{found.group(2)}"
    return Server(p.name, p.proc, p.line, log_path, address, metrics[1] if metrics else "")


# -- Redis ---------------------------------------------------------------------------------


def redis_binary() -> str:
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not os.access(binary, os.X_OK):
        raise SystemExit("redis-server is not installed: apt-get install -y redis-server")
    return binary


class RedisProcess:
    """Debian's redis-server on a free loopback port, files in ``workdir``."""

    def __init__(
        self, workdir: Path, aof: str | None, extra: tuple[str, ...] = (), port: int = 0
    ) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.aof = aof
        argv = [redis_binary(), "--port", str(self.port), "--bind", "127.0.0.1"]
        argv += ["--dir", str(workdir), "--save", "", "--daemonize", "no"]
        if aof:
            argv += ["--appendonly", "yes", "--appendfsync", aof]
        else:
            argv += ["--appendonly", "no"]
        self.log_path = workdir / "redis.log"
        with self.log_path.open("wb") as log:
            # Its own session: Ctrl-C reaches the bench, which stops the
            # replicas before their store.
            self.proc = subprocess.Popen(
                [*argv, *extra],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=10)
        deadline = time.monotonic() + REDIS_START_S
        while True:
            try:
                if self.client.ping():
                    break
            except redis.exceptions.ConnectionError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(
                    f"redis-server did not start:\n{self.log_path.read_text()[-2000:]}"
                )
            time.sleep(0.02)
        self.version = str(self.client.info("server")["redis_version"])

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def pids(self) -> list[int]:
        return [self.proc.pid]

    @property
    def flags(self) -> list[str]:
        """The server's flags for this Redis."""
        return ["--redis-url", self.url]

    def persistence(self) -> str:
        if self.aof:
            return f"AOF, appendfsync {self.aof} (--appendonly yes --appendfsync {self.aof})"
        return "none (--save '' --appendonly no)"

    def used_memory(self) -> int:
        return int(self.client.info("memory")["used_memory"])

    def stats(self) -> dict[str, int]:
        """Commands and network bytes so far (INFO stats)."""
        info = self.client.info("stats")
        return {k: int(info[k]) for k in STAT_KEYS}

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


STAT_KEYS = ("total_commands_processed", "total_net_input_bytes", "total_net_output_bytes")


class RedisClusterProcess:
    """A Redis Cluster of ``primaries`` primaries (``replicas`` each) on
    loopback, made by ``redis-cli --cluster create`` (slots split evenly)."""

    def __init__(self, workdir: Path, primaries: int, replicas: int = 0) -> None:
        if primaries < 1 or (primaries < 3 and replicas):
            raise SystemExit("a cluster with replicas needs 3 primaries or more")
        extra: tuple[str, ...] = ("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
        extra += ("--cluster-node-timeout", "1000", "--repl-diskless-sync-delay", "0")
        count = primaries * (1 + replicas)
        self.nodes = [
            RedisProcess(workdir / f"node{i}", None, extra, free_cluster_port())
            for i in range(count)
        ]
        self.primaries = self.nodes[:primaries]
        self.version = self.nodes[0].version
        if primaries >= 3:
            argv = ["redis-cli", "--cluster", "create"]
            argv += [f"127.0.0.1:{n.port}" for n in self.nodes]
            argv += ["--cluster-replicas", str(replicas), "--cluster-yes"]
            done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
            if done.returncode != 0:
                raise SystemExit(f"redis-cli --cluster create failed:\n{done.stdout[-2000:]}")
        else:
            # redis-cli wants 3 primaries: fewer are joined by hand.
            self._assign_by_hand()
        self._wait_ready()

    def _assign_by_hand(self) -> None:
        first = self.nodes[0]
        for node in self.nodes[1:]:
            first.client.execute_command("CLUSTER", "MEET", "127.0.0.1", node.port)
        n = len(self.primaries)
        for i, node in enumerate(self.primaries):
            low, high = i * 16384 // n, (i + 1) * 16384 // n - 1
            node.client.execute_command("CLUSTER", "ADDSLOTSRANGE", low, high)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + CLUSTER_READY_S
        while True:
            states = [n.client.execute_command("CLUSTER", "INFO") for n in self.nodes]
            if all(b"cluster_state:ok" in s for s in states):
                return
            if time.monotonic() > deadline:
                raise SystemExit("the Redis Cluster did not become ready")
            time.sleep(0.1)

    @property
    def url(self) -> str:
        return self.nodes[0].url

    @property
    def pids(self) -> list[int]:
        return [n.pid for n in self.nodes]

    @property
    def flags(self) -> list[str]:
        return ["--redis-url", self.url, "--redis-mode", "cluster"]

    def persistence(self) -> str:
        return "none (--save '' --appendonly no)"

    def used_memory(self) -> int:
        return sum(n.used_memory() for n in self.primaries)

    def stats(self) -> dict[str, int]:
        totals = dict.fromkeys(STAT_KEYS, 0)
        for node in self.primaries:
            for k, v in node.stats().items():
                totals[k] += v
        return totals

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


# -- children that log their readiness (stack.Child: Envoy, the stack, its file server) ------


def wait_for(
    child: stack.Child, what: str, probe: Callable[[], T | None], timeout: float = READY_S
) -> T:
    """``probe()``'s first true answer; the child's log when it exits or
    ``timeout`` passes first."""
    deadline = time.monotonic() + timeout
    while not (found := probe()):
        if not child.alive() or time.monotonic() > deadline:
            raise SystemExit(
                f"{child.name}: {what} did not happen; the end of its log:\n{child.tail()}"
            )
        time.sleep(0.05)
    return found


def stop_children(children: list[stack.Child], timeout: float = CHILD_STOP_S) -> None:
    """SIGTERM to all of them at once, then wait (SIGKILL past ``timeout``)."""
    for c in children:
        c.signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for c in children:
        try:
            c.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            c.signal(signal.SIGKILL)
            c.proc.wait(timeout=5)


def envoy_config(
    server_ports: list[int], listen_port: int, origin: str, web: tuple[str, int] | None = None
) -> str:
    """deploy/envoy/envoy.yaml rendered as ``make run`` renders it, its
    server cluster with one endpoint per port (round robin, the cluster's
    default); its web upstream ``web``, or a port nobody listens on."""
    web_host, web_port = web or ("127.0.0.1", free_port())
    values = stack.EnvoyPorts(
        listen_host="127.0.0.1",
        listen_port=listen_port,
        server_host="127.0.0.1",
        server_port=server_ports[0],
        web_host=web_host,
        web_port=web_port,
        admin_host="127.0.0.1",
        admin_port=0,
        origins=(origin,),
    )
    text = stack.render_config(stack.TEMPLATE, values)
    first = server_ports[0]
    address = f'socket_address: {{ address: "127.0.0.1", port_value: {first} }}'
    if text.count(address) != 1:
        raise SystemExit(
            "the Envoy template's server endpoint is not where bench/processes.py looks"
        )
    at = text.index(address)
    start = text.rfind("\n", 0, text.rfind("- endpoint:", 0, at)) + 1
    end = text.index("\n", at) + 1
    one = text[start:end]
    many = "".join(one.replace(f"port_value: {first} ", f"port_value: {p} ") for p in server_ports)
    return text[:start] + many + text[end:]


class Envoy:
    """Envoy (``.venv/bin/envoy`` unless ``binary``) on a free loopback port
    in front of ``server_ports``, on ``envoy_config``'s config, as ``make
    run`` starts it; ready once its admin interface answers /ready and a
    server's health answers through it (gRPC-Web)."""

    def __init__(
        self,
        workdir: Path,
        server_ports: list[int],
        log_dir: Path | None = None,
        web: tuple[str, int] | None = None,
        binary: str = "",
        concurrency: int = 1,
    ) -> None:
        self.binary = stack.find_envoy(binary)
        self.port = free_port()
        config = workdir / "envoy.yaml"
        config.write_text(envoy_config(server_ports, self.port, self.origin, web))
        admin_file = workdir / "envoy-admin-address"
        argv = [self.binary, "-c", str(config), "--admin-address-path", str(admin_file)]
        argv += ["--disable-hot-restart", "--concurrency", str(concurrency)]
        argv += ["--log-level", "warning"]
        self.child = stack.Child("envoy", argv, (log_dir or workdir) / "envoy.log", os.environ)
        try:
            wait_for(self.child, "admin /ready", lambda: stack.envoy_ready(admin_file))
            self.admin = admin_file.read_text().strip()  # host:port
            wait_for(
                self.child,
                "the servers' health through Envoy (gRPC-Web)",
                lambda: stack.healthy("127.0.0.1", self.port),
            )
        except BaseException:
            self.stop()
            raise

    @property
    def origin(self) -> str:
        """The page's origin, the one its CORS allowlist holds."""
        return stack.page_origin("127.0.0.1", self.port)

    @property
    def pid(self) -> int:
        return self.child.proc.pid

    def alive(self) -> bool:
        return self.child.alive()

    def stats(self) -> dict[str, int]:
        """Its counters and gauges (admin /stats)."""
        with urllib.request.urlopen(f"http://{self.admin}/stats", timeout=10) as resp:
            text = resp.read().decode()
        out: dict[str, int] = {}
        for line in text.splitlines():
            name, _, value = line.partition(": ")
            if value.strip().isdigit():
                out[name] = int(value)
        return out

    def version(self) -> str:
        out = subprocess.run(
            [self.binary, "--version"], check=False, capture_output=True, text=True, timeout=30
        ).stdout
        found = re.search(r"version: \S+/(\d+\.\d+\.\d+)", out)
        return f"Envoy {found[1]}" if found else "Envoy (version unknown)"

    def stop(self) -> None:
        stop_children([self.child])


# -- the benches' own client processes ----------------------------------------------------

_SPAWN = multiprocessing.get_context("spawn")  # a client inherits nothing of the bench's state


def start_process(target: Callable[..., None], *args: Any) -> tuple[SpawnProcess, Connection]:
    """``target(conn, *args)`` in a new daemonic process; our end of ``conn``."""
    parent, child = _SPAWN.Pipe()
    proc = _SPAWN.Process(target=target, args=(child, *args), daemon=True)
    proc.start()
    child.close()  # so that our end sees EOF if the process dies
    return proc, parent


def recv(conn: Connection, timeout: float, what: str = "a client process") -> Any:
    """The next message, or an error after ``timeout`` seconds (no hang)."""
    if not conn.poll(timeout):
        raise SystemExit(f"no answer from {what} within {timeout:g} s")
    return conn.recv()


def stop_processes(procs: list[BaseProcess], grace: float = 0.0) -> None:
    """Each given ``grace`` seconds to exit on its own, then SIGTERM, then SIGKILL."""
    for p in procs:
        p.join(grace)
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(timeout=5)
        if p.is_alive():
            p.kill()
            p.join(timeout=5)


# -- all of a run's processes ---------------------------------------------------------------


class Procs:
    """Every process a run started, stopped at its end whatever happens; the
    logs in ``log_dir`` if given, else beside each process's files; the
    servers ``detached`` (``launch``'s) if asked."""

    def __init__(self, workdir: Path, log_dir: Path | None = None, detached: bool = False) -> None:
        self.workdir = workdir
        self.log_dir = log_dir
        self.detached = detached
        self.servers: list[Server] = []
        self.clients: list[BaseProcess] = []
        self.redis: RedisProcess | RedisClusterProcess | None = None
        self.clusters: list[RedisClusterProcess] = []  # beside ``redis``, for comparisons
        self.envoy: Envoy | None = None
        self.children: list[stack.Child] = []

    def replica(
        self,
        name: str,
        store: str,
        prefix: str = "",
        extra: tuple[str, ...] | list[str] = (),
        port: int = 0,
        redis: RedisProcess | RedisClusterProcess | None = None,
    ) -> Server:
        """A server process; with ``store`` redis, on ``redis`` (this run's
        Redis if None) under ``prefix``."""
        workdir = self.workdir / name
        workdir.mkdir()
        args = list(extra)
        if store == "redis":
            redis = redis or self.redis
            assert redis is not None
            args += [*redis.flags, "--redis-prefix", prefix]
        log = self.log_dir / f"{name}.log" if self.log_dir else None
        server = start_server(store, workdir, args, port=port, log_path=log, detached=self.detached)
        self.servers.append(server)
        return server

    def cluster(self, name: str, primaries: int) -> RedisClusterProcess:
        """A Redis Cluster beside this run's ``redis``, stopped at the end."""
        cluster = RedisClusterProcess(self.workdir / name, primaries)
        self.clusters.append(cluster)
        return cluster

    def start_envoy(
        self, servers: list[Server], web: tuple[str, int] | None = None, **kw: Any
    ) -> Envoy:
        """Envoy in front of ``servers`` (``Envoy``'s ``binary``, ``concurrency``)."""
        self.envoy = Envoy(self.workdir, [s.port for s in servers], self.log_dir, web, **kw)
        return self.envoy

    def child(
        self,
        name: str,
        argv: list[str],
        ready: re.Pattern[str],
        env: Mapping[str, str] | None = None,
    ) -> re.Match[str]:
        """A child that writes ``ready`` to its output once it is; that match."""
        log = (self.log_dir or self.workdir) / f"{name}.log"
        child = stack.Child(name, argv, log, dict(os.environ, PYTHONUNBUFFERED="1", **(env or {})))
        self.children.append(child)
        return wait_for(
            child, "its ready line", lambda: ready.search(log.read_text(errors="replace"))
        )

    def client(self, target: Callable[..., None], *args: Any) -> tuple[SpawnProcess, Connection]:
        """A client process (``start_process``), stopped with the rest."""
        proc, conn = start_process(target, *args)
        self.clients.append(proc)
        return proc, conn

    def stop(self, servers: list[Server]) -> None:
        """SIGTERM to all of them at once, then wait (SIGKILL past STOP_WAIT_S)."""
        for s in servers:
            if s.proc.poll() is None:
                s.proc.terminate()
        deadline = time.monotonic() + STOP_WAIT_S
        for s in servers:
            try:
                s.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                s.proc.kill()
                s.proc.wait(timeout=5)

    def stop_all(self) -> None:
        """The clients, then the servers (their streams end with their
        status), then what stood in front of them, then their store."""
        stop_processes(self.clients)
        self.stop(self.servers)
        if self.envoy is not None:
            self.envoy.stop()
        stop_children(self.children)
        if self.redis is not None:
            self.redis.stop()
        for cluster in self.clusters:
            cluster.stop()
