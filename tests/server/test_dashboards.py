"""The Grafana dashboards and the alerts (k8s/components/monitoring/) against
the metrics a real server exports, and the conventional gRPC server metrics
(grpc_server_*) they read.

A server (lobby on, so that LobbyService answers) is given a little of every
kind of traffic: matches with bots and with humans, an action and a refusal,
the three kinds of stream, quick play. Then every metric name that a panel's
query, a dashboard variable or an alert rule names must be one /metrics
serves, and every label such a selector or grouping names must be one of the
metric's own (or a label Prometheus adds to every series of the target).
PromQL is read with a small parser of its own (``metric_selectors``), tested
here too.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import grpc
import pytest
import yaml
from lobby_harness import LOBBY_FLAGS, player
from prometheus_client.parser import text_string_to_metric_families
from server_harness import (
    OP,
    RPC_TIMEOUT,
    PlayCall,
    Server,
    StreamReader,
    choose,
    create_match,
    expect_failure,
    get_view,
    is_match_ended,
    seats_to_act,
    spectate,
    step_humans,
    stream_events,
    submit,
    wait_until,
)
from spades_server.gen.spades.edge.v1 import link_pb2
from spades_server.gen.spades.v1 import lobby_pb2 as lpb
from spades_server.gen.spades.v1 import spades_pb2 as pb

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "k8s" / "components" / "monitoring"
DASHBOARDS = sorted((MONITORING / "dashboards").glob("*.json"))
SPADES = "spades.v1.SpadesService"
LOBBY = "spades.v1.LobbyService"

# Series the server does not export but the rules may read: Prometheus's own
# (up) and kube-state-metrics' (kube_*).
NOT_THE_SERVERS = re.compile(r"^(up|kube_[a-z0-9_]+)$")
# Labels Prometheus (the ServiceMonitor's scrape) adds to every series.
TARGET_LABELS = {"job", "instance", "namespace", "pod", "service", "endpoint", "container"}

# -- PromQL, as far as names go ----------------------------------------------------------

FUNCTIONS = {
    "abs", "absent", "absent_over_time", "avg_over_time", "ceil", "changes", "clamp",
    "clamp_max", "clamp_min", "count_over_time", "day_of_month", "day_of_week", "day_of_year",
    "days_in_month", "delta", "deriv", "exp", "floor", "histogram_avg", "histogram_count",
    "histogram_fraction", "histogram_quantile", "histogram_stddev", "histogram_stdvar",
    "histogram_sum", "holt_winters", "hour", "idelta", "increase", "irate", "label_join",
    "label_replace", "last_over_time", "ln", "log10", "log2", "mad_over_time",
    "max_over_time", "min_over_time", "minute", "month", "predict_linear",
    "present_over_time", "quantile_over_time", "rate", "resets", "round", "scalar", "sgn",
    "sort", "sort_desc", "sqrt", "stddev_over_time", "stdvar_over_time", "sum_over_time",
    "time", "timestamp", "vector", "year",
    # aggregations
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
    "bottomk", "topk", "quantile", "limitk", "limit_ratio",
    # Grafana's variable queries
    "label_values", "label_names", "metrics", "query_result",
}  # fmt: skip
KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
    "unless", "offset", "atan2", "inf", "nan",
}  # fmt: skip
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_VARIABLE = re.compile(r"\$\{[^}]*\}|\$\w+|\[\[\w+\]\]")
_IDENT = re.compile(r"(?<![\w.:])([A-Za-z_:][A-Za-z0-9_:]*)")
_MATCHER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)")


def metric_selectors(expr: str) -> tuple[list[tuple[str, set[str]]], set[str]]:
    """The metric names ``expr`` reads, each with the label names its matchers
    name; and the label names of its groupings (``by``, ``on``, ...)."""
    text = _VARIABLE.sub("0", _STRING.sub('""', expr))  # no string nor variable left
    grouped: set[str] = set()
    variable_query = re.fullmatch(r"\s*label_values\((.*),\s*([A-Za-z_]\w*)\s*\)\s*", text)
    if variable_query:  # Grafana's label_values(selector, label)
        text = variable_query[1]
        grouped.add(variable_query[2])
    for _, names in _GROUPING.findall(text):
        grouped |= {n.strip() for n in names.split(",") if n.strip()}
    text = _GROUPING.sub(" ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)  # ranges and subqueries: [5m], [1h:5m]
    text = re.sub(r"\boffset\s+-?\w+", " ", text)
    selectors: list[tuple[str, set[str]]] = []
    pos = 0
    while True:
        found = _IDENT.search(text, pos)
        if found is None:
            return selectors, grouped
        name, end = found[1], found.end()
        rest = text[end:].lstrip()
        pos = end
        if rest.startswith("(") or name in KEYWORDS or name in FUNCTIONS:
            if name not in FUNCTIONS and name not in KEYWORDS:
                raise AssertionError(f"{name}(: not a PromQL function this test knows ({expr})")
            continue
        labels: set[str] = set()
        if rest.startswith("{"):
            start = text.index("{", end)
            close = text.index("}", start)
            labels = set(_MATCHER.findall(text[start + 1 : close]))
            pos = close + 1
        elif re.match(r"[eE][+-]?\d", name) and text[found.start() - 1 : found.start()].isdigit():
            continue  # the exponent of a number (1e3)
        selectors.append((name, labels))


def test_the_promql_reader_finds_names_and_labels() -> None:
    selectors, grouped = metric_selectors(
        "histogram_quantile(0.99, sum by (le, grpc_method) (rate(grpc_server_handling_seconds_"
        'bucket{job="spades", namespace=~"$namespace", grpc_type!="unary"}[$__rate_interval])))'
        " / on (pod) group_left sum without (x) (spades_open_streams) > 1e3 "
        'or absent(up{job="a{b}"}) offset 5m'
    )
    assert selectors == [
        ("grpc_server_handling_seconds_bucket", {"job", "namespace", "grpc_type"}),
        ("spades_open_streams", set()),
        ("up", {"job"}),
    ]
    assert grouped == {"le", "grpc_method", "pod", "x"}
    assert metric_selectors('label_values(grpc_server_started_total{job="s"}, namespace)') == (
        [("grpc_server_started_total", {"job"})],
        {"namespace"},
    )


# -- what the dashboards and rules ask for --------------------------------------------------


def dashboard_queries() -> list[tuple[str, str]]:
    """(where, expr) of every query of every dashboard: panels' and variables'."""
    lint = _k8s_lint()
    found = []
    for path in DASHBOARDS:
        board = json.loads(path.read_text())
        for panel in lint.dashboard_panels(board):
            for target in panel.get("targets", []):
                found.append((f"{path.name}: {panel['title']}", target["expr"]))
        for variable in board.get("templating", {}).get("list", []):
            query = variable.get("query")
            if variable.get("type") == "query":
                expr = query["query"] if isinstance(query, dict) else query
                found.append((f"{path.name}: variable {variable['name']}", expr))
    return found


def rule_queries() -> list[tuple[str, str]]:
    rule = yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())
    return [
        (f"prometheusrule.yaml: {r.get('alert') or r.get('record')}", r["expr"])
        for group in rule["spec"]["groups"]
        for r in group["rules"]
    ]


def _k8s_lint() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("k8s_lint", ROOT / "k8s" / "lint.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the server's metrics page -------------------------------------------------------------

OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def scrape(server: Server, accept: str | None = None) -> tuple[str, str]:
    """The metrics page, and its content type."""
    request = urllib.request.Request(server.metrics_url)
    if accept is not None:
        request.add_header("Accept", accept)
    with urllib.request.urlopen(request, timeout=RPC_TIMEOUT) as resp:
        return resp.read().decode(), resp.headers["Content-Type"]


class Exported:
    """What a metrics page (the Prometheus text format) serves: every sample
    name, the labels of its samples, and their values."""

    SUFFIXES: ClassVar[dict[str, tuple[str, ...]]] = {
        "counter": ("_total", "_created"),
        "histogram": ("_bucket", "_sum", "_count", "_created"),
        "summary": ("", "_sum", "_count", "_created"),
        "gauge": ("",),
        "info": ("_info",),
        "stateset": ("",),
        "unknown": ("",),
    }

    def __init__(self, text: str) -> None:
        self.labels: dict[str, set[str]] = {}
        self.values: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
        for family in text_string_to_metric_families(text):
            # A family with no sample yet (a labelled metric nothing has
            # counted: the replicas' events without Redis) is exported too.
            for suffix in self.SUFFIXES[family.type]:
                self.labels.setdefault(family.name + suffix, set())
            for sample in family.samples:
                self.labels.setdefault(sample.name, set()).update(sample.labels)
                self.values[sample.name, frozenset(sample.labels.items())] = sample.value

    def value(self, name: str, **labels: str) -> float:
        """The sample ``name`` with these labels (0 if absent)."""
        return self.values.get((name, frozenset(labels.items())), 0.0)

    def since(self, before: Exported, name: str, labels: dict[str, str]) -> float:
        """How much sample ``name`` with ``labels`` grew since ``before``."""
        return self.value(name, **labels) - before.value(name, **labels)


def exported(server: Server) -> Exported:
    return Exported(scrape(server)[0])


# -- the server, with traffic ----------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("dashboards"), *LOBBY_FLAGS)
    srv.start()
    yield srv
    assert srv.stop() == 0, srv.log_tail()


def drive_traffic(srv: Server) -> None:
    """A little of everything the dashboards show."""
    stub = srv.stub
    stub.Ping(pb.PingRequest(), timeout=RPC_TIMEOUT)
    # Bots play a short match to its end (their think time, their actions,
    # appends and snapshots) while a spectator watches it.
    bots = create_match(stub, bots=(0, 1, 2, 3), seed=6, target_score=100)
    watcher = StreamReader(spectate(stub, bots.match_id), stop=is_match_ended)
    # Humans: an action (SubmitAction), an action out of turn (refused, with
    # its reason), a seat's stream, a Play call and its action.
    table = create_match(stub, seed=9)
    assert step_humans(stub, table) is not None
    view = get_view(stub, table, 0)
    waiting = next(s for s in range(4) if s not in seats_to_act(view))
    expect_failure(
        grpc.StatusCode.FAILED_PRECONDITION,
        submit,
        stub,
        table,
        waiting,
        choose(get_view(stub, table, seats_to_act(view)[0])),
    )
    events = StreamReader(stream_events(stub, table, 0), limit=1)
    events.wait_for(bool, "a seat's first event")
    events.cancel()
    seat = seats_to_act(get_view(stub, table, 0))[0]
    play = PlayCall(stub, table, seat)
    result = play.result(play.act(choose(get_view(stub, table, seat))))
    assert not result.HasField("error"), result
    play.cancel()
    # The lobby: a quick play ticket, watched, then cancelled.
    p = player(srv)
    ticket = p.call("QuickPlay", lpb.QuickPlayRequest()).ticket
    watch = p.lobby.WatchTicket(
        lpb.WatchTicketRequest(ticket_id=ticket.ticket_id), metadata=p.md, timeout=20
    )
    next(iter(watch))
    p.call("CancelTicket", lpb.CancelTicketRequest(ticket_id=ticket.ticket_id))
    watch.cancel()
    p.call("ListTables", lpb.ListTablesRequest())
    watcher.wait_for(lambda evs: any(map(is_match_ended, evs)), "the bots' match to end", 60)
    watcher.join()


def test_dashboards_and_alerts_read_only_metrics_the_server_exports(served: Server) -> None:
    assert [p.name for p in DASHBOARDS] == [
        "spades-bots.json",
        "spades-matches-streams.json",
        "spades-overview.json",
        "spades-quick-play.json",
        "spades-store-redis.json",
    ]
    drive_traffic(served)
    watch = grpc_labels(LOBBY, "WatchTicket", "server_stream")

    def watch_ended() -> bool:
        page = exported(served)
        codes = ("OK", "Canceled")  # the ticket cancelled, or the client gone first
        return sum(page.value("grpc_server_handled_total", **watch, grpc_code=c) for c in codes) > 0

    wait_until(watch_ended, "the ticket's watch to end")
    page = exported(served)
    queries = dashboard_queries() + rule_queries()
    assert len(queries) > 50
    unknown_metrics, unknown_labels = [], []
    for where, expr in queries:
        selectors, grouped = metric_selectors(expr)
        assert selectors, (where, expr)
        have: set[str] = set(TARGET_LABELS)
        for name, labels in selectors:
            if NOT_THE_SERVERS.match(name):
                continue
            if name not in page.labels:
                unknown_metrics.append(f"{where}: {name}")
                continue
            sampled = page.labels[name]
            if not sampled:
                continue  # no series yet: its labels cannot be checked here
            have |= sampled
            foreign = labels - sampled - TARGET_LABELS
            unknown_labels += [f"{where}: {name}{{{label}}}" for label in foreign]
        if len(have) > len(TARGET_LABELS):
            unknown_labels += [f"{where}: by ({label})" for label in grouped - have]
    assert unknown_metrics == [], "metrics the server does not export"
    assert unknown_labels == [], "labels the server's metrics do not have"
    # The traffic made the series the boards' panels are mostly about.
    for name in (
        "grpc_server_handling_seconds_bucket",
        "grpc_server_msg_sent_total",
        "spades_bot_think_seconds_bucket",
        "spades_actions_total",
        "spades_rejections_total",
        "spades_store_latency_seconds_bucket",
    ):
        assert page.labels[name], f"no {name} series after the traffic"


# -- the grpc_server_* metrics ------------------------------------------------------------------


def grpc_labels(service: str, method: str, kind: str) -> dict[str, str]:
    return {"grpc_type": kind, "grpc_service": service, "grpc_method": method}


def wait_handled(
    srv: Server, before: Exported, labels: dict[str, str], code: str, what: str
) -> Exported:
    """The page once one more call of ``labels`` has ended with ``code`` (a
    stream's end reaches the server after the client has moved on)."""
    name = "grpc_server_handled_total"
    target = before.value(name, **labels, grpc_code=code) + 1
    found: list[Exported] = []

    def done() -> bool:
        found[:] = [exported(srv)]
        return found[0].value(name, **labels, grpc_code=code) >= target

    wait_until(done, what)
    return found[0]


def test_grpc_server_metrics_count_unary_calls_refusals_and_streams(served: Server) -> None:
    stub = served.stub
    ping = grpc_labels(SPADES, "Ping", "unary")
    before = exported(served)
    stub.Ping(pb.PingRequest(), timeout=RPC_TIMEOUT)
    after = wait_handled(served, before, ping, "OK", "the Ping to be counted")
    assert after.since(before, "grpc_server_started_total", ping) == 1
    assert after.since(before, "grpc_server_handling_seconds_count", ping) == 1
    assert ("grpc_server_msg_sent_total", frozenset(ping.items())) not in after.values

    # A refusal: its code, as grpc-go names it.
    get = grpc_labels(SPADES, "GetMatch", "unary")
    before = after
    expect_failure(
        grpc.StatusCode.NOT_FOUND,
        stub.GetMatch,
        pb.GetMatchRequest(match_id="no-such-match"),
        metadata=OP,
        timeout=RPC_TIMEOUT,
    )
    after = wait_handled(served, before, get, "NotFound", "the refused GetMatch to be counted")
    assert after.value("grpc_server_handled_total", **get, grpc_code="NOT_FOUND") == 0

    # A server stream the client ends: Canceled, its request and messages counted.
    table = create_match(stub, seed=3)
    watch = grpc_labels(SPADES, "StreamEvents", "server_stream")
    before = exported(served)
    reader = StreamReader(stream_events(stub, table, 0), limit=1)
    reader.wait_for(bool, "the first event")
    reader.cancel()
    after = wait_handled(served, before, watch, "Canceled", "the stream's end to be counted")
    assert_one_stream(after, before, watch, received=1)

    # A bidirectional stream: its open and its action received, the result sent.
    play_labels = grpc_labels(SPADES, "Play", "bidi_stream")
    before = exported(served)
    seat = seats_to_act(get_view(stub, table, 0))[0]
    call = PlayCall(stub, table, seat)
    result = call.result(call.act(choose(get_view(stub, table, seat))))
    assert not result.HasField("error"), result
    call.cancel()
    after = wait_handled(served, before, play_labels, "Canceled", "the Play call's end")
    assert after.since(before, "grpc_server_msg_received_total", play_labels) == 2
    assert after.since(before, "grpc_server_msg_sent_total", play_labels) >= 1

    # A stream refused before its first message.
    spectate_labels = grpc_labels(SPADES, "Spectate", "server_stream")
    before = after
    failure = expect_failure(
        grpc.StatusCode.NOT_FOUND, lambda: list(spectate(stub, "no-such-match"))
    )
    assert failure.reason
    wait_handled(served, before, spectate_labels, "NotFound", "the refused stream")

    # LobbyService goes through the same wrappers.
    quick = grpc_labels(LOBBY, "QuickPlay", "unary")
    before = exported(served)
    p = player(served)
    ticket = p.call("QuickPlay", lpb.QuickPlayRequest()).ticket
    wait_handled(served, before, quick, "OK", "QuickPlay to be counted")
    p.call("CancelTicket", lpb.CancelTicketRequest(ticket_id=ticket.ticket_id))


def assert_one_stream(
    after: Exported, before: Exported, labels: dict[str, str], *, received: int
) -> None:
    """One stream begun and ended since ``before``, ``received`` messages read, some sent."""
    for name, more in (
        ("grpc_server_started_total", 1),
        ("grpc_server_msg_received_total", received),
        ("grpc_server_handling_seconds_count", 1),
    ):
        assert after.since(before, name, labels) == more, name
    assert after.since(before, "grpc_server_msg_sent_total", labels) >= 1


def test_an_edges_play_calls_are_counted_as_grpc_ones(
    make_server: Callable[..., Server],
) -> None:
    from test_edge_link import FakeEdge, edge_address

    server = make_server("--edge-link", "127.0.0.1:0", "--actions-per-second", "1000")
    address = edge_address(server)
    table = create_match(server.stub, seed=4)
    play_labels = grpc_labels(SPADES, "Play", "bidi_stream")
    before = exported(server)
    seat = seats_to_act(get_view(server.stub, table, 0))[0]
    with FakeEdge(address) as edge:
        edge.open(1, table, seat)
        edge.act(1, choose(get_view(server.stub, table, seat)), "a1")
        assert not edge.wait_result(1, "a1").HasField("error")
        edge.send(link_pb2.Up(conn=1, closed=True))
        after = wait_handled(server, before, play_labels, "Canceled", "the edge's call to end")
    assert_one_stream(after, before, play_labels, received=2)


# -- exemplars ---------------------------------------------------------------------------------


def test_a_traced_calls_latency_carries_its_trace_id_as_an_exemplar(
    make_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    tracing = pytest.importorskip(
        "spades_server.tracing", reason="no tracing module: exemplars need its traces"
    )
    env = {"OTEL_TRACES_EXPORTER": "console", "OTEL_TRACES_SAMPLER": "parentbased_always_on"}
    try:
        tracing.check(env)
    except tracing.TracingConfigError as e:
        pytest.skip(f"tracing cannot be turned on here: {e}")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    server = make_server()
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    traceparent = (("traceparent", f"00-{trace_id}-00f067aa0ba902b7-01"),)
    server.stub.Ping(pb.PingRequest(), metadata=traceparent, timeout=RPC_TIMEOUT)
    ping = grpc_labels(SPADES, "Ping", "unary")
    wait_until(
        lambda: exported(server).value("grpc_server_handled_total", **ping, grpc_code="OK") >= 1,
        "the traced Ping to be counted",
    )

    text, content_type = scrape(server, OPENMETRICS)
    assert content_type.startswith("application/openmetrics-text"), content_type
    exemplars = [
        line
        for line in text.splitlines()
        if line.startswith("grpc_server_handling_seconds_bucket{")
        and 'grpc_method="Ping"' in line
        and " # {" in line
    ]
    assert len(exemplars) == 1, exemplars
    assert f'# {{trace_id="{trace_id}"}}' in exemplars[0]
    # The classic text format (no Accept header) has no exemplars.
    plain, content_type = scrape(server)
    assert content_type.startswith("text/plain")
    assert " # {" not in plain

    # An untraced call (no sampled parent: its span is not recorded under
    # parentbased sampling) adds no exemplar of its own.
    unsampled = (("traceparent", f"00-{'1' * 32}-00f067aa0ba902b7-00"),)
    server.stub.Ping(pb.PingRequest(), metadata=unsampled, timeout=RPC_TIMEOUT)
    wait_until(
        lambda: exported(server).value("grpc_server_handled_total", **ping, grpc_code="OK") >= 2,
        "the untraced Ping to be counted",
    )
    assert "1" * 32 not in scrape(server, OPENMETRICS)[0]
