"""The web table's server (spades_server.webapp): POST /api/new-match makes a bot
match with the operator credential and gives the page only its seat's token;
GET /api/match/<id> is the public summary; every refusal is JSON a page reads.
Against a real spades-server (the shared one), over real HTTP on loopback."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from server_harness import OP, OPERATOR_TOKEN, RPC_TIMEOUT, Server, seat_md
from spades_server import stack, webapp
from spades_server.gen.spades.v1 import spades_pb2 as pb


class Web:
    def __init__(self, port: int) -> None:
        self.port = port

    def call(
        self,
        method: str,
        path: str,
        body: object = None,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> tuple[int, Any, http.client.HTTPResponse]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=RPC_TIMEOUT)
        try:
            data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
            h = {"Content-Type": "application/json"} if data is not None else {}
            h.update(headers or {})
            conn.request(method, path, body=data, headers=h)
            res = conn.getresponse()
            text = res.read()
            ctype = res.getheader("Content-Type") or ""
            parsed = json.loads(text) if ctype.startswith("application/json") else text
            return res.status, parsed, res
        finally:
            conn.close()


def _serve(dist: Path, api: webapp.WebApi | None) -> Iterator[Web]:
    httpd = webapp.serve("127.0.0.1", 0, dist, api)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield Web(httpd.server_port)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)
        if api is not None:
            api.close()


@pytest.fixture
def dist(tmp_path: Path) -> Path:
    d = tmp_path / "dist"
    (d / "assets").mkdir(parents=True)
    (d / "index.html").write_text("<!doctype html><title>Spades</title>")
    (d / "assets" / "app.js").write_text("console.log(1)")
    return d


@pytest.fixture
def web(shared_server: Server, dist: Path) -> Iterator[Web]:
    api = webapp.WebApi(f"127.0.0.1:{shared_server.port}", OPERATOR_TOKEN, burst=50)
    yield from _serve(dist, api)


def test_new_match_gives_the_page_one_seat_token_and_bots_elsewhere(
    web: Web, shared_server: Server
) -> None:
    body = {
        "name": "Ada",
        "preset": "classic",
        "players": 4,
        "botLevels": [pb.BOT_LEVEL_EASY, pb.BOT_LEVEL_HARD, pb.BOT_LEVEL_RANDOM],
        "targetScore": 200,
        "seed": "42",
    }
    status, res, _ = web.call("POST", "/api/new-match", body)
    assert status == 200, res
    assert set(res) == {"matchId", "seat", "token"}
    assert res["seat"] == 0 and res["token"].startswith(res["matchId"] + ".")
    assert OPERATOR_TOKEN not in json.dumps(res)
    summary = shared_server.stub.GetMatch(
        pb.GetMatchRequest(match_id=res["matchId"]), metadata=OP, timeout=RPC_TIMEOUT
    ).match
    assert [(s.name, s.control, s.bot_level) for s in summary.seats] == [
        ("Ada", pb.SEAT_CONTROL_OPEN, pb.BOT_LEVEL_UNSPECIFIED),
        ("West", pb.SEAT_CONTROL_BOT, pb.BOT_LEVEL_EASY),
        ("North", pb.SEAT_CONTROL_BOT, pb.BOT_LEVEL_HARD),
        ("East", pb.SEAT_CONTROL_BOT, pb.BOT_LEVEL_RANDOM),
    ]
    assert summary.ruleset.target_score == 200
    # The token acts for seat 0.
    claimed = shared_server.stub.ClaimSeat(
        pb.ClaimSeatRequest(match_id=res["matchId"]),
        metadata=seat_md(res["token"]),
        timeout=RPC_TIMEOUT,
    )
    assert claimed.seat == 0


def test_the_page_names_the_bots_in_its_language(web: Web, shared_server: Server) -> None:
    body = {"botNames": ["Zachód", " Północ ", "Wschód"]}
    status, res, _ = web.call("POST", "/api/new-match", body)
    assert status == 200, res
    summary = shared_server.stub.GetMatch(
        pb.GetMatchRequest(match_id=res["matchId"]), metadata=OP, timeout=RPC_TIMEOUT
    ).match
    assert [s.name for s in summary.seats[1:]] == ["Zachód", "Północ", "Wschód"]


def test_variants_reach_the_ruleset(web: Web, shared_server: Server) -> None:
    body = {"preset": "german", "players": 3, "botLevels": [1, 2], "seed": "7"}
    status, res, _ = web.call("POST", "/api/new-match", body)
    assert status == 200, res
    summary = shared_server.stub.GetMatch(
        pb.GetMatchRequest(match_id=res["matchId"]), metadata=OP, timeout=RPC_TIMEOUT
    ).match
    assert summary.ruleset.players == 3 and not summary.ruleset.partnerships
    status, res, _ = web.call(
        "POST", "/api/new-match", {"blindNil": True, "auctionTrump": True, "deucesHigh": False}
    )
    assert status == 200, res
    summary = shared_server.stub.GetMatch(
        pb.GetMatchRequest(match_id=res["matchId"]), metadata=OP, timeout=RPC_TIMEOUT
    ).match
    r = summary.ruleset
    assert r.blind_nil and r.blind_nil_deficit == 0 and r.auction_trump


def test_rules_that_cannot_go_together_come_back_with_the_servers_reason(web: Web) -> None:
    status, res, _ = web.call("POST", "/api/new-match", {"auctionTrump": True, "deucesHigh": True})
    assert status == 400
    err = res["error"]
    assert err["reason"] == "INVALID_RULESET" and err["code"] == "INVALID_ARGUMENT"
    assert "auction_trump" in err["message"] or "deuces" in err["message"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"preset": "poker"}, "preset"),
        ({"players": 7}, "players"),
        ({"players": 4, "botLevels": [3, 3]}, "botLevels"),
        ({"botNames": ["Zachód", "Północ"]}, "botNames"),
        ({"botNames": ["Zachód", "", "Wschód"]}, "botNames"),
        ({"botNames": ["x" * 33, "b", "c"]}, "botNames"),
        ({"botNames": "Zachód"}, "botNames"),
        ({"botLevels": [3, 3, 99]}, "botLevels"),
        ({"name": ""}, "name"),
        ({"name": "x" * 65}, "name"),
        ({"seed": "-1"}, "seed"),
        ({"seed": str(2**64)}, "seed"),
        ({"seed": 5}, "seed"),
        ({"blindNil": "yes"}, "blindNil"),
        ({"targetScore": True}, "targetScore"),
        ({"operatorToken": "x"}, "operatorToken"),
        ([], "body"),
    ],
)
def test_bad_bodies_are_refused_before_any_call(web: Web, body: object, field: str) -> None:
    status, res, _ = web.call("POST", "/api/new-match", body)
    assert status == 400, res
    assert res["error"]["message"].startswith(field + ":"), res


def test_only_same_origin_json_posts_are_taken(web: Web) -> None:
    ok = {"Origin": f"http://127.0.0.1:{web.port}"}
    status, res, _ = web.call("POST", "/api/new-match", {}, headers=ok)
    assert status == 200, res
    status, res, _ = web.call("POST", "/api/new-match", {}, headers={"Origin": "http://evil.test"})
    assert status == 403 and "error" in res
    status, _, _ = web.call(
        "POST", "/api/new-match", raw=b"{}", headers={"Content-Type": "text/plain"}
    )
    assert status == 415
    status, res, _ = web.call("POST", "/api/new-match", raw=b"{not json")
    assert status == 400 and res["error"]["message"].startswith("body:")
    status, _, _ = web.call("POST", "/api/new-match", raw=b"x" * (webapp.MAX_BODY + 1))
    assert status == 413
    status, _, _ = web.call("POST", "/api/other", {})
    assert status == 404


def test_new_matches_are_rate_limited(shared_server: Server, dist: Path) -> None:
    api = webapp.WebApi(
        f"127.0.0.1:{shared_server.port}", OPERATOR_TOKEN, matches_per_minute=1, burst=2
    )
    for web in _serve(dist, api):
        statuses = [web.call("POST", "/api/new-match", {})[0] for _ in range(3)]
        assert statuses == [200, 200, 429]
        _, res, _ = web.call("POST", "/api/new-match", {})
        assert res["error"]["reason"] == "RATE_LIMITED"


def test_match_summary_is_public_and_unknown_ids_are_404(web: Web) -> None:
    _, made, _ = web.call("POST", "/api/new-match", {"name": "Bo"})
    status, res, _ = web.call("GET", f"/api/match/{made['matchId']}")
    assert status == 200
    assert res["matchId"] == made["matchId"] and res["seats"][0]["name"] == "Bo"
    assert "token" not in json.dumps(res).lower()
    status, res, _ = web.call("GET", "/api/match/nosuchmatch")
    assert status == 404 and res["error"]["reason"] == "MATCH_NOT_FOUND"
    status, res, _ = web.call("GET", "/api/match/..%2F..%2Fetc")
    assert status == 404


def test_a_wrong_operator_token_is_the_web_servers_fault_not_the_pages(
    shared_server: Server, dist: Path
) -> None:
    for web in _serve(dist, webapp.WebApi(f"127.0.0.1:{shared_server.port}", "wrong")):
        status, res, _ = web.call("POST", "/api/new-match", {})
        assert status == 502
        assert "wrong" not in json.dumps(res)
        assert res["error"]["title"] == "Server error"


def test_static_files_without_listings_and_api_off_without_a_token(dist: Path) -> None:
    for web in _serve(dist, None):
        status, text, res = web.call("GET", "/")
        assert status == 200 and b"Spades" in text
        assert res.getheader("X-Content-Type-Options") == "nosniff"
        status, text, _ = web.call("GET", "/assets/app.js")
        assert status == 200 and text == b"console.log(1)"
        assert web.call("GET", "/assets/")[0] == 404  # no listing
        status, text, _ = web.call("GET", "/../../etc/passwd")
        assert b"root:" not in text
        status, res, got = web.call("POST", "/api/new-match", {})
        assert status == 501 and "operator token" in res["error"]["message"]
        assert got.getheader("Cache-Control") == "no-store"


def test_a_table_not_built_yet_gets_the_page_that_says_how(tmp_path: Path) -> None:
    for web in _serve(tmp_path / "nothing", None):
        status, text, _ = web.call("GET", "/")
        assert status == 200 and b"not built" in text


def test_the_command_prints_the_launchers_ready_line_and_stops_cleanly_on_sigterm(
    shared_server: Server, dist: Path
) -> None:
    env = dict(os.environ, SPADES_OPERATOR_TOKEN=OPERATOR_TOKEN)
    argv = [sys.executable, "-m", "spades_server.webapp", "--dir", str(dist)]
    argv += ["--target", f"127.0.0.1:{shared_server.port}"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = stack.STATIC_READY.search(line)
        assert m, line
        status, res, _ = Web(int(m["port"])).call("POST", "/api/new-match", {})
        assert status == 200 and res["seat"] == 0
        # The token travels in the environment only (the short test token
        # may well occur inside a temporary path, so compare whole arguments).
        assert OPERATOR_TOKEN not in argv and "--operator-token" not in argv
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=RPC_TIMEOUT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=RPC_TIMEOUT)
