// The stack `make run` starts (python -m spades_server.stack: spades-server,
// Envoy from the venv, the web table's file server), on free loopback ports,
// for the tests that go through Envoy. Nothing is skipped: without Envoy in
// the venv the launcher fails, and so does startStack.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { ROOT, python } from "./harness.js";

const START_TIMEOUT_MS = 90_000;
const STOP_TIMEOUT_MS = 40_000;
const UP = /^Spades is up: open (http:\/\/\S+)\/$/;
const TOKEN = /^operator token: (\S+)$/;

export interface Stack {
  /** Envoy's listener, `http://127.0.0.1:P` (no trailing slash). */
  readonly url: string;
  /** `127.0.0.1:P`, for native gRPC through the same listener. */
  readonly address: string;
  readonly operatorToken: string;
  /** Everything the launcher printed, for failure messages. */
  readonly output: string[];
  /** SIGTERM to the launcher; resolves with its exit status (it stops its children). */
  stop(): Promise<number | null>;
}

export interface StackOptions {
  /** The CORS allowlist (`--cors-origins`). */
  corsOrigins?: string[];
  /** The directory served as the web table (`--web-dir`). */
  webDir?: string;
  /** Flags for spades-server. */
  serverArgs?: string[];
}

export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const logs = mkdtempSync(join(tmpdir(), "spades-envoy-test-"));
  const argv = ["-m", "spades_server.stack", "--port", "0", "--log-dir", logs];
  if (options.corsOrigins !== undefined) {
    argv.push("--cors-origins", options.corsOrigins.join(","));
  }
  if (options.webDir !== undefined) {
    argv.push("--web-dir", options.webDir);
  }
  argv.push("--", "--port", "0", "--metrics-port", "-1", "--store", "memory", ...(options.serverArgs ?? []));
  const child = spawn(python(), argv, {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, SPADES_OPERATOR_TOKEN: "" },
  });
  const output: string[] = [];
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
  createInterface({ input: child.stderr! }).on("line", (line) => output.push(line));
  try {
    const { url, token } = await ready(child, output);
    return {
      url,
      address: url.replace(/^http:\/\//, ""),
      operatorToken: token,
      output,
      stop: async () => {
        const code = await stopChild(child, exited);
        rmSync(logs, { recursive: true, force: true });
        return code;
      },
    };
  } catch (e) {
    await stopChild(child, exited);
    rmSync(logs, { recursive: true, force: true });
    throw new Error(`${String(e)}\nthe launcher said:\n${output.join("\n")}`, { cause: e });
  }
}

function ready(child: ChildProcess, output: string[]): Promise<{ url: string; token: string }> {
  return new Promise((resolve, reject) => {
    let url: string | undefined;
    const lines = createInterface({ input: child.stdout! });
    const timer = setTimeout(() => reject(new Error(`the stack was not up in ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
    lines.on("line", (line) => {
      output.push(line);
      url ??= UP.exec(line)?.[1];
      const token = TOKEN.exec(line)?.[1];
      if (url !== undefined && token !== undefined) {
        clearTimeout(timer);
        resolve({ url, token });
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the launcher exited (${code}) before the stack was up`));
    });
  });
}

async function stopChild(child: ChildProcess, exited: Promise<number | null>): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return child.exitCode;
  }
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
  const code = await exited;
  clearTimeout(timer);
  return code;
}
