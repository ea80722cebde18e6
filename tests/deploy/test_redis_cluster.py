"""k8s/overlays/redis-cluster: the server on a Redis Cluster of six nodes (3
primaries, a replica each) that a Job creates. Its build is held to what
the server's cluster mode needs (main.py, store/redis_cluster.py), and its
script (redis-cluster.sh: the nodes' init container, probe and preStop hook,
and the Job) is run here with stand-ins for getent and redis-cli.

On real nodes, test_image_run.py runs the Job's, the probe's and the
preStop hook's steps on six redis-servers with two server replicas on them.
The init step's rewrite was tried by hand on real nodes (Debian's Redis 7.0
on loopback addresses): after every node restarted on a new address the
cluster came back with the same nodes and slots; without the rewrite every
node stayed in cluster_state:fail.
"""

from __future__ import annotations

import os
import re
import subprocess
import textwrap
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from deploy_support import (
    SERVER,
    config_map,
    container,
    container_env,
    effective,
    expand,
    field_marker,
    named,
    port,
    redis_conf,
    secret_marker,
    workloads,
)
from spades_server.store.redis_cluster import redis_target

OVERLAY = "redis-cluster"
CLUSTER = "spades-redis-cluster"  # the StatefulSet, its Service, budget and policy
CONFIG = "spades-redis-cluster-config"
JOB = "spades-redis-cluster-create"
SCRIPT = "redis-cluster.sh"
PASSWORD = secret_marker("spades-redis", "password")


def _nodes() -> dict[str, Any]:
    return named(OVERLAY, "StatefulSet", CLUSTER)


def _mounts(c: dict[str, Any]) -> dict[str, str]:
    return {m["name"]: m["mountPath"] for m in c["volumeMounts"]}


def _config_volume(workload: dict[str, Any]) -> str:
    volumes = {v["name"]: v for v in workload["spec"]["template"]["spec"]["volumes"]}
    name: str = volumes["config"]["configMap"]["name"]
    return name


def _script() -> str:
    text: str = config_map(OVERLAY, CONFIG)["data"][SCRIPT]
    return text


def _pod_labels(workload: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = workload["spec"]["template"]["metadata"]["labels"]
    return labels


# -- the manifests -----------------------------------------------------------------------


def test_six_durable_nodes_with_cluster_enabled() -> None:
    nodes = _nodes()
    assert nodes["spec"]["replicas"] == 6
    # Parallel: the nodes are ready only once they form a cluster, which the
    # Job makes once all six answer.
    assert nodes["spec"]["podManagementPolicy"] == "Parallel"
    conf = redis_conf(OVERLAY, CONFIG)
    assert conf["cluster-enabled"] == "yes"
    # Durable as the redis overlay's one Redis.
    assert conf["appendonly"] == "yes"
    assert conf["appendfsync"] == "always"
    assert conf["save"] == '""'
    assert conf["maxmemory-policy"] == "noeviction"
    # The other shards serve while one is down, as the server's client expects
    # (require_full_coverage=False), and clients are given names, not pod IPs.
    assert conf["cluster-require-full-coverage"] == "no"
    assert conf["cluster-preferred-endpoint-type"] == "hostname"

    c = container(nodes, "redis")
    mounts = _mounts(c)
    assert c["command"] == ["redis-server"]
    assert c["args"][0] == f"{mounts['config']}/redis.conf"
    assert _config_volume(nodes) == config_map(OVERLAY, CONFIG)["metadata"]["name"]
    assert conf["dir"] == mounts["data"]
    assert [t["metadata"]["name"] for t in nodes["spec"]["volumeClaimTemplates"]] == ["data"]
    # nodes.conf (the node's identity and its peers) is in dir, on the volume.
    assert "/" not in conf["cluster-config-file"]
    assert port(c, "redis") == int(conf["port"])
    # The bus is the port + 10000 unless cluster-port says otherwise.
    assert "cluster-port" not in conf
    assert port(c, "bus") == int(conf["port"]) + 10000


def test_each_node_announces_its_pod_ip_and_its_stable_name() -> None:
    nodes = _nodes()
    c = container(nodes, "redis")
    env = container_env(OVERLAY, c)
    options = c["args"][1:]
    assert len(options) % 2 == 0 and all(o.startswith("--") for o in options[::2]), options
    flags = {o: expand(v, env) for o, v in zip(options[::2], options[1::2], strict=True)}
    assert flags["--requirepass"] == flags["--masterauth"] == PASSWORD
    assert env["REDISCLI_AUTH"] == PASSWORD  # the probe's and the preStop hook's redis-cli
    assert flags["--cluster-announce-ip"] == field_marker("status.podIP")
    # <pod>.<governing Service>: the pod's own DNS name, whatever IP it has.
    service = named(OVERLAY, "Service", nodes["spec"]["serviceName"])
    name = service["metadata"]["name"]
    assert flags["--cluster-announce-hostname"] == f"{field_marker('metadata.name')}.{name}"
    assert service["spec"]["clusterIP"] == "None"
    # Not-ready nodes resolve too: they must find each other to become ready.
    assert service["spec"]["publishNotReadyAddresses"] is True
    assert service["spec"]["selector"].items() <= _pod_labels(nodes).items()


def test_the_init_container_repoints_the_nodes_conf_of_the_data_volume() -> None:
    nodes = _nodes()
    (init,) = nodes["spec"]["template"]["spec"]["initContainers"]
    c = container(nodes, "redis")
    conf = redis_conf(OVERLAY, CONFIG)
    assert init["image"] == c["image"]
    path = f"{_mounts(init)['data']}/{conf['cluster-config-file']}"
    assert init["command"] == ["sh", f"{_mounts(init)['config']}/{SCRIPT}", "addresses", path]
    assert _mounts(init)["data"] == _mounts(c)["data"]
    assert container_env(OVERLAY, init)["POD_IP"] == field_marker("status.podIP")


def test_the_probe_and_the_prestop_hook_are_steps_of_the_script() -> None:
    nodes = _nodes()
    c = container(nodes, "redis")
    script = f"{_mounts(c)['config']}/{SCRIPT}"
    assert c["readinessProbe"]["exec"]["command"] == ["sh", script, "ready"]
    assert c["lifecycle"]["preStop"]["exec"]["command"] == ["sh", script, "prestop"]
    # The failover waits 20 s at most, then Redis waits up to 10 s for its
    # replicas (shutdown-timeout): all before the kubelet's SIGKILL.
    assert '"$waited" -lt 20' in _script()
    assert nodes["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > 20 + 10
    # Every step the manifests run is one the script has.
    (steps,) = re.findall(r"^\s+([\w |-]+)\) \"\$step\" \"\$@\" ;;$", _script(), re.MULTILINE)
    assert {s.strip() for s in steps.split("|")} == {"addresses", "ready", "prestop", "create"}


def test_the_server_runs_in_cluster_mode_on_the_headless_service() -> None:
    args, env = effective(OVERLAY)
    assert env["SPADES_STORE"] == "redis"
    assert env["SPADES_REDIS_MODE"] == "cluster"
    url, cluster = redis_target(args.redis_url, args.redis_mode)
    assert cluster
    parts = urlsplit(url)
    assert parts.scheme == "redis"
    assert parts.password == PASSWORD
    assert parts.path in ("", "/0"), "a cluster has database 0 alone"
    nodes = _nodes()
    service = named(OVERLAY, "Service", parts.hostname or "")
    assert service["metadata"]["name"] == nodes["spec"]["serviceName"] == CLUSTER
    assert service["spec"]["clusterIP"] == "None"
    (service_port,) = [p for p in service["spec"]["ports"] if p["port"] == parts.port]
    assert port(container(nodes, "redis"), service_port["targetPort"]) == parts.port
    # An action is acknowledged once the replica of its shard has it too.
    assert args.redis_wait_replicas == 1
    # Several replicas of the server, the HorizontalPodAutoscaler's to count.
    assert "replicas" not in named(OVERLAY, "Deployment", SERVER)["spec"]
    assert named(OVERLAY, "HorizontalPodAutoscaler", SERVER)["spec"]["minReplicas"] >= 2


def test_the_job_creates_three_primaries_with_a_replica_each() -> None:
    job = named(OVERLAY, "Job", JOB)
    c = container(job, "create")
    argv = [*c["command"], *c["args"]]
    assert argv[:3] == ["sh", f"{_mounts(c)['config']}/{SCRIPT}", "create"]
    assert argv[3] == "--cluster-replicas"
    replicas = int(argv[4])
    hosts = argv[5:]
    # Every node of the StatefulSet once, by its pod's name under the Service.
    nodes = _nodes()
    redis_port = port(container(nodes, "redis"), "redis")
    service = nodes["spec"]["serviceName"]
    assert hosts == [f"{CLUSTER}-{i}.{service}:{redis_port}" for i in range(6)]
    assert len(hosts) == nodes["spec"]["replicas"]
    assert replicas == 1
    assert len(hosts) % (replicas + 1) == 0 and len(hosts) // (replicas + 1) == 3
    # Each primary has as many replicas as the server waits for.
    assert effective(OVERLAY)[0].redis_wait_replicas == replicas
    # The script hands them to redis-cli as they were given.
    assert 'redis-cli --cluster create $nodes --cluster-replicas "$replicas" --cluster-yes' in (
        _script()
    )
    assert _config_volume(job) == _config_volume(nodes)
    assert container_env(OVERLAY, c)["REDISCLI_AUTH"] == PASSWORD
    assert c["image"] == container(nodes, "redis")["image"]
    spec = job["spec"]
    assert spec["template"]["spec"]["restartPolicy"] == "OnFailure"
    assert spec["backoffLimit"] >= 1 and spec["activeDeadlineSeconds"] > 0
    # Its pods are not nodes: no Service nor budget counts them.
    component = "app.kubernetes.io/component"
    assert _pod_labels(job)[component] != _pod_labels(nodes)[component]


def test_the_disruption_budget_takes_one_node_at_a_time() -> None:
    budget = named(OVERLAY, "PodDisruptionBudget", CLUSTER)
    assert budget["spec"]["maxUnavailable"] == 1
    chosen = [
        w["metadata"]["name"]
        for w in workloads(OVERLAY)
        if budget["spec"]["selector"]["matchLabels"].items() <= _pod_labels(w).items()
    ]
    assert chosen == [CLUSTER]


def test_only_the_server_the_job_and_the_nodes_reach_the_nodes() -> None:
    policy = named(OVERLAY, "NetworkPolicy", CLUSTER)
    nodes = _nodes()
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= _pod_labels(nodes).items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    reach: dict[str, set[str]] = {}
    for rule in policy["spec"]["ingress"]:
        names = {p["port"] for p in rule["ports"]}
        for peer in rule["from"]:
            assert set(peer) == {"podSelector"}, peer
            selector = peer["podSelector"]["matchLabels"].items()
            (workload,) = [w for w in workloads(OVERLAY) if selector <= _pod_labels(w).items()]
            reach.setdefault(workload["metadata"]["name"], set()).update(names)
    assert reach == {SERVER: {"redis"}, JOB: {"redis"}, CLUSTER: {"redis", "bus"}}
    c = container(nodes, "redis")
    assert {p["name"] for p in c["ports"]} == {"redis", "bus"}


# -- the script, with stand-ins for getent and redis-cli ---------------------------------


def _bin(tmp_path: Path, name: str, body: str) -> None:
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(0o755)


def _fake_getent(tmp_path: Path, hosts: dict[str, str]) -> None:
    """getent ahostsv4 / ahostsv6 NAME, answered from ``hosts``."""
    (tmp_path / "hosts").write_text("".join(f"{n} {ip}\n" for n, ip in hosts.items()))
    _bin(
        tmp_path,
        "getent",
        f"""\
        ip=$(awk -v n="$2" '$1 == n {{ print $2; exit }}' {tmp_path / "hosts"})
        [ -n "$ip" ] || exit 2
        printf '%s STREAM %s\\n%s DGRAM\\n' "$ip" "$2" "$ip"
        """,
    )


def _run(tmp_path: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / SCRIPT
    script.write_text(_script())
    return subprocess.run(
        ["sh", str(script), *argv],
        env={**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", **env},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def _host(i: int) -> str:
    return f"{CLUSTER}-{i}.{CLUSTER}"


def test_addresses_repoints_each_peer_by_the_hostname_it_announced(tmp_path: Path) -> None:
    # Redis 7.2's nodes.conf: `ip:port@bus,hostname,aux=...`; 7.0's has no aux
    # fields, and a node that announced no hostname has an empty one.
    before = textwrap.dedent(
        f"""\
        a0 10.0.0.1:6379@16379,{_host(0)},shard-id=s0 myself,master - 0 0 1 connected 0-5460
        a1 10.0.0.2:6379@16379,{_host(1)},shard-id=s1 master - 0 1700 2 connected 5461-10922
        a2 10.0.0.3:6379@16379,{_host(2)},shard-id=s2 master - 0 1700 3 connected 10923-16383
        a3 10.0.0.4:6379@16379,,shard-id=s0 slave a0 0 1700 1 connected
        a4 10.0.0.5:6379@16379,{_host(4)} slave a1 0 1700 2 connected
        a5 10.0.0.6:6379@16379 slave a2 0 1700 3 connected
        vars currentEpoch 6 lastVoteEpoch 0
        """
    )
    conf = tmp_path / "nodes.conf"
    conf.write_text(before)
    # Pods 1 and 4 are up on new IPs; pod 2 is not (yet): it keeps its address.
    _fake_getent(tmp_path, {_host(1): "10.1.0.2", _host(4): "10.1.0.5"})
    done = _run(tmp_path, "addresses", str(conf), POD_IP="10.1.0.1")
    assert done.returncode == 0, done.stderr
    expected = (
        before.replace("10.0.0.1:", "10.1.0.1:")
        .replace("10.0.0.2:", "10.1.0.2:")
        .replace("10.0.0.5:", "10.1.0.5:")
    )
    assert conf.read_text() == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "hosts", "nodes.conf", SCRIPT]
    # A new node has no nodes.conf: nothing is written.
    missing = tmp_path / "new" / "nodes.conf"
    missing.parent.mkdir()
    assert _run(tmp_path, "addresses", str(missing), POD_IP="10.1.0.1").returncode == 0
    assert not missing.exists()


def _fake_redis_cli(tmp_path: Path, known: int, assigned: int, check: int = 0) -> Path:
    """redis-cli that logs its arguments and answers PING and CLUSTER INFO as
    a node knowing ``known`` nodes with ``assigned`` slots; ``--cluster
    check`` exits with ``check``."""
    log = tmp_path / "redis-cli.log"
    _bin(
        tmp_path,
        "redis-cli",
        f"""\
        echo "$*" >>{log}
        case "$*" in
            *" ping") echo PONG ;;
            *" cluster info")
                printf 'cluster_state:ok\\r\\ncluster_slots_assigned:{assigned}\\r\\n'
                printf 'cluster_known_nodes:{known}\\r\\n' ;;
            "--cluster check "*) exit {check} ;;
        esac
        """,
    )
    return log


def _create(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    c = container(named(OVERLAY, "Job", JOB), "create")
    _fake_getent(tmp_path, {_host(i): f"10.1.0.{i + 1}" for i in range(6)})
    # The Job's own arguments, after `sh SCRIPT`.
    return _run(tmp_path, *c["command"][2:], *c["args"], POD_IP="10.1.0.100")


def test_the_job_creates_the_cluster_from_six_empty_nodes(tmp_path: Path) -> None:
    log = _fake_redis_cli(tmp_path, known=1, assigned=0)
    done = _create(tmp_path)
    assert done.returncode == 0, done.stderr
    calls = log.read_text().splitlines()
    ips = " ".join(f"10.1.0.{i + 1}:6379" for i in range(6))
    assert calls[-1] == f"--cluster create {ips} --cluster-replicas 1 --cluster-yes"


def test_the_job_leaves_an_existing_cluster_alone(tmp_path: Path) -> None:
    log = _fake_redis_cli(tmp_path, known=6, assigned=16384)
    done = _create(tmp_path)
    assert done.returncode == 0, done.stderr
    assert "in a cluster already" in done.stderr
    calls = log.read_text().splitlines()
    assert not [call for call in calls if "--cluster create" in call]
    assert calls[-1] == "--cluster check 10.1.0.1:6379"


def test_the_job_fails_on_a_cluster_left_half_made(tmp_path: Path) -> None:
    # The nodes met but the slots were not all assigned: a create that
    # stopped part way, which a rerun must not pass as done.
    log = _fake_redis_cli(tmp_path, known=6, assigned=5461, check=1)
    done = _create(tmp_path)
    assert done.returncode != 0
    assert "not whole" in done.stderr
    assert not [call for call in log.read_text().splitlines() if "--cluster create" in call]
