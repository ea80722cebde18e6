"""What the deployment tests share: the kustomize builds of k8s/overlays/, the
Dockerfile's instructions, the server's own option table (main.OPTIONS) and
the web table's server's own argument parser (webapp.main), so that every
check compares the manifests with the code, not with a copy.

kustomize is the Makefile's (`make kustomize`, which `make test` and `make
lint` build first); it is built here if it is missing, so nothing is skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.util
import io
import json
import os
import re
import shlex
import subprocess
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest import mock

import yaml
from spades_server import main as server_main
from spades_server import webapp

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "k8s"
OVERLAYS = tuple(sorted(p.name for p in (K8S / "overlays").iterdir() if p.is_dir()))
SERVER = "spades-server"  # the Deployment and its container
WEB = "spades-web"  # the web table's Deployment and Service (the envoy component)
WEB_CONTAINER = "web"

# The server's settings: every flag of main.py's option table and its variable.
ENV_OF_FLAG = {o.flag: o.env for o in server_main.OPTIONS}
KNOWN_ENV = frozenset(ENV_OF_FLAG.values())


def _make_env() -> dict[str, str]:
    # A make of our own, not a sub-make of the `make test` that runs pytest.
    return {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}


def makefile_variable(name: str) -> str:
    match = re.search(rf"^{name} := (.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert match, f"no `{name} := ...` in the Makefile"
    return match[1].strip()


@functools.cache
def kustomize() -> Path:
    path = ROOT / makefile_variable("KUSTOMIZE").replace(
        "$(KUSTOMIZE_VERSION)", makefile_variable("KUSTOMIZE_VERSION")
    )
    if not os.access(path, os.X_OK):
        subprocess.run(
            ["make", "--no-print-directory", "kustomize"], cwd=ROOT, check=True, env=_make_env()
        )
    return path


@functools.cache
def build(overlay: str) -> tuple[dict[str, Any], ...]:
    out = subprocess.run(
        [str(kustomize()), "build", str(K8S / "overlays" / overlay)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return tuple(doc for doc in yaml.safe_load_all(out) if doc)


def k8s_lint() -> ModuleType:
    """k8s/lint.py, the module `make lint-deploy` runs."""
    spec = importlib.util.spec_from_file_location("k8s_lint", K8S / "lint.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def objects(overlay: str, kind: str) -> list[dict[str, Any]]:
    return [o for o in build(overlay) if o["kind"] == kind]


def named(overlay: str, kind: str, name: str) -> dict[str, Any]:
    found = [o for o in objects(overlay, kind) if o["metadata"]["name"] == name]
    assert len(found) == 1, f"{overlay}: {len(found)} {kind} named {name}"
    return found[0]


def config_map(overlay: str, name: str) -> dict[str, Any]:
    """The ConfigMap ``name`` (kustomize's generated name is ``name-<hash>``)."""
    found = [
        o
        for o in objects(overlay, "ConfigMap")
        if re.fullmatch(rf"{re.escape(name)}(-[a-z0-9]{{10}})?", o["metadata"]["name"])
    ]
    assert len(found) == 1, f"{overlay}: {len(found)} ConfigMaps {name}"
    return found[0]


def redis_conf(overlay: str, name: str) -> dict[str, str]:
    """The directives of the redis.conf in ConfigMap ``name``: each one's value
    as written (comments and blank lines left out)."""
    text = config_map(overlay, name)["data"]["redis.conf"]
    return dict(
        line.split(None, 1)
        for line in text.splitlines()
        if line.strip() and not line.startswith("#")
    )


def workloads(overlay: str) -> list[dict[str, Any]]:
    """What runs pods: Deployments, StatefulSets and Jobs (each has a pod template)."""
    return [o for o in build(overlay) if o["kind"] in ("Deployment", "StatefulSet", "Job")]


def pod_containers(workload: dict[str, Any]) -> list[dict[str, Any]]:
    """Every container of a workload's pods, its init containers first."""
    pod = workload["spec"]["template"]["spec"]
    containers: list[dict[str, Any]] = [*pod.get("initContainers", []), *pod["containers"]]
    return containers


def container(workload: dict[str, Any], name: str) -> dict[str, Any]:
    found = [c for c in workload["spec"]["template"]["spec"]["containers"] if c["name"] == name]
    assert len(found) == 1, f"{len(found)} containers {name}"
    return found[0]


def port(c: dict[str, Any], name: str) -> int:
    found = [p["containerPort"] for p in c.get("ports", []) if p["name"] == name]
    assert len(found) == 1, f"container {c['name']}: {len(found)} ports named {name}"
    value: int = found[0]
    return value


def secret_marker(name: str, key: str) -> str:
    return f"secret.{name}.{key}"


def field_marker(path: str) -> str:
    return f"field.{path}"


def expand(text: str, env: Mapping[str, str]) -> str:
    """``text`` with Kubernetes' $(VAR) references to ``env`` replaced (the
    others left as they are, as Kubernetes does)."""
    return re.sub(r"\$\((\w+)\)", lambda m: env.get(m[1], m[0]), text)


def container_env(overlay: str, c: dict[str, Any]) -> dict[str, str]:
    """The environment Kubernetes gives container ``c`` (before the image's
    ENV under it): its envFrom ConfigMaps, then its env, $(VAR) expanded; a
    Secret's value stands as ``secret.<name>.<key>``, a field of the pod's
    (the downward API) as ``field.<path>``."""
    env: dict[str, str] = {}
    for source in c.get("envFrom", []):
        assert set(source) == {"configMapRef"}, source
        env.update(config_map(overlay, source["configMapRef"]["name"])["data"])
    for item in c.get("env", []):
        if "value" in item:
            value = expand(item["value"], env)
        else:
            ref = item["valueFrom"]
            if "secretKeyRef" in ref:
                value = secret_marker(ref["secretKeyRef"]["name"], ref["secretKeyRef"]["key"])
            elif "fieldRef" in ref:
                value = field_marker(ref["fieldRef"]["fieldPath"])
            else:
                key = ref["configMapKeyRef"]
                value = config_map(overlay, key["name"])["data"][key["key"]]
        env[item["name"]] = value
    return env


# -- the Dockerfile -------------------------------------------------------------------


@functools.cache
def dockerfile() -> tuple[tuple[str, str], ...]:
    """The Dockerfile's instructions (name, arguments), continuations joined."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    found = []
    for line in map(str.strip, text.splitlines()):
        if line and not line.startswith("#"):
            name, _, rest = line.partition(" ")
            found.append((name.upper(), rest.strip()))
    return tuple(found)


def stages() -> list[tuple[str, str, list[tuple[str, str]]]]:
    """Each stage: its name (``AS name``, or "" for none), its base, and its
    instructions from its FROM on."""
    found: list[tuple[str, str, list[tuple[str, str]]]] = []
    for name, rest in dockerfile():
        if name == "FROM":
            words = rest.split()
            alias = words[2] if len(words) == 3 and words[1].upper() == "AS" else ""
            assert len(words) in (1, 3), f"FROM {rest}"
            found.append((alias, words[0], []))
        found[-1][2].append((name, rest))
    return found


def stage(alias: str) -> tuple[str, list[tuple[str, str]]]:
    """The base and the instructions of the stage ``FROM ... AS alias``."""
    found = [(base, steps) for name, base, steps in stages() if name == alias]
    assert len(found) == 1, f"{len(found)} stages named {alias} in the Dockerfile"
    return found[0]


def runtime_stage() -> list[tuple[str, str]]:
    """The instructions of the last stage (the image that runs)."""
    return stages()[-1][2]


def copied_from(alias: str) -> tuple[str, str]:
    """The runtime stage's ``COPY --from=alias SRC DEST``: (SRC, DEST)."""
    found = []
    for name, rest in runtime_stage():
        words = shlex.split(rest)
        if name == "COPY" and words[0] == f"--from={alias}":
            found.append((words[1], words[2]))
    assert len(found) == 1, f"{len(found)} COPY --from={alias} in the runtime stage"
    return found[0]


def instruction(name: str) -> str:
    found = [rest for n, rest in runtime_stage() if n == name]
    assert len(found) == 1, f"{len(found)} {name} in the Dockerfile's runtime stage"
    return found[0]


def entrypoint() -> list[str]:
    argv: list[str] = json.loads(instruction("ENTRYPOINT"))
    return argv


def healthcheck() -> list[str]:
    rest = instruction("HEALTHCHECK")
    argv: list[str] = json.loads(rest[rest.index("CMD") + len("CMD") :].strip())
    return argv


def image_extras() -> list[str]:
    """The extras of pyproject.toml the image installs (ARG EXTRAS, comma-separated)."""
    (value,) = [
        r.partition("=")[2] for n, r in dockerfile() if n == "ARG" and r.startswith("EXTRAS=")
    ]
    return value.split(",")


def image_env() -> dict[str, str]:
    """The runtime stage's ENV (``KEY=value`` pairs; ``$PATH`` left as written)."""
    env: dict[str, str] = {}
    for name, rest in runtime_stage():
        if name == "ENV":
            for pair in shlex.split(rest):
                key, _, value = pair.partition("=")
                env[key] = value
    return env


# -- the server's own view of a configuration ----------------------------------------


def parses(argv: list[str], env: Mapping[str, str]) -> bool:
    try:
        settings(argv, env)
    except Refused:
        return False
    return True


class Refused(AssertionError):
    """main.py refused a configuration (its message says why)."""


def settings(argv: list[str], env: Mapping[str, str]) -> Any:
    """What main.py makes of ``argv`` in environment ``env``."""
    stderr = io.StringIO()
    with mock.patch.dict(os.environ, env, clear=True), contextlib.redirect_stderr(stderr):
        try:
            return server_main.parse_args(argv)
        except SystemExit:
            pass
    raise Refused(f"spades-server {shlex.join(argv)} with {dict(env)}: {stderr.getvalue()}")


def effective(overlay: str) -> tuple[Any, dict[str, str]]:
    """The server container's settings in ``overlay`` as main.py parses them
    (image ENV, then the manifest's environment, then ENTRYPOINT and args),
    and that environment."""
    c = container(named(overlay, "Deployment", SERVER), SERVER)
    env = {k: v for k, v in image_env().items() if k.startswith("SPADES_")}
    env.update(container_env(overlay, c))
    argv = [*entrypoint()[1:], *c.get("args", [])]
    assert "command" not in c, "the image's ENTRYPOINT is the command"
    return settings(argv, env), env


# -- the web table's server (spades_server.webapp) -----------------------------------


class _Parsed(Exception):
    def __init__(self, namespace: argparse.Namespace) -> None:
        super().__init__("parsed")
        self.namespace = namespace


def webapp_settings(argv: list[str]) -> argparse.Namespace:
    """What ``python -m spades_server.webapp`` makes of ``argv``: its own
    parser's namespace (main() is stopped right after parse_args); Refused
    when it exits on a flag or value it does not know."""
    real = argparse.ArgumentParser.parse_args

    def parse_then_stop(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        raise _Parsed(real(self, *args, **kwargs))

    stderr = io.StringIO()
    with (
        mock.patch.object(argparse.ArgumentParser, "parse_args", parse_then_stop),
        contextlib.redirect_stderr(stderr),
    ):
        try:
            webapp.main(argv)
        except _Parsed as parsed:
            return parsed.namespace
        except SystemExit:
            pass
    raise Refused(f"python -m spades_server.webapp {shlex.join(argv)}: {stderr.getvalue()}")


def web_container(overlay: str) -> dict[str, Any]:
    return container(named(overlay, "Deployment", WEB), WEB_CONTAINER)


def web_command(overlay: str) -> tuple[list[str], argparse.Namespace]:
    """The web container's argv (its command, then its args) and what
    webapp's parser makes of the args."""
    c = web_container(overlay)
    argv = [*c["command"], *c.get("args", [])]
    assert argv[:3] == ["python", "-m", "spades_server.webapp"], argv
    return argv, webapp_settings(argv[3:])


# -- docs/operations.md's table of settings --------------------------------------------


def _shown(value: str) -> str:
    whole = re.fullmatch(r"secret\.([\w-]+)\.([\w-]+)", value)
    if whole:
        return f"Secret `{whole[1]}`, key `{whole[2]}`"
    return "`" + re.sub(r"secret\.[\w-]+\.([\w-]+)", r"<\1>", value) + "`"


def _in_pods(name: str, flag: str, default: str) -> str:
    """What the pods of each overlay run with, where it is not main.py's default."""
    by_value: dict[str, list[str]] = {}
    for overlay in OVERLAYS:
        args, env = effective(overlay)
        dest = flag.removeprefix("--").replace("-", "_")
        if name in env:
            value = env[name]
        elif hasattr(args, dest) and str(getattr(args, dest)) != str(
            type(getattr(args, dest))(default)
        ):
            value = str(getattr(args, dest))
        else:
            continue
        by_value.setdefault(value, []).append(overlay)
    if len(by_value) == 1 and len(next(iter(by_value.values()))) == len(OVERLAYS):
        return _shown(next(iter(by_value)))
    return "; ".join(f"{_shown(v)} ({', '.join(o)})" for v, o in sorted(by_value.items()))


def config_table() -> str:
    """The table docs/operations.md holds: main.py's every setting, and what
    the manifests set it to."""
    rows = [
        "| variable | flag | default | in the pods (k8s/) | what |",
        "|---|---|---|---|---|",
    ]
    for o in server_main.OPTIONS:
        default = f"`{o.default}`" if o.default else "(empty)"
        what = o.help.replace("|", "\\|")
        rows.append(
            f"| `{o.env}` | `{o.flag}` | {default} | {_in_pods(o.env, o.flag, o.default)} "
            f"| {what} |"
        )
    return "\n".join(rows) + "\n"
