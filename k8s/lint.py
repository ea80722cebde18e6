"""The offline checks of k8s/ that `make lint-deploy` runs (and tests/deploy reuses).

``python k8s/lint.py validate [-k VERSION ...] FILE...``
    Every object of the YAML files (kustomize builds, one document each) is
    checked against a schema, strictly (an unknown field is an error):
    Kubernetes' own kinds against the schemas kubernetes-validate ships, for
    each VERSION; the Prometheus Operator's (ServiceMonitor, PrometheusRule),
    which it has no schema for, against the minimal ones in k8s/schemas/.
    A kind with neither is an error, never skipped. A ConfigMap labelled
    grafana_dashboard (the monitoring component's dashboards) must also hold
    Grafana dashboards: JSON, each with its uid and title, and a PromQL
    ``expr`` in every query of every panel.

``python k8s/lint.py envoy-render OUT FLAG...``
    Writes the Envoy config of the envoy component: deploy/envoy/envoy.yaml
    rendered by ``python -m spades_server.stack render FLAG...``, under a
    header that records the flags.

``python k8s/lint.py envoy-check FILE``
    Renders the template again with the flags FILE's header records and fails
    if FILE differs (the template changed, or FILE was edited by hand).
"""

from __future__ import annotations

import argparse
import difflib
import json
import shlex
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "k8s" / "schemas"
KUBERNETES_VERSIONS = ("1.30", "1.37")
RENDER = "python -m spades_server.stack render"
HEADER = (
    "# GENERATED from deploy/envoy/envoy.yaml by `make k8s-envoy-config`, which runs\n"
    "#   {command}\n"
    "# Do not edit: change the template (or K8S_ENVOY_FLAGS in the Makefile) and run\n"
    "# it again. `make lint` fails while this file differs from a fresh render.\n"
)


def load_objects(path: Path) -> list[dict[str, Any]]:
    """The objects of a multi-document YAML file (empty documents left out)."""
    with path.open() as f:
        return [doc for doc in yaml.safe_load_all(f) if doc]


def crd_schema(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The schema of k8s/schemas/ for ``obj``'s apiVersion and kind, if any."""
    api = str(obj.get("apiVersion", "")).replace("/", "_")
    path = SCHEMAS / f"{api}_{str(obj.get('kind', '')).lower()}.json"
    if not path.exists():
        return None
    schema: dict[str, Any] = json.loads(path.read_text())
    return schema


def describe(obj: dict[str, Any]) -> str:
    return f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"


GRAFANA_DASHBOARD_LABEL = "grafana_dashboard"


def is_dashboard(obj: dict[str, Any]) -> bool:
    """A ConfigMap the Grafana sidecar loads dashboards from."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return obj.get("kind") == "ConfigMap" and GRAFANA_DASHBOARD_LABEL in labels


def dashboard_panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel of a dashboard, those inside collapsed rows included (rows left out)."""
    found: list[dict[str, Any]] = []
    for panel in dashboard.get("panels", []):
        if panel.get("type") == "row":
            found.extend(panel.get("panels", []))
        else:
            found.append(panel)
    return found


def dashboard_errors(obj: dict[str, Any]) -> list[str]:
    """What is wrong with the dashboards of a grafana_dashboard ConfigMap."""
    errors = []
    data = obj.get("data") or {}
    if not data:
        errors.append(f"{describe(obj)}: a grafana_dashboard ConfigMap with no dashboard")
    for key, text in data.items():
        where = f"{describe(obj)}: {key}"
        try:
            dashboard = json.loads(text)
        except ValueError as e:
            errors.append(f"{where}: not JSON ({e})")
            continue
        for field in ("uid", "title"):
            if not dashboard.get(field):
                errors.append(f"{where}: no {field}")
        panels = dashboard_panels(dashboard)
        if not panels:
            errors.append(f"{where}: no panels")
        for panel in panels:
            targets = panel.get("targets") or []
            if not targets or not all(t.get("expr", "").strip() for t in targets):
                errors.append(f"{where}: panel {panel.get('title')!r} has a query with no expr")
    return errors


def validate_object(obj: dict[str, Any], versions: Sequence[str]) -> list[str]:
    """What is wrong with ``obj`` (nothing: an empty list), and against what."""
    if is_dashboard(obj):
        return dashboard_errors(obj) + _schema_errors(obj, versions)
    return _schema_errors(obj, versions)


def _schema_errors(obj: dict[str, Any], versions: Sequence[str]) -> list[str]:
    schema = crd_schema(obj)
    if schema is not None:
        validator = jsonschema.Draft202012Validator(schema)
        return [
            f"{describe(obj)}: {'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
            for e in validator.iter_errors(obj)
        ]
    errors = []
    for version in versions:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            errors.append(
                f"{describe(obj)}: no schema for {obj.get('apiVersion')} {obj.get('kind')} "
                f"in Kubernetes {version}, nor in k8s/schemas/"
            )
        except kubernetes_validate.ValidationError as e:
            where = ".".join(map(str, e.path)) or "(top)"
            errors.append(f"{describe(obj)}: Kubernetes {version}: {where}: {e.message}")
    return errors


def validate_files(paths: Iterable[Path], versions: Sequence[str]) -> int:
    failed = 0
    for path in paths:
        objects = load_objects(path)
        crds = sum(1 for obj in objects if crd_schema(obj) is not None)
        errors = [error for obj in objects for error in validate_object(obj, versions)]
        for error in errors:
            print(f"ERROR {path}: {error}", file=sys.stderr)
        failed += bool(errors)
        print(
            f"{'FAILED' if errors else 'ok'} {path}: {len(objects) - crds} objects against "
            f"Kubernetes {', '.join(versions)} (strict), {crds} against k8s/schemas/"
        )
    return 1 if failed else 0


def render_envoy(flags: Sequence[str]) -> str:
    """The Envoy config file of the envoy component for ``flags``: header, render."""
    out = subprocess.run(
        [sys.executable, "-m", "spades_server.stack", "render", *flags],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    return HEADER.format(command=shlex.join([*RENDER.split(), *flags])) + out


def recorded_flags(path: Path) -> list[str]:
    """The render flags the header of ``path`` records."""
    for line in path.read_text().splitlines()[:4]:
        command = line.removeprefix("#").strip()
        if command.startswith(RENDER):
            return shlex.split(command)[len(RENDER.split()) :]
    raise SystemExit(f"{path}: no `{RENDER} ...` line in its header; run make k8s-envoy-config")


def envoy_check(path: Path) -> int:
    fresh = render_envoy(recorded_flags(path))
    current = path.read_text()
    if fresh == current:
        print(f"ok {path}: equals its render")
        return 0
    diff = difflib.unified_diff(
        current.splitlines(keepends=True),
        fresh.splitlines(keepends=True),
        str(path),
        "fresh render",
    )
    sys.stderr.writelines(diff)
    print(f"FAILED {path} differs from a fresh render: run make k8s-envoy-config", file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="k8s/lint.py", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate", help="schema-check the objects of YAML files")
    v.add_argument("-k", "--kubernetes-version", action="append", dest="versions")
    v.add_argument("files", nargs="+", type=Path)
    r = sub.add_parser("envoy-render", help="write the envoy component's config")
    r.add_argument("out", type=Path)
    r.add_argument("flags", nargs=argparse.REMAINDER)
    c = sub.add_parser("envoy-check", help="fail if the envoy component's config is stale")
    c.add_argument("file", type=Path)
    args = p.parse_args(argv)
    if args.command == "validate":
        return validate_files(args.files, args.versions or KUBERNETES_VERSIONS)
    if args.command == "envoy-render":
        args.out.write_text(render_envoy(args.flags))
        print(f"wrote {args.out}")
        return 0
    return envoy_check(args.file)


if __name__ == "__main__":
    raise SystemExit(main())
