#!/usr/bin/env node
// Generates src/gen/ from the project's proto/ (spades/v1/spades.proto and
// spades/v1/lobby.proto; and google/rpc/error_details.proto,
// for the ErrorInfo and BadRequest details of refusals) with protoc-gen-es from
// node_modules, run by the protoc of grpcio-tools in the project's Python venv.
// Nothing here is committed: src/gen/ is made again on every build.
//
// The Python is $SPADES_PYTHON, else the repository's .venv/bin/python (`make install`).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const root = resolve(pkg, "..", "..");
const python = process.env.SPADES_PYTHON || join(root, ".venv", "bin", "python");
if (!existsSync(python)) {
  console.error(`generate: no Python at ${python}; run \`make install\` at the repository root or set SPADES_PYTHON`);
  process.exit(1);
}
const plugin = join(pkg, "node_modules", ".bin", "protoc-gen-es");
if (!existsSync(plugin)) {
  console.error("generate: protoc-gen-es is missing; run `npm ci` first");
  process.exit(1);
}

// The directory that holds google/rpc/error_details.proto (googleapis-common-protos).
const googleapis = execFileSync(
  python,
  [
    "-c",
    "import os, google.rpc.error_details_pb2 as m; print(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(m.__file__)))))",
  ],
  { encoding: "utf8" },
).trim();
if (!existsSync(join(googleapis, "google", "rpc", "error_details.proto"))) {
  console.error(`generate: google/rpc/error_details.proto is not under ${googleapis}`);
  process.exit(1);
}

const out = join(pkg, "src", "gen");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
// grpc_tools.protoc adds the include path of the well-known types (google/protobuf/*) itself.
execFileSync(
  python,
  [
    "-m",
    "grpc_tools.protoc",
    `-I${join(root, "proto")}`,
    `-I${googleapis}`,
    `--plugin=protoc-gen-es=${plugin}`,
    `--es_out=${out}`,
    "--es_opt=target=ts,import_extension=js",
    "spades/v1/spades.proto",
    "spades/v1/lobby.proto",
    "google/rpc/error_details.proto",
  ],
  { stdio: "inherit" },
);
console.log(`generate: ${out}`);
