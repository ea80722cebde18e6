"""k8s/ against the server it deploys: every overlay's kustomize build, held to
main.py's option table, webapp.py's flags, the Dockerfile, metrics.py and the
Envoy template.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import textwrap
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from deploy_support import (
    K8S,
    KNOWN_ENV,
    OVERLAYS,
    ROOT,
    SERVER,
    WEB,
    build,
    config_map,
    config_table,
    container,
    container_env,
    copied_from,
    dockerfile,
    effective,
    entrypoint,
    image_env,
    image_extras,
    instruction,
    k8s_lint,
    kustomize,
    named,
    objects,
    pod_containers,
    port,
    redis_conf,
    settings,
    stage,
    stages,
    web_command,
    web_container,
    workloads,
)
from prometheus_client.metrics import MetricWrapperBase
from spades_server import main as server_main
from spades_server import metrics

ENVOY_OVERLAY = "envoy"
LOBBY_OVERLAY = "lobby-replicas"
LOBBY = "spades-lobby"  # its Deployment and Service


def test_the_overlays_are_the_ones_the_docs_name() -> None:
    assert OVERLAYS == ("envoy", "lobby-replicas", "redis", "redis-cluster", "sqlite")


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_object_passes_its_schema(overlay: str) -> None:
    lint = k8s_lint()
    errors = [e for o in build(overlay) for e in lint.validate_object(o, lint.KUBERNETES_VERSIONS)]
    assert errors == []


def test_the_example_secrets_pass_their_schema() -> None:
    lint = k8s_lint()
    examples = lint.load_objects(K8S / "secret.example.yaml")
    assert [e for o in examples for e in lint.validate_object(o, lint.KUBERNETES_VERSIONS)] == []


# -- the server's settings ------------------------------------------------------------


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_spades_variable_is_one_main_py_knows(overlay: str) -> None:
    names = {k for k in image_env() if k.startswith("SPADES_")}
    for workload in workloads(overlay):
        for c in pod_containers(workload):
            names |= {k for k in container_env(overlay, c) if k.startswith("SPADES_")}
    for cm in objects(overlay, "ConfigMap"):
        names |= {k for k in cm.get("data", {}) if k.startswith("SPADES_")}
    unknown = names - KNOWN_ENV
    assert not unknown, f"not in main.py's OPTIONS: {sorted(unknown)}"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_main_py_accepts_the_configuration(overlay: str) -> None:
    args, env = effective(overlay)  # parse_args exits on a value it refuses
    assert args.host == "0.0.0.0"
    assert env["SPADES_OPERATOR_TOKEN"] == "secret.spades-operator.token"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_overlay_chooses_its_store(overlay: str) -> None:
    _, env = effective(overlay)
    stores = {
        "sqlite": "sqlite",
        "envoy": "sqlite",
        "redis": "redis",
        "redis-cluster": "redis",
        "lobby-replicas": "redis",
    }
    assert env["SPADES_STORE"] == stores[overlay]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_container_ports_are_the_servers(overlay: str) -> None:
    args, _ = effective(overlay)
    c = container(named(overlay, "Deployment", SERVER), SERVER)
    assert port(c, "grpc") == args.port
    assert port(c, "metrics") == args.metrics_port
    assert {p["containerPort"] for p in c["ports"]} == {args.port, args.metrics_port}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_probes_ask_the_grpc_health_service_on_the_grpc_port(overlay: str) -> None:
    args, _ = effective(overlay)
    c = container(named(overlay, "Deployment", SERVER), SERVER)
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        grpc = c[probe]["grpc"]
        assert grpc["port"] == args.port, probe
        # The names main.py sets SERVING (and NOT_SERVING while draining).
        assert grpc.get("service", "") in ("", server_main.SERVICE_NAME), probe
    assert c["readinessProbe"]["grpc"]["service"] == server_main.SERVICE_NAME


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_termination_grace_outlasts_the_pause_and_the_drain(overlay: str) -> None:
    args, env = effective(overlay)
    assert "SPADES_GRACE_SECONDS" in env, "the manifests say how long the drain lasts"
    pod = named(overlay, "Deployment", SERVER)["spec"]["template"]["spec"]
    pause = container(named(overlay, "Deployment", SERVER), SERVER)["lifecycle"]["preStop"]
    assert pause["sleep"]["seconds"] >= 1
    assert pod["terminationGracePeriodSeconds"] > pause["sleep"]["seconds"] + args.grace_seconds
    # The liveness probe does not kill a pod that is draining (NOT_SERVING).
    live = container(named(overlay, "Deployment", SERVER), SERVER)["livenessProbe"]
    assert live["periodSeconds"] * live["failureThreshold"] > args.grace_seconds


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_services_reach_the_server_ports(overlay: str) -> None:
    c = container(named(overlay, "Deployment", SERVER), SERVER)
    pod_labels = named(overlay, "Deployment", SERVER)["spec"]["template"]["metadata"]["labels"]
    for name in ("spades", "spades-headless"):
        svc = named(overlay, "Service", name)
        assert svc["spec"]["selector"].items() <= pod_labels.items()
        for p in svc["spec"]["ports"]:
            assert port(c, p["targetPort"]) == p["port"], (name, p)
    assert named(overlay, "Service", "spades-headless")["spec"]["clusterIP"] == "None"


# -- workloads: security and resources ---------------------------------------------------


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_pod_runs_unprivileged(overlay: str) -> None:
    for workload in workloads(overlay):
        where = f"{overlay}: {workload['kind']}/{workload['metadata']['name']}"
        pod = workload["spec"]["template"]["spec"]
        assert pod["automountServiceAccountToken"] is False, where
        assert pod["securityContext"]["runAsNonRoot"] is True, where
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, where
        for c in pod_containers(workload):
            sc = c["securityContext"]
            assert sc["allowPrivilegeEscalation"] is False, where
            assert sc["readOnlyRootFilesystem"] is True, where
            assert sc["capabilities"] == {"drop": ["ALL"]}, where
            uid = sc.get("runAsUser", pod["securityContext"].get("runAsUser"))
            assert isinstance(uid, int) and uid > 0, where
            for kind in ("requests", "limits"):
                assert set(c["resources"][kind]) == {"cpu", "memory"}, (where, kind)
            assert ":" in c["image"] and not c["image"].endswith(":latest"), where
    for account in objects(overlay, "ServiceAccount"):
        assert account["automountServiceAccountToken"] is False


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_server_spreads_over_nodes(overlay: str) -> None:
    pod = named(overlay, "Deployment", SERVER)["spec"]["template"]["spec"]
    keys = {t["topologyKey"] for t in pod["topologySpreadConstraints"]}
    assert "kubernetes.io/hostname" in keys


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_no_secret_is_in_the_manifests(overlay: str) -> None:
    # Secrets are the operator's (k8s/secret.example.yaml has placeholders).
    assert objects(overlay, "Secret") == []
    examples = {
        s["metadata"]["name"]: s["stringData"]
        for s in yaml.safe_load_all((K8S / "secret.example.yaml").read_text())
    }
    for workload in workloads(overlay):
        for c in pod_containers(workload):
            for item in c.get("env", []):
                ref = item.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    assert ref["key"] in examples[ref["name"]], ref
                    assert "optional" not in ref, "a pod without its Secret must not start"
    for cm in objects(overlay, "ConfigMap"):
        assert "SPADES_OPERATOR_TOKEN" not in cm.get("data", {})


# -- the store of each overlay ----------------------------------------------------------


def test_sqlite_is_one_replica_on_its_volume() -> None:
    for overlay in ("sqlite", ENVOY_OVERLAY):
        deployment = named(overlay, "Deployment", SERVER)
        assert deployment["spec"]["replicas"] == 1
        assert deployment["spec"]["strategy"] == {"type": "Recreate"}
        assert objects(overlay, "HorizontalPodAutoscaler") == []
        _, env = effective(overlay)
        c = container(deployment, SERVER)
        mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        assert env["SPADES_DB"].rpartition("/")[0] == mounts["data"]
        volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
        claim = volumes["data"]["persistentVolumeClaim"]["claimName"]
        assert named(overlay, "PersistentVolumeClaim", claim)["spec"]["accessModes"] == [
            "ReadWriteOnce"
        ]


def test_redis_runs_replicas_on_a_durable_redis() -> None:
    overlay = "redis"
    deployment = named(overlay, "Deployment", SERVER)
    assert "replicas" not in deployment["spec"], "the HorizontalPodAutoscaler owns the count"
    hpa = named(overlay, "HorizontalPodAutoscaler", SERVER)
    assert hpa["spec"]["scaleTargetRef"]["name"] == SERVER
    assert hpa["spec"]["minReplicas"] >= 2

    redis = named(overlay, "StatefulSet", "spades-redis")
    conf_map = config_map(overlay, "spades-redis-config")
    conf = redis_conf(overlay, "spades-redis-config")
    assert conf["appendonly"] == "yes"
    assert conf["appendfsync"] == "always"
    assert conf["maxmemory-policy"] == "noeviction"
    c = container(redis, "redis")
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    assert conf["dir"] == mounts["data"]
    assert [t["metadata"]["name"] for t in redis["spec"]["volumeClaimTemplates"]] == ["data"]
    pod_volumes = {v["name"]: v for v in redis["spec"]["template"]["spec"]["volumes"]}
    assert pod_volumes["config"]["configMap"]["name"] == conf_map["metadata"]["name"]
    assert c["args"][0] == f"{mounts['config']}/redis.conf"

    # The server's URL names the Redis Service and its port, which reaches Redis.
    _, env = effective(overlay)
    url = urlsplit(env["SPADES_REDIS_URL"])
    assert url.scheme == "redis"
    service = named(overlay, "Service", url.hostname or "")
    assert redis["spec"]["serviceName"] == service["metadata"]["name"]
    (service_port,) = [p for p in service["spec"]["ports"] if p["port"] == url.port]
    assert port(c, service_port["targetPort"]) == int(conf["port"]) == url.port
    assert url.password == "secret.spades-redis.password"
    assert container_env(overlay, c)["REDIS_PASSWORD"] == url.password


# -- Envoy ---------------------------------------------------------------------------------


def _envoy_config() -> dict[str, Any]:
    data = config_map(ENVOY_OVERLAY, "spades-envoy-config")["data"]["envoy.yaml"]
    config: dict[str, Any] = yaml.safe_load(data)
    return config


def _cluster_address(config: dict[str, Any], name: str) -> dict[str, Any]:
    (cluster,) = [c for c in config["static_resources"]["clusters"] if c["name"] == name]
    (endpoint,) = cluster["load_assignment"]["endpoints"][0]["lb_endpoints"]
    address: dict[str, Any] = endpoint["endpoint"]["address"]["socket_address"]
    return address


def test_envoys_cluster_is_the_headless_service() -> None:
    config = _envoy_config()
    address = _cluster_address(config, "spades_server")
    service = named(ENVOY_OVERLAY, "Service", address["address"])
    # Every ready replica's address, for Envoy's STRICT_DNS to spread calls over.
    assert service["spec"]["clusterIP"] == "None"
    (service_port,) = [p for p in service["spec"]["ports"] if p["port"] == address["port_value"]]
    args, _ = effective(ENVOY_OVERLAY)
    server = container(named(ENVOY_OVERLAY, "Deployment", SERVER), SERVER)
    assert port(server, service_port["targetPort"]) == args.port


def test_envoys_listener_is_its_container_port_and_its_admin_stays_local() -> None:
    config = _envoy_config()
    (listener,) = config["static_resources"]["listeners"]
    envoy = named(ENVOY_OVERLAY, "Deployment", "spades-envoy")
    c = container(envoy, "envoy")
    assert listener["address"]["socket_address"]["address"] == "0.0.0.0"
    assert listener["address"]["socket_address"]["port_value"] == port(c, "http")
    service = named(ENVOY_OVERLAY, "Service", "spades-envoy")
    assert [port(c, p["targetPort"]) for p in service["spec"]["ports"]] == [port(c, "http")]
    assert config["admin"]["address"]["socket_address"]["address"] == "127.0.0.1"
    # The readiness probe is a health check through Envoy: its route exists.
    assert c["readinessProbe"]["grpc"]["port"] == port(c, "http")
    assert "/grpc.health.v1.Health/" in yaml.safe_dump(config)
    volumes = {v["name"]: v for v in envoy["spec"]["template"]["spec"]["volumes"]}
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    config_name = config_map(ENVOY_OVERLAY, "spades-envoy-config")["metadata"]["name"]
    assert volumes["config"]["configMap"]["name"] == config_name
    assert c["args"][:2] == ["-c", f"{mounts['config']}/envoy.yaml"]


def test_envoys_config_is_the_templates_render() -> None:
    lint = k8s_lint()
    path = K8S / "components" / "envoy" / "envoy.yaml"
    assert lint.render_envoy(lint.recorded_flags(path)) == path.read_text()
    # The flags the file records are the Makefile's (make k8s-envoy-config).
    makefile = re.sub(r"\\\n\s*", "", (ROOT / "Makefile").read_text())
    (flags,) = re.findall(r"^K8S_ENVOY_FLAGS := (.+)$", makefile, re.MULTILINE)
    assert lint.recorded_flags(path) == flags.split()


def _routes(config: dict[str, Any]) -> list[dict[str, Any]]:
    (listener,) = config["static_resources"]["listeners"]
    (manager,) = listener["filter_chains"][0]["filters"]
    (host,) = manager["typed_config"]["route_config"]["virtual_hosts"]
    routes: list[dict[str, Any]] = host["routes"]
    return routes


def _route_of(config: dict[str, Any], path: str, content_type: str) -> dict[str, Any]:
    """The first route of Envoy's listener that takes a request for ``path``
    with ``content_type`` (prefix and header prefix matches: all it uses)."""
    for route in _routes(config):
        match = route["match"]
        if not path.startswith(match["prefix"]):
            continue
        headers = {"content-type": content_type}
        if all(
            headers.get(h["name"], "").startswith(h["string_match"]["prefix"])
            for h in match.get("headers", [])
        ):
            return route
    raise AssertionError(f"no route for {path}")


# -- the lobby on replicas of its own (overlays/lobby-replicas) -----------------------------


def _lobby_settings() -> tuple[Any, Any]:
    """How main.py reads the lobby's pods and the other server pods."""
    image = {k: v for k, v in image_env().items() if k.startswith("SPADES_")}

    def parsed(deployment: str) -> Any:
        c = container(named(LOBBY_OVERLAY, "Deployment", deployment), SERVER)
        argv = [*entrypoint()[1:], *c.get("args", [])]
        return settings(argv, {**image, **container_env(LOBBY_OVERLAY, c)})

    return parsed(LOBBY), parsed(SERVER)


def test_the_lobby_runs_on_its_own_replicas_and_the_others_serve_matches_only() -> None:
    lobby, server = _lobby_settings()
    assert (lobby.lobby, server.lobby) == ("serve", "off")
    # The same store and the same secrets: only the lobby's flag differs.
    same = ("store", "redis_url", "redis_mode", "redis_prefix", "redis_wait_replicas")
    assert [getattr(lobby, k) for k in same] == [getattr(server, k) for k in same]
    assert lobby.operator_token == server.operator_token and lobby.port == server.port
    deployment = named(LOBBY_OVERLAY, "Deployment", LOBBY)
    assert deployment["spec"]["replicas"] >= 2
    pod = deployment["spec"]["template"]
    lobby_c = container(deployment, SERVER)
    server_c = container(named(LOBBY_OVERLAY, "Deployment", SERVER), SERVER)
    assert lobby_c["image"] == server_c["image"]
    assert lobby_c["readinessProbe"]["grpc"]["service"] == "spades.v1.LobbyService"
    # Not the server's Services (their pods serve matches only), but its own.
    labels = pod["metadata"]["labels"]
    for name in ("spades", "spades-headless"):
        selector = named(LOBBY_OVERLAY, "Service", name)["spec"]["selector"]
        assert not selector.items() <= labels.items(), name
    service = named(LOBBY_OVERLAY, "Service", LOBBY)
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"].items() <= labels.items()
    pdb = named(LOBBY_OVERLAY, "PodDisruptionBudget", LOBBY)
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    # The ServiceMonitor scrapes the lobby's metrics too.
    (monitor,) = objects(LOBBY_OVERLAY, "ServiceMonitor")
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    assert "metrics" in {p["name"] for p in service["spec"]["ports"]}


def test_the_lobby_pod_is_the_server_pod_but_for_what_makes_it_the_lobby() -> None:
    """lobby-deployment.yaml repeats the base's pod (and the redis-cluster
    patch's environment): a change there that is not made here fails."""

    def pod(name: str) -> dict[str, Any]:
        spec = copy.deepcopy(named(LOBBY_OVERLAY, "Deployment", name)["spec"]["template"]["spec"])
        for constraint in spec.pop("topologySpreadConstraints"):
            assert constraint["labelSelector"]["matchLabels"]["app.kubernetes.io/component"] in (
                "server",
                "lobby",
            )
        (c,) = spec["containers"]
        c.pop("args", None)
        c["readinessProbe"]["grpc"].pop("service")
        c["env"].sort(key=lambda e: e["name"])  # the patch's come first in the server's
        return spec

    assert pod(LOBBY) == pod(SERVER)


def test_every_pod_that_stores_in_redis_may_reach_it() -> None:
    """The Redis Cluster's NetworkPolicy lets in the lobby's pods as it does
    the server's (else the lobby would never start)."""
    (policy,) = objects(LOBBY_OVERLAY, "NetworkPolicy")
    allowed = [f["podSelector"]["matchLabels"] for f in policy["spec"]["ingress"][0]["from"]]
    for name in (SERVER, LOBBY):
        labels = named(LOBBY_OVERLAY, "Deployment", name)["spec"]["template"]["metadata"]["labels"]
        assert any(a.items() <= labels.items() for a in allowed), name


def test_envoy_sends_the_lobby_to_its_replicas_and_the_rest_to_the_others() -> None:
    data = config_map(LOBBY_OVERLAY, "spades-envoy-config")["data"]["envoy.yaml"]
    config: dict[str, Any] = yaml.safe_load(data)
    for grpc in ("application/grpc", "application/grpc-web+proto", "application/proto"):
        lobby = _route_of(config, "/spades.v1.LobbyService/QuickPlay", grpc)["route"]
        assert lobby["cluster"] == "spades_lobby", grpc
        play = _route_of(config, "/spades.v1.SpadesService/Play", grpc)["route"]
        assert play["cluster"] == "spades_server", grpc
    for cluster, service in (("spades_lobby", LOBBY), ("spades_server", "spades-headless")):
        address = _cluster_address(config, cluster)
        assert address["address"] == service
        found = named(LOBBY_OVERLAY, "Service", service)
        assert address["port_value"] in {p["port"] for p in found["spec"]["ports"]}
    # The envoy overlay's Envoy keeps the lobby where the server is.
    assert _cluster_address(_envoy_config(), "spades_lobby")["address"] == "spades-headless"


# -- the web table (the envoy component's spades-web) -------------------------------------


def test_only_the_envoy_overlays_serve_the_web_table() -> None:
    for overlay in OVERLAYS:
        names = {o["metadata"]["name"] for o in build(overlay)}
        assert (WEB in names) == (overlay in (ENVOY_OVERLAY, LOBBY_OVERLAY)), overlay


def test_envoys_web_cluster_is_the_web_service() -> None:
    config = _envoy_config()
    # The page and its /api/ calls go to the cluster `web`; the API to the server.
    assert _route_of(config, "/", "text/html")["route"]["cluster"] == "web"
    api = "application/json"
    assert _route_of(config, "/api/new-match", api)["route"]["cluster"] == "web"
    for grpc in ("application/grpc", "application/grpc-web+proto", "application/proto"):
        route = _route_of(config, "/spades.v1.SpadesService/CreateMatch", grpc)
        assert route["route"]["cluster"] == "spades_server", grpc
    address = _cluster_address(config, "web")
    assert address["address"] == WEB
    service = named(ENVOY_OVERLAY, "Service", address["address"])
    deployment = named(ENVOY_OVERLAY, "Deployment", WEB)
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert deployment["spec"]["selector"]["matchLabels"] == service["spec"]["selector"]
    (service_port,) = [p for p in service["spec"]["ports"] if p["port"] == address["port_value"]]
    _, args = web_command(ENVOY_OVERLAY)
    assert port(web_container(ENVOY_OVERLAY), service_port["targetPort"]) == args.port
    assert {p["containerPort"] for p in web_container(ENVOY_OVERLAY)["ports"]} == {args.port}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_service_selects_one_workloads_pods(overlay: str) -> None:
    # The server's Services never reach the web table's pods, nor the reverse.
    for service in objects(overlay, "Service"):
        selector = service["spec"]["selector"].items()
        chosen = [
            w["metadata"]["name"]
            for w in workloads(overlay)
            if selector <= w["spec"]["template"]["metadata"]["labels"].items()
        ]
        assert len(chosen) == 1, (service["metadata"]["name"], chosen)


def test_the_web_command_is_webapps_with_flags_it_knows() -> None:
    argv, args = web_command(ENVOY_OVERLAY)  # webapp's own parser: Refused on an unknown flag
    c = web_container(ENVOY_OVERLAY)
    assert "command" in c, "the image's ENTRYPOINT is the server: the web table replaces it"
    # `python` is the image's (its PATH starts with the virtual environment's bin).
    venv = copied_from("builder")[1]
    assert image_env()["PATH"].startswith(f"{venv}/bin:")
    assert args.host == "0.0.0.0"
    # The page the web stage built, where the runtime stage puts it.
    assert str(args.dir) == copied_from("web")[1]
    # Each flag given once, and each one webapp.py has (not left to a default by a typo).
    flags = [a for a in argv[3:] if a.startswith("--")]
    assert len(flags) == len(set(flags)) and set(flags) <= {
        "--dir",
        "--host",
        "--port",
        "--target",
        "--matches-per-minute",
    }
    assert {"--dir", "--host", "--port", "--target"} <= set(flags)


def test_the_web_table_calls_the_service_through_envoy() -> None:
    _, args = web_command(ENVOY_OVERLAY)
    host, _, target_port = args.target.rpartition(":")
    service = named(ENVOY_OVERLAY, "Service", host)
    assert service["metadata"]["name"] == "spades-envoy"
    (service_port,) = [p for p in service["spec"]["ports"] if p["port"] == int(target_port)]
    envoy = container(named(ENVOY_OVERLAY, "Deployment", "spades-envoy"), "envoy")
    (listener,) = _envoy_config()["static_resources"]["listeners"]
    assert (
        port(envoy, service_port["targetPort"])
        == listener["address"]["socket_address"]["port_value"]
    )
    # With the server's own operator token (the same Secret and key).
    server = container(named(ENVOY_OVERLAY, "Deployment", SERVER), SERVER)
    web_env = container_env(ENVOY_OVERLAY, web_container(ENVOY_OVERLAY))
    assert web_env["SPADES_OPERATOR_TOKEN"] == "secret.spades-operator.token"
    assert (
        web_env["SPADES_OPERATOR_TOKEN"]
        == container_env(ENVOY_OVERLAY, server)["SPADES_OPERATOR_TOKEN"]
    )
    # Nothing else: the server's ConfigMap (spades-config) is not the web table's.
    assert set(web_env) == {"SPADES_OPERATOR_TOKEN"}


def test_the_web_pods_run_as_the_servers_do() -> None:
    server = named(ENVOY_OVERLAY, "Deployment", SERVER)
    web = named(ENVOY_OVERLAY, "Deployment", WEB)
    server_pod, web_pod = server["spec"]["template"]["spec"], web["spec"]["template"]["spec"]
    for key in ("runAsNonRoot", "runAsUser", "runAsGroup", "seccompProfile"):
        assert web_pod["securityContext"][key] == server_pod["securityContext"][key], key
    user, _, group = instruction("USER").partition(":")
    assert (web_pod["securityContext"]["runAsUser"], web_pod["securityContext"]["runAsGroup"]) == (
        int(user),
        int(group),
    )
    c, s = web_container(ENVOY_OVERLAY), container(server, SERVER)
    assert c["securityContext"] == s["securityContext"]
    # The same image, whatever name and tag the server's is given (replacements).
    assert c["image"] == s["image"]
    # It writes nothing (test_image_run.py runs it with nothing writable).
    assert "volumeMounts" not in c and "volumes" not in web_pod
    assert (
        web_pod["serviceAccountName"]
        == named(ENVOY_OVERLAY, "ServiceAccount", WEB)["metadata"]["name"]
    )


def test_the_web_probes_ask_for_the_page_and_it_drains_in_time() -> None:
    _, args = web_command(ENVOY_OVERLAY)
    c = web_container(ENVOY_OVERLAY)
    for probe in ("readinessProbe", "livenessProbe"):
        get = c[probe]["httpGet"]
        assert get["path"] == "/", probe
        target = get["port"]
        assert (port(c, target) if isinstance(target, str) else target) == args.port, probe
    pod = named(ENVOY_OVERLAY, "Deployment", WEB)["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] > c["lifecycle"]["preStop"]["sleep"]["seconds"]
    # More than one replica, and a disruption budget that lets a drain take one.
    web = named(ENVOY_OVERLAY, "Deployment", WEB)
    pdb = named(ENVOY_OVERLAY, "PodDisruptionBudget", WEB)
    labels = web["spec"]["template"]["metadata"]["labels"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert web["spec"]["replicas"] > pdb["spec"]["maxUnavailable"] >= 1


def test_the_web_table_follows_the_servers_image_in_any_overlay(tmp_path: Path) -> None:
    # The envoy component on the redis overlay (docs/operations.md, "Envoy"), with
    # the image renamed where the docs say: the web table's image follows.
    shutil.copytree(K8S, tmp_path / "k8s")
    overlay = tmp_path / "k8s" / "overlays" / "redis-envoy"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        textwrap.dedent(
            """\
            resources: [../redis]
            components: [../../components/envoy]
            images:
              - name: spades-server
                newName: registry.example/spades-server
                newTag: 9.9.9
            """
        )
    )
    out = subprocess.run(
        [str(kustomize()), "build", str(overlay)], check=True, capture_output=True, text=True
    ).stdout
    built = {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(out) if o}
    server = container(built[("Deployment", SERVER)], SERVER)
    web = container(built[("Deployment", WEB)], "web")
    assert server["image"] == web["image"] == "registry.example/spades-server:9.9.9"


# -- monitoring ------------------------------------------------------------------------------


def _samples() -> set[str]:
    """Every sample name metrics.py's metrics expose."""
    suffixes = {
        "counter": ("_total", "_created"),
        "gauge": ("",),
        "histogram": ("_bucket", "_count", "_sum", "_created"),
    }
    names = set()
    for value in vars(metrics).values():
        if isinstance(value, MetricWrapperBase):
            (family,) = value.describe()
            names |= {family.name + s for s in suffixes[family.type]}
    return names


def _rules(overlay: str) -> dict[str, dict[str, Any]]:
    (rule,) = objects(overlay, "PrometheusRule")
    return {r["alert"]: r for group in rule["spec"]["groups"] for r in group["rules"]}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_alerts_name_real_metrics(overlay: str) -> None:
    samples = _samples()
    rules = _rules(overlay)
    assert len(rules) >= 8
    for name, rule in rules.items():
        used = set(re.findall(r"\bspades_[a-z_]+", rule["expr"]))
        assert used <= samples, (name, used - samples)
    # The job the alerts select is the one the ServiceMonitor gives the series.
    (monitor,) = objects(overlay, "ServiceMonitor")
    service = named(overlay, "Service", "spades")
    job = service["metadata"]["labels"][monitor["spec"]["jobLabel"]]
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    assert monitor["spec"]["endpoints"][0]["port"] in {p["name"] for p in service["spec"]["ports"]}
    for name, rule in rules.items():
        for selected in re.findall(r'job="([^"]+)"', rule["expr"]):
            assert selected == job, name


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_alert_thresholds_follow_the_limits(overlay: str) -> None:
    args, _ = effective(overlay)
    rules = _rules(overlay)

    def threshold(alert: str) -> float:
        return float(rules[alert]["expr"].rpartition(">")[2])

    assert threshold("SpadesStreamsNearLimit") == 0.8 * args.max_calls
    assert threshold("SpadesMatchesNearLimit") == 0.9 * args.max_matches


# -- the image -------------------------------------------------------------------------------


def test_the_image_runs_the_server_as_the_pods_user() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert entrypoint()[0] in pyproject["project"]["scripts"]
    assert entrypoint()[:3] == ["spades-server", "--host", "0.0.0.0"]
    user, _, group = instruction("USER").partition(":")
    for overlay in OVERLAYS:
        pod = named(overlay, "Deployment", SERVER)["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsUser"] == int(user)
        assert pod["securityContext"]["runAsGroup"] == int(group)
        args, _ = effective(overlay)
        exposed = {int(p) for p in instruction("EXPOSE").split()}
        assert exposed == {args.port, args.metrics_port, web_command(ENVOY_OVERLAY)[1].port}


def test_the_image_has_what_each_overlays_store_needs() -> None:
    # A store whose library is an extra of pyproject.toml (redis-py for
    # --store redis) is in the image only if the Dockerfile installs that extra.
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert set(image_extras()) <= set(extras)
    for overlay in OVERLAYS:
        store = effective(overlay)[1]["SPADES_STORE"]
        assert store not in extras or store in image_extras(), (overlay, store)
    assert "redis" in image_extras()


def test_every_stage_is_an_exact_base() -> None:
    # The builder and the runtime stage: one Python base; the web stage: Node 20.
    python = {base for name, base, _ in stages() if name != "web"}
    (base,) = python
    assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?", base)
    node, _ = stage("web")
    version = re.fullmatch(r"node:(20)\.(\d+)\.(\d+)-bookworm-slim(@sha256:[0-9a-f]{64})?", node)
    assert version, node
    # At least what clients/web/package.json's engines ask (Vite needs >= 20.19).
    engines = json.loads((ROOT / "clients" / "web" / "package.json").read_text())["engines"]
    least = re.fullmatch(r">=(\d+)\.(\d+)", engines["node"])
    assert least and (20, int(version[2])) >= (int(least[1]), int(least[2]))
    assert not any(name in ("ARG", "ENV") and "TOKEN" in rest for name, rest in dockerfile())


def test_the_web_stages_generator_is_the_builders() -> None:
    # The TypeScript client's code comes from the same protoc (grpcio-tools) as
    # the Python stubs.
    def pins(steps: list[tuple[str, str]]) -> dict[str, str]:
        found = {}
        for name, rest in steps:
            if name == "RUN":
                found.update(re.findall(r"([A-Za-z0-9_.-]+)==([A-Za-z0-9_.+-]+)", rest))
        return found

    builder, web = pins(stage("builder")[1]), pins(stage("web")[1])
    assert web["grpcio-tools"] == builder["grpcio-tools"]
    assert {"grpcio-tools", "googleapis-common-protos", "protobuf"} <= set(web)


def test_the_runtime_stage_gets_the_web_tables_build() -> None:
    # What the web stage's last step builds (Vite's outDir, in its last WORKDIR)
    # is what the runtime stage copies.
    workdirs = [rest for name, rest in stage("web")[1] if name == "WORKDIR"]
    config = (ROOT / "clients" / "web" / "vite.config.ts").read_text()
    (out_dir,) = re.findall(r'outDir: "([^"]+)"', config)
    assert workdirs[-1] == "/src/clients/web"
    assert copied_from("web")[0] == f"{workdirs[-1]}/{out_dir}"
    runs = [rest for name, rest in stage("web")[1] if name == "RUN"]
    assert "vite build" in runs[-1]


# -- docs/operations.md ----------------------------------------------------------------------


def test_the_operations_table_is_main_pys_settings() -> None:
    doc = (ROOT / "docs" / "operations.md").read_text()
    begin, end = "<!-- settings: begin -->\n", "<!-- settings: end -->"
    table = doc[doc.index(begin) + len(begin) : doc.index(end)]
    expected = config_table()
    assert table == expected, "docs/operations.md's table is stale; paste:\n" + expected


def test_the_external_redis_example_builds(tmp_path: Path) -> None:
    doc = (ROOT / "docs" / "operations.md").read_text()
    section = doc[doc.index("**An external Redis**") :]
    block = section[section.index("```yaml\n") + 8 : section.index("```\n", 10)]
    kustomization = yaml.safe_load(textwrap.dedent(block))
    assert kustomization["resources"] == ["../redis"]
    # Where the page puts it: k8s/overlays/redis-external/ (in a copy of k8s/).
    overlay = tmp_path / "k8s" / "overlays" / "redis-external"
    shutil.copytree(K8S, tmp_path / "k8s")
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(textwrap.dedent(block))
    out = subprocess.run(
        [str(kustomize()), "build", str(overlay)], check=True, capture_output=True, text=True
    ).stdout
    built = [o for o in yaml.safe_load_all(out) if o]
    assert not [o for o in built if o["metadata"]["name"].startswith("spades-redis")]
    c = container(next(o for o in built if o["kind"] == "Deployment"), SERVER)
    url = next(e["value"] for e in c["env"] if e["name"] == "SPADES_REDIS_URL")
    assert "@redis.example.internal:" in url
