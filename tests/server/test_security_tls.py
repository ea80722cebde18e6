"""TLS and mutual TLS by flags (docs/security.md), on loopback, with
certificates this test makes (tls_certs.py): the gRPC port speaks only TLS,
and with a client CA operator calls are served only over the operator port,
to clients whose certificate that CA signed."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from server_harness import (
    OP,
    RPC_TIMEOUT,
    Server,
    StreamReader,
    Table,
    choose,
    create_match,
    expect_failure,
    get_view,
    seat_md,
    stream_events,
    submit,
)
from spades_server.gen.spades.v1 import spades_pb2 as pb
from spades_server.gen.spades.v1 import spades_pb2_grpc
from tls_certs import Authority, Issued

HANDSHAKE_TIMEOUT = 3.0  # a refused handshake shows as UNAVAILABLE within this


@pytest.fixture
def ca(tmp_path: Path) -> Authority:
    return Authority(tmp_path / "pki")


@pytest.fixture
def tls_server(tmp_path: Path, ca: Authority) -> Iterator[Callable[..., Server]]:
    started: list[Server] = []

    def make(*extra: str) -> Server:
        cert = ca.server()
        srv = Server(
            tmp_path / f"tls{len(started)}",
            "--tls-cert",
            str(cert.cert),
            "--tls-key",
            str(cert.key),
            *extra,
        )
        srv.credentials = grpc.ssl_channel_credentials(root_certificates=ca.pem)
        started.append(srv)
        srv.start()
        return srv

    yield make
    for srv in started:
        if srv.running():
            assert srv.stop() == 0, srv.log_tail()


def stub_for(
    port: int, credentials: grpc.ChannelCredentials | None
) -> tuple[grpc.Channel, spades_pb2_grpc.SpadesServiceStub]:
    address = f"127.0.0.1:{port}"
    channel = (
        grpc.insecure_channel(address)
        if credentials is None
        else grpc.secure_channel(address, credentials)
    )
    return channel, spades_pb2_grpc.SpadesServiceStub(channel)


def client_credentials(trust: Authority, client: Issued | None) -> grpc.ChannelCredentials:
    if client is None:
        return grpc.ssl_channel_credentials(root_certificates=trust.pem)
    key, chain = client.read()
    return grpc.ssl_channel_credentials(
        root_certificates=trust.pem, private_key=key, certificate_chain=chain
    )


def handshake_refused(port: int, credentials: grpc.ChannelCredentials | None) -> None:
    channel, stub = stub_for(port, credentials)
    with channel:
        expect_failure(
            grpc.StatusCode.UNAVAILABLE,
            stub.Ping,
            pb.PingRequest(),
            metadata=OP,
            timeout=HANDSHAKE_TIMEOUT,
        )


def test_with_a_certificate_the_port_speaks_only_tls(
    tls_server: Callable[..., Server], ca: Authority, tmp_path: Path
) -> None:
    srv = tls_server()
    # A client that trusts the CA does everything: operator calls, seats, streams.
    table = create_match(srv.stub, seed=5)
    view = get_view(srv.stub, table, 0)
    reader = StreamReader(stream_events(srv.stub, table, 0), limit=1)
    reader.join(15)
    assert reader.events and reader.events[0].seq == 1
    submit(srv.stub, table, view.to_act, choose(get_view(srv.stub, table, view.to_act)))

    # Plain text is refused, and so is a client that trusts another CA.
    handshake_refused(srv.port, None)
    stranger = Authority(tmp_path / "other-ca", "another CA")
    handshake_refused(srv.port, grpc.ssl_channel_credentials(root_certificates=stranger.pem))


def test_with_a_client_ca_operator_calls_need_the_operator_port_and_a_certificate(
    tls_server: Callable[..., Server], ca: Authority, tmp_path: Path
) -> None:
    srv = tls_server("--tls-client-ca", str(ca.issued.cert), "--operator-port", "0")
    assert srv.operator_port > 0

    # The public TLS port: the operator token alone is not enough.
    refused = expect_failure(
        grpc.StatusCode.PERMISSION_DENIED,
        srv.stub.CreateMatch,
        pb.CreateMatchRequest(),
        metadata=OP,
        timeout=RPC_TIMEOUT,
    )
    assert refused.reason == "CLIENT_CERT_REQUIRED"
    assert "--operator-port" in refused.message
    listed = expect_failure(
        grpc.StatusCode.PERMISSION_DENIED,
        srv.stub.ListMatches,
        pb.ListMatchesRequest(),
        metadata=OP,
        timeout=RPC_TIMEOUT,
    )
    assert listed.reason == "CLIENT_CERT_REQUIRED"

    # The operator port, with a certificate the CA signed, and the token.
    channel, operator = stub_for(srv.operator_port, client_credentials(ca, ca.client()))
    with channel:
        created = operator.CreateMatch(pb.CreateMatchRequest(), metadata=OP, timeout=RPC_TIMEOUT)
        no_token = expect_failure(
            grpc.StatusCode.UNAUTHENTICATED,
            operator.GetMatch,
            pb.GetMatchRequest(match_id=created.match.match_id),
            timeout=RPC_TIMEOUT,
        )
        assert no_token.reason == "UNAUTHENTICATED"
    # Players, who have no certificate, play on the public port.
    table = Table(
        created.match.match_id,
        {t.seat: t.token for t in created.seat_tokens},
        created.match,
    )
    seat = get_view(srv.stub, table, 0).to_act
    resp = submit(srv.stub, table, seat, choose(get_view(srv.stub, table, seat)))
    assert resp.last_seq > created.match.last_seq

    # The operator port's handshake needs a certificate, and one the CA signed.
    handshake_refused(srv.operator_port, client_credentials(ca, None))
    stranger = Authority(tmp_path / "other-ca", "another CA")
    handshake_refused(srv.operator_port, client_credentials(ca, stranger.client()))
    handshake_refused(srv.operator_port, None)
    # The seat's token still works, and the operator port serves seat calls too.
    channel, operator = stub_for(srv.operator_port, client_credentials(ca, ca.client()))
    with channel:
        operator.GetView(
            pb.GetViewRequest(match_id=table.match_id),
            metadata=seat_md(table.tokens[0]),
            timeout=RPC_TIMEOUT,
        )


def start_refused(*argv: str) -> str:
    """Start a server that must refuse its flags: its exit status is 2 and it
    says why on stderr."""
    proc = subprocess.run(
        [sys.executable, "-m", "spades_server.main", "--port", "0", "--store", "memory", *argv],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    return proc.stderr


def test_tls_flags_that_cannot_work_are_refused_at_start(ca: Authority, tmp_path: Path) -> None:
    cert = ca.server()
    assert "go together" in start_refused("--tls-cert", str(cert.cert))
    assert "go together" in start_refused("--tls-key", str(cert.key))
    assert "needs --tls-cert" in start_refused("--tls-client-ca", str(ca.issued.cert))
    missing = tmp_path / "nowhere.pem"
    assert "cannot read" in start_refused("--tls-cert", str(missing), "--tls-key", str(cert.key))
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    assert "--tls-key" in start_refused("--tls-cert", str(cert.cert), "--tls-key", str(junk))
    other = ca.server("other")
    mismatch = start_refused("--tls-cert", str(cert.cert), "--tls-key", str(other.key))
    assert "KEY_VALUES_MISMATCH" in mismatch, mismatch
    bad_ca = start_refused(
        "--tls-cert", str(cert.cert), "--tls-key", str(cert.key), "--tls-client-ca", str(junk)
    )
    assert "--tls-client-ca" in bad_ca, bad_ca
    assert "--operator-port" in start_refused(
        "--tls-cert",
        str(cert.cert),
        "--tls-key",
        str(cert.key),
        "--tls-client-ca",
        str(ca.issued.cert),
        "--operator-port",
        "70000",
    )
