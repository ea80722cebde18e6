#!/usr/bin/env python3
"""Generate the client's gRPC stubs from proto/ into src/spades_client/_gen.

    python clients/python/generate.py [--proto-root DIR]

Both protos of spades.v1: spades.proto (SpadesService) and lobby.proto
(LobbyService, which imports spades.proto). Needs grpcio-tools and
mypy-protobuf (the package's ``dev`` extra). The stubs are never committed:
they are made from the protos, so they cannot drift. Their imports are
rewritten from ``spades.v1`` to ``spades_client._gen.spades.v1``
(lobby_pb2's import of spades_pb2 too), so that they do not collide with any
other copy of the same proto's modules.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GEN = HERE / "src" / "spades_client" / "_gen"
PROTOS = ("spades/v1/spades.proto", "spades/v1/lobby.proto")
_IMPORTS = (
    (re.compile(r"^from spades\.v1 import", re.M), "from spades_client._gen.spades.v1 import"),
    (re.compile(r"^import spades\.v1\.", re.M), "import spades_client._gen.spades.v1."),
)


def generate(proto_root: Path, out: Path = GEN) -> None:
    import grpc_tools  # a build-time dependency only
    from grpc_tools import protoc

    well_known = Path(grpc_tools.__file__).parent / "_proto"  # google/protobuf/*.proto

    for proto in PROTOS:
        if not (proto_root / proto).is_file():
            raise SystemExit(f"{proto_root / proto} not found")
    bindir = Path(sys.executable).parent
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    args = [
        "grpc_tools.protoc",
        f"-I{proto_root}",
        f"-I{well_known}",
        f"--plugin=protoc-gen-mypy={bindir / 'protoc-gen-mypy'}",
        f"--plugin=protoc-gen-mypy_grpc={bindir / 'protoc-gen-mypy_grpc'}",
        f"--python_out={tmp}",
        f"--grpc_python_out={tmp}",
        f"--mypy_out=quiet:{tmp}",
        f"--mypy_grpc_out=quiet:{tmp}",
        *PROTOS,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    for d in [tmp, *(p for p in tmp.rglob("*") if p.is_dir())]:
        (d / "__init__.py").touch()
    for f in tmp.rglob("*.py*"):
        text = f.read_text(encoding="utf-8")
        for pattern, repl in _IMPORTS:
            text = pattern.sub(repl, text)
        f.write_text(text, encoding="utf-8")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--proto-root", type=Path, default=HERE.parent.parent / "proto")
    generate(p.parse_args().proto_root)


if __name__ == "__main__":
    main()
