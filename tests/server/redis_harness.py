"""Real redis-server processes on loopback for the Redis store's tests.

Each ``RedisServer`` is Debian's ``redis-server`` (installed by ``.ci/run`` and
``make test``) on a free loopback port with its files in a temporary folder:
no configuration file, no persistence unless asked (``aof=True``: AOF with
``appendfsync always``). Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import random
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from redis.crc import key_slot

START_TIMEOUT = 10.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def free_cluster_port() -> int:
    """A free port whose cluster bus port (10,000 above) is free too: the
    kernel's ephemeral ports are too high for a cluster node (at most 55,535)."""
    rng = random.Random()
    for _ in range(1000):
        port = rng.randrange(20_000, 30_000)
        with contextlib.ExitStack() as stack:
            try:
                for p in (port, port + 10_000):
                    s = stack.enter_context(socket.socket())
                    s.bind(("127.0.0.1", p))
            except OSError:
                continue
            return port
    raise AssertionError("no free pair of ports for a cluster node")


class RedisServer:
    def __init__(self, workdir: Path, aof: bool = False, extra: tuple[str, ...] = ()) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise AssertionError("redis-server is not installed: apt-get install redis-server")
        self.binary = binary
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.aof = aof
        self.extra = extra
        self.port = free_cluster_port() if "--cluster-enabled" in extra else free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def argv(self) -> list[str]:
        argv = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1"]
        argv += ["--dir", str(self.workdir), "--save", "", "--daemonize", "no"]
        if self.aof:
            argv += ["--appendonly", "yes", "--appendfsync", "always"]
        else:
            argv += ["--appendonly", "no"]
        return argv + list(self.extra)

    def start(self) -> None:
        log = open(self.workdir / "redis.log", "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(
            self.argv(), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while not self.ping():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"redis-server did not start:\n{self.log_tail()}")
            time.sleep(0.01)

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def replica_online(self) -> bool:
        """A replica of this primary has its data and follows it."""
        done = subprocess.run(
            ["redis-cli", "-p", str(self.port), "info", "replication"],
            capture_output=True,
            timeout=10,
            check=False,
        )
        return b"state=online" in done.stdout

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)

    def log_tail(self, lines: int = 20) -> str:
        with contextlib.suppress(OSError):
            return "\n".join((self.workdir / "redis.log").read_text().splitlines()[-lines:])
        return ""


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One redis-server for the session; tests keep apart by key prefix."""
    srv = RedisServer(tmp_path_factory.mktemp("redis"))
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def redis_prefix() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture
def make_redis(tmp_path: Path) -> Iterator[type[RedisServer]]:
    """A factory for redis-servers of one test's own (stopped when it ends)."""
    made: list[RedisServer] = []

    class Own(RedisServer):
        def __init__(self, aof: bool = False, extra: tuple[str, ...] = ()) -> None:
            super().__init__(tmp_path / f"redis{len(made)}", aof, extra)
            made.append(self)
            self.start()

    yield Own
    for srv in made:
        srv.stop()


CLUSTER_NODE_TIMEOUT_MS = 1000  # a dead primary's replica is promoted after about this


class RedisCluster:
    """A Redis Cluster on loopback: ``primaries`` primaries, each with one
    replica, joined by ``redis-cli --cluster create`` (slots split evenly in
    port order). ``url`` names one node: redis-py's cluster client learns the
    rest from it."""

    def __init__(self, workdir: Path, primaries: int = 3, aof: bool = False) -> None:
        self.workdir = workdir
        extra = (
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            str(CLUSTER_NODE_TIMEOUT_MS),
            # A replica that lost its primary for a while may still be promoted:
            # these tests kill primaries on purpose.
            "--cluster-replica-validity-factor",
            "0",
            # The first full sync at once, not after the default 5 s.
            "--repl-diskless-sync-delay",
            "0",
        )
        self.nodes = [
            RedisServer(workdir / f"node{i}", aof=aof, extra=extra) for i in range(2 * primaries)
        ]
        self.primaries = primaries

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.nodes[0].port}/0"

    def start(self) -> None:
        for node in self.nodes:
            node.start()
        cli = shutil.which("redis-cli")
        if cli is None:
            raise AssertionError("redis-cli is not installed: apt-get install redis-server")
        argv = [cli, "--cluster", "create", *[f"127.0.0.1:{n.port}" for n in self.nodes]]
        argv += ["--cluster-replicas", "1", "--cluster-yes"]
        done = subprocess.run(argv, capture_output=True, timeout=60, check=False)
        if done.returncode != 0:
            raise AssertionError(f"redis-cli --cluster create failed:\n{done.stdout.decode()}")
        self.wait_ok()

    def cli(self, node: RedisServer, *args: str, timeout: float = 30) -> str:
        done = subprocess.run(
            ["redis-cli", "-p", str(node.port), *args],
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        return done.stdout.decode()

    def info(self, node: RedisServer) -> dict[str, str]:
        out: dict[str, str] = {}
        for line in self.cli(node, "cluster", "info").splitlines():
            key, _, value = line.strip().partition(":")
            out[key] = value
        return out

    def wait_ok(self, timeout: float = 30.0) -> None:
        """Until every running node says ``cluster_state:ok`` and agrees on
        the slots' owners (joined nodes may take a few seconds)."""
        deadline = time.monotonic() + timeout
        while True:
            alive = self.alive()
            states = [self.info(n).get("cluster_state") for n in alive]
            if all(s == "ok" for s in states) and self._slots_agree(alive) and self._synced(alive):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"the cluster is not ok: {states}")
            time.sleep(0.1)

    def _synced(self, alive: list[RedisServer]) -> bool:
        """Every replica has its primary's data (a new replica waits a few
        seconds before its first full sync: repl-diskless-sync-delay)."""
        for node in alive:
            info = self.cli(node, "info", "replication")
            if "role:slave" in info and "master_link_status:up" not in info:
                return False
        return True

    def alive(self) -> list[RedisServer]:
        return [n for n in self.nodes if n.proc is not None and n.proc.poll() is None]

    def _slots_agree(self, alive: list[RedisServer]) -> bool:
        """Every node names the same primary for every slot range."""
        views = set()
        for node in alive:
            owners = []
            for line in self.cli(node, "cluster", "nodes").splitlines():
                fields = line.split()
                if len(fields) > 8 and "master" in fields[2]:
                    owners += [(fields[0], span) for span in fields[8:] if "[" not in span]
            views.add(tuple(sorted(owners)))
        return len(views) == 1

    def primary_ports(self) -> list[int]:
        ports = []
        for line in self.cli(self.alive()[0], "cluster", "nodes").splitlines():
            fields = line.split()
            if "master" in fields[2] and "fail" not in fields[2]:
                ports.append(int(fields[1].split("@")[0].rsplit(":", 1)[1]))
        return sorted(ports)

    def node(self, port: int) -> RedisServer:
        return next(n for n in self.nodes if n.port == port)

    def owner_of(self, key: str) -> RedisServer:
        """The node serving ``key``'s slot now."""
        slot = key_slot(key.encode())
        for line in self.cli(self.alive()[0], "cluster", "nodes").splitlines():
            fields = line.split()
            if "master" not in fields[2] or "fail" in fields[2]:
                continue
            for span in fields[8:]:
                if span.startswith("["):
                    continue
                low, _, high = span.partition("-")
                if int(low) <= slot <= int(high or low):
                    return self.node(int(fields[1].split("@")[0].rsplit(":", 1)[1]))
        raise AssertionError(f"no primary serves {key!r}")

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisCluster]:
    """One Redis Cluster (3 primaries, 3 replicas) for the session; tests keep
    apart by key prefix, and those that kill nodes make their own."""
    cluster = RedisCluster(tmp_path_factory.mktemp("cluster"))
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture
def make_cluster(tmp_path: Path) -> Iterator[Callable[..., RedisCluster]]:
    """A factory for Redis Clusters of one test's own (stopped when it ends)."""
    made: list[RedisCluster] = []

    def make(primaries: int = 3, aof: bool = False) -> RedisCluster:
        cluster = RedisCluster(tmp_path / f"cluster{len(made)}", primaries, aof)
        made.append(cluster)
        cluster.start()
        return cluster

    yield make
    for cluster in made:
        cluster.stop()


@dataclass(frozen=True)
class RedisTarget:
    """Where server replicas keep their matches: a URL and the flags that
    say what it is (``--redis-mode cluster`` for a cluster)."""

    url: str
    flags: tuple[str, ...] = ()
    nodes: tuple[int, ...] = ()  # the ports of every node

    def drop_subscriptions(self) -> None:
        """Close every pub/sub connection (CLIENT KILL TYPE pubsub on each
        node): the replicas hear nothing until they subscribe again."""
        for port in self.nodes:
            subprocess.run(
                ["redis-cli", "-p", str(port), "client", "kill", "type", "pubsub"],
                capture_output=True,
                timeout=10,
                check=True,
            )


@pytest.fixture(params=["single", "cluster"])
def shared_redis(request: pytest.FixtureRequest) -> RedisTarget:
    """The session's redis-server, then the session's Redis Cluster: a test
    taking it runs on each."""
    if request.param == "single":
        server = request.getfixturevalue("redis_server")
        return RedisTarget(server.url, nodes=(server.port,))
    cluster = request.getfixturevalue("redis_cluster")
    ports = tuple(n.port for n in cluster.nodes)
    return RedisTarget(cluster.url, ("--redis-mode", "cluster"), ports)
