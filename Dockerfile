# spades-server's image: `docker build -t spades-server:0.1.0 .`
#
# Two stages on the same base: the builder generates the protobuf stubs from
# proto/ exactly as `make install` does (`make proto`, with the generator
# tools of pyproject.toml's dev extra, pinned below) and builds the wheels;
# the runtime stage gets only the virtual environment they were installed
# into. No secret is built in: the operator token comes from the
# environment (SPADES_OPERATOR_TOKEN, a Kubernetes Secret in k8s/).
#
# The base is an exact tag: this repository is built where no registry can be
# asked for a digest. Where one can, pin it by digest as well
# (`docker buildx imagetools inspect python:3.11.14-slim-bookworm`, then
# `FROM python:3.11.14-slim-bookworm@sha256:...`), in both stages.
# hadolint (`make lint`) checks this file; tests/deploy/test_image_run.py runs
# what the image runs, without Docker.

FROM python:3.11.14-slim-bookworm AS builder

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1

# make runs the Makefile's `proto` target, the one `make install` runs.
RUN apt-get update \
    && apt-get install -y --no-install-recommends make=4.3-4.1 \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src
# The stubs' generator, in .venv as the Makefile expects it: the versions the
# project's .venv has (grpcio-tools, mypy-protobuf of the dev extra).
RUN python -m venv .venv \
    && .venv/bin/pip install --no-cache-dir grpcio-tools==1.85.1 mypy-protobuf==5.1.0

COPY pyproject.toml README.md Makefile ./
COPY proto/ proto/
COPY engine/ engine/
COPY server/ server/
RUN make proto

# The project's wheel and its dependencies' wheels, with the redis extra
# (redis-py for --store redis: one image for every overlay), then an
# environment with them alone (no pip in it), which the runtime stage copies.
# (DL3013 asks for pinned versions: the one package named here is the wheel
# this RUN builds; the rest come from /wheels, no index.)
ARG EXTRAS=redis
# hadolint ignore=DL3013
RUN pip wheel --no-cache-dir --wheel-dir /wheels ".[${EXTRAS}]" \
    && python -m venv --without-pip /opt/spades \
    && wheel="$(echo /wheels/spades_engine-*.whl)" \
    && pip --python /opt/spades/bin/python install --no-cache-dir --no-index \
       --find-links /wheels "${wheel}[${EXTRAS}]"


FROM python:3.11.14-slim-bookworm

# A numeric user with no shell and no home, the UID/GID the manifests give
# (runAsUser 10001 in k8s/base/deployment.yaml). /data is where the SQLite
# database lives (a volume); nothing else is writable but /tmp.
RUN groupadd --system --gid 10001 spades \
    && useradd --system --uid 10001 --gid 10001 --no-create-home \
       --home-dir /nonexistent --shell /usr/sbin/nologin spades \
    && mkdir /data \
    && chown 10001:10001 /data

COPY --from=builder /opt/spades /opt/spades

ENV PATH=/opt/spades/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    SPADES_DB=/data/spades.db

# A working directory the server cannot write to: every file it writes has
# an absolute path (SPADES_DB).
WORKDIR /opt/spades
USER 10001:10001
VOLUME ["/data"]
# gRPC (SPADES_PORT) and Prometheus /metrics (SPADES_METRICS_PORT).
EXPOSE 50051 9464

# The standard gRPC health service on the gRPC port (SPADES_PORT, 50051).
# Kubernetes does not read this: its probes are the Deployment's `grpc:` ones.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, sys, grpc; from grpc_health.v1 import health_pb2 as h, health_pb2_grpc as g; c = grpc.insecure_channel('127.0.0.1:' + os.environ.get('SPADES_PORT', '50051')); r = g.HealthStub(c).Check(h.HealthCheckRequest(), timeout=3); sys.exit(0 if r.status == h.HealthCheckResponse.SERVING else 1)"]

# Every other setting: a SPADES_* environment variable or a flag after the
# image's name (`spades-server --help`).
ENTRYPOINT ["spades-server", "--host", "0.0.0.0"]
