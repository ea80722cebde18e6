"""What the benches share to start and stop the processes they measure:
loopback ports, redis-server (one, or a Redis Cluster of N primaries), the
server's replicas (``python -m spades_server.main``), and a ``Procs`` that
stops all of them at the end whatever happens. A bench file holds its
experiment; the processes come from here.

Nothing here measures: CPU meters are in cpu_usage.py, the load clients in
server.py and replicas.py.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from pathlib import Path

import redis
import redis.cluster

OPERATOR_TOKEN = "bench-operator"
OPERATOR_MD = (("authorization", f"Bearer {OPERATOR_TOKEN}"),)
READY = re.compile(r"listening on (\S+):(\d+) \(gRPC\)")
REDIS_START_S = 10.0
CLUSTER_READY_S = 60.0
STOP_WAIT_S = 10.0


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


# -- the server ---------------------------------------------------------------------------


@dataclass
class Server:
    proc: subprocess.Popen[str]
    address: str
    log_path: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS in /proc/<pid>/status")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_server(store: str, workdir: Path, extra: list[str], profile: str | None) -> Server:
    """A replica on a free port, with no rate limit and room for every
    match (the benches measure the server, not its limits); returns once it
    prints that it listens."""
    log_path = workdir / "server.log"
    prefix = ["-m", "cProfile", "-o", profile] if profile else []
    cmd = [sys.executable, *prefix, "-m", "spades_server.main", "--port", "0"]
    cmd += ["--metrics-port", "0", "--store", store, "--db", str(workdir / "s.db")]
    cmd += ["--operator-token", OPERATOR_TOKEN, "--actions-per-second", "1000000"]
    cmd += ["--max-matches", "1000000", "--grace-seconds", "2", *extra]
    with log_path.open("w") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # printed once the server is ready
    found = READY.search(line)
    if found is None:
        proc.kill()
        raise SystemExit(f"server did not start: {line!r}\n{log_path.read_text()[-2000:]}")
    return Server(proc, f"{found.group(1)}:{found.group(2)}", log_path)


# -- Redis ---------------------------------------------------------------------------------


def _redis_binary() -> str:
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
        argv = [_redis_binary(), "--port", str(self.port), "--bind", "127.0.0.1"]
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


class Procs:
    """Every process a run started, stopped at its end whatever happens."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.servers: list[Server] = []
        self.clients: list[BaseProcess] = []
        self.redis: RedisProcess | RedisClusterProcess | None = None

    def replica(
        self, name: str, store: str, prefix: str = "", extra: tuple[str, ...] = ()
    ) -> Server:
        """A server process; with ``store`` redis, on this run's Redis under ``prefix``."""
        workdir = self.workdir / name
        workdir.mkdir()
        args = list(extra)
        if store == "redis":
            assert self.redis is not None
            args += [*self.redis.flags, "--redis-prefix", prefix]
        server = start_server(store, workdir, args, None)
        self.servers.append(server)
        return server

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
        for p in self.clients:
            if p.is_alive():
                p.terminate()
        for p in self.clients:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join(timeout=5)
        self.stop(self.servers)
        if self.redis is not None:
            self.redis.stop()
