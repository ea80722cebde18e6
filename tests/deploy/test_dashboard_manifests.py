"""The monitoring component's Grafana dashboards as the overlays build them:
one ConfigMap per file of k8s/components/monitoring/dashboards/, as the Grafana
sidecar of kube-prometheus-stack finds them. Whether their queries name real
metrics is tests/server/test_dashboards.py's (against a running server)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from deploy_support import K8S, OVERLAYS, build, k8s_lint

DASHBOARDS = K8S / "components" / "monitoring" / "dashboards"


def dashboard_maps(overlay: str) -> list[dict[str, Any]]:
    lint = k8s_lint()
    return [o for o in build(overlay) if lint.is_dashboard(o)]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_dashboard_file_is_one_configmap_the_sidecar_loads(overlay: str) -> None:
    files = {p.name: p.read_text() for p in DASHBOARDS.glob("*.json")}
    assert len(files) == 5
    maps = dashboard_maps(overlay)
    held = {key: text for m in maps for key, text in m["data"].items()}
    assert held == files
    uids = set()
    for m in maps:
        assert len(m["data"]) == 1, m["metadata"]["name"]
        assert m["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert m["metadata"]["annotations"]["grafana_folder"] == "Spades"
        # No hash suffix: an edit replaces the ConfigMap, never adds a second
        # copy of the same dashboard uid beside the old one.
        (key,) = m["data"]
        assert m["metadata"]["name"] == "spades-dashboard-" + key.removeprefix(
            "spades-"
        ).removesuffix(".json")
        board = json.loads(m["data"][key])
        uids.add(board["uid"])
        assert board["uid"] == key.removesuffix(".json")
        assert board["title"].startswith("Spades / ")
        # Each query names the data source variable, so any Prometheus works.
        variables = {v["name"] for v in board["templating"]["list"]}
        assert {"datasource", "namespace"} <= variables
        for panel in k8s_lint().dashboard_panels(board):
            assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
            for target in panel["targets"]:
                assert 'job="spades"' in target["expr"], (panel["title"], target["expr"])
                assert 'namespace=~"$namespace"' in target["expr"], panel["title"]
    assert len(uids) == len(maps)


def test_every_panel_has_its_own_place() -> None:
    lint = k8s_lint()
    for path in DASHBOARDS.glob("*.json"):
        board = json.loads(path.read_text())
        ids = [p["id"] for p in board["panels"]]
        assert len(ids) == len(set(ids)), path.name
        cells: set[tuple[int, int]] = set()
        for panel in board["panels"]:
            pos = panel["gridPos"]
            assert pos["x"] >= 0 and pos["x"] + pos["w"] <= 24, (path.name, panel["title"])
            mine = {
                (x, y)
                for x in range(pos["x"], pos["x"] + pos["w"])
                for y in range(pos["y"], pos["y"] + pos["h"])
            }
            assert not mine & cells, f"{path.name}: {panel['title']} overlaps another panel"
            cells |= mine
        assert lint.dashboard_panels(board), path.name


def test_the_lint_refuses_a_broken_dashboard() -> None:
    lint = k8s_lint()
    (good,) = [m for m in dashboard_maps("sqlite") if "spades-bots.json" in m["data"]]
    assert lint.validate_object(good, lint.KUBERNETES_VERSIONS) == []
    broken = json.loads(json.dumps(good))
    broken["data"]["spades-bots.json"] = "{not json"
    assert any("not JSON" in e for e in lint.validate_object(broken, lint.KUBERNETES_VERSIONS))
    board = json.loads(good["data"]["spades-bots.json"])
    lint.dashboard_panels(board)[0]["targets"][0]["expr"] = ""
    del board["uid"]
    broken["data"]["spades-bots.json"] = json.dumps(board)
    errors = lint.validate_object(broken, lint.KUBERNETES_VERSIONS)
    assert any("no uid" in e for e in errors) and any("no expr" in e for e in errors), errors
