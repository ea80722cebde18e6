# spades-server's image: `docker build -t spades-server:0.1.0 .`
#
# Three stages. The builder generates the protobuf stubs from proto/ exactly
# as `make install` does (`make proto`, with the generator tools of
# pyproject.toml's dev extra, pinned below) and builds the wheels; the web
# stage builds the web table (clients/web) with Node as `make web-dist` does;
# the runtime stage gets only the virtual environment the wheels were
# installed into and the web table's built files (/app/web). Its entry point
# is the server; the web table's server is the same image with another
# command (`python -m spades_server.webapp --dir /app/web ...`, the Deployment
# spades-web of k8s/components/envoy). No secret is built in: the operator
# token comes from the environment (SPADES_OPERATOR_TOKEN, a Kubernetes
# Secret in k8s/).
#
# The bases are exact tags: this repository is built where no registry can be
# asked for a digest. Where one can, pin them by digest as well
# (`docker buildx imagetools inspect python:3.11.14-slim-bookworm`, then
# `FROM python:3.11.14-slim-bookworm@sha256:...`, in both Python stages; the
# same for node:20.20.2-bookworm-slim).
# hadolint (`make lint`) checks this file; tests/deploy/test_image_run.py runs
# what the image runs, without Docker.

FROM python:3.11.14-slim-bookworm AS builder

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1

# make runs the Makefile's `proto` target, the one `make install` runs; gcc
# compiles the engine (setup.py: mypyc's C), which SPADES_ENGINE_BUILD=compiled
# makes a requirement: no C compiler is an error here, not a pure-Python image.
RUN apt-get update \
    && apt-get install -y --no-install-recommends make=4.3-4.1 gcc=4:12.2.0-3 libc6-dev=2.36-9+deb12u14 \
    && rm -rf /var/lib/apt/lists/*
ENV SPADES_ENGINE_BUILD=compiled

WORKDIR /src
# The stubs' generator, in .venv as the Makefile expects it: the versions the
# project's .venv has (grpcio-tools, mypy-protobuf of the dev extra).
RUN python -m venv .venv \
    && .venv/bin/pip install --no-cache-dir grpcio-tools==1.85.4 mypy-protobuf==5.1.0

COPY pyproject.toml setup.py README.md Makefile ./
COPY proto/ proto/
COPY engine/ engine/
COPY server/ server/
RUN make proto

# The project's wheel (the compiled engine in it: mypy, which brings mypyc, is
# a build requirement that pip fetches for this step alone) and its dependencies' wheels, with the redis extra
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


# The web table: the TypeScript client's build (the page imports
# clients/typescript/dist), then Vite's build of the page into
# clients/web/dist, the steps of `make web-dist` (clients/*/client.mk) with
# the versions their lockfiles pin; Node 20.20.2, the version of
# clients/web/README.md.
FROM node:20.20.2-bookworm-slim AS web

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
    SPADES_PYTHON=/opt/protoc/bin/python

# The client's generator (clients/typescript/scripts/generate.mjs) runs
# protoc-gen-es under grpcio-tools' protoc, with the Python SPADES_PYTHON
# names: Debian's, with the builder's grpcio-tools and the project's
# googleapis-common-protos (google/rpc/error_details.proto) and protobuf.
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3=3.11.2-1+b1 python3-venv=3.11.2-1+b1 \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/protoc \
    && /opt/protoc/bin/pip install --no-cache-dir \
       grpcio-tools==1.85.4 protobuf==7.36.2 googleapis-common-protos==1.76.0

WORKDIR /src
# The npm packages first, from the lockfiles alone (a layer that changes only
# with them); Playwright, a dev dependency of the page's tests, downloads no
# browser (PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD).
COPY clients/typescript/package.json clients/typescript/package-lock.json clients/typescript/
COPY clients/web/package.json clients/web/package-lock.json clients/web/
RUN npm ci --prefix clients/typescript --no-audit --no-fund \
    && npm ci --prefix clients/web --no-audit --no-fund

COPY proto/ proto/
COPY clients/typescript/ clients/typescript/
COPY clients/web/ clients/web/
WORKDIR /src/clients/typescript
RUN node scripts/generate.mjs \
    && node_modules/.bin/tsc -p tsconfig.json
WORKDIR /src/clients/web
RUN node_modules/.bin/vite build --logLevel warn


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
# The web table's files, read-only (root's), for `python -m
# spades_server.webapp --dir /app/web`.
COPY --from=web /src/clients/web/dist /app/web

ENV PATH=/opt/spades/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    SPADES_DB=/data/spades.db

# A working directory the server cannot write to: every file it writes has
# an absolute path (SPADES_DB).
WORKDIR /opt/spades
USER 10001:10001
VOLUME ["/data"]
# gRPC (SPADES_PORT) and Prometheus /metrics (SPADES_METRICS_PORT); 8081 is
# the web table's server's (--port of spades_server.webapp, in k8s/).
EXPOSE 50051 9464 8081

# The standard gRPC health service on the gRPC port (SPADES_PORT, 50051).
# Kubernetes does not read this: its probes are the Deployment's `grpc:` ones.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, sys, grpc; from grpc_health.v1 import health_pb2 as h, health_pb2_grpc as g; c = grpc.insecure_channel('127.0.0.1:' + os.environ.get('SPADES_PORT', '50051')); r = g.HealthStub(c).Check(h.HealthCheckRequest(), timeout=3); sys.exit(0 if r.status == h.HealthCheckResponse.SERVING else 1)"]

# Every other setting: a SPADES_* environment variable or a flag after the
# image's name (`spades-server --help`). The web table's server replaces the
# entry point (Kubernetes' `command`; `docker run --entrypoint python
# --no-healthcheck IMAGE -m spades_server.webapp --dir /app/web --host
# 0.0.0.0 --port 8081 --target HOST:PORT`): it serves HTTP on 8081, not the
# gRPC health service the HEALTHCHECK asks.
ENTRYPOINT ["spades-server", "--host", "0.0.0.0"]
