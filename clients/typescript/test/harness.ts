// The test server: clients/conformance/serve.py (a real spades-server behind a
// proxy that can cut every connection), started once per test file.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/** clients/typescript/ (this file is compiled to dist/test/). */
export const PKG = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
/** The repository's root. */
export const ROOT = resolve(PKG, "..", "..");
/** How long a test waits for what a real server should do in well under a second. */
export const WAIT_MS = 30_000;
/** Reconnection settings that make a test's reconnects quick. */
export const FAST = { initialDelayMs: 20, maxDelayMs: 500, maxAttempts: 10 };

const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 15_000;

export interface Server {
  /** Where clients connect (through the proxy), `127.0.0.1:P`. */
  readonly address: string;
  /** The server itself, bypassing the proxy. */
  readonly server: string;
  /** `http://127.0.0.1:C`, whose POST /cut resets every proxied connection. */
  readonly control: string;
  readonly operatorToken: string;
  /** With `startServer("--tls")`: the operator port (mutual TLS), `127.0.0.1:O`. */
  readonly operator?: string;
  /** With `startServer("--tls")`: PEM files of the run's CA and of the operator's client certificate. */
  readonly tls?: { readonly ca: string; readonly clientCert: string; readonly clientKey: string };
  /** Resets every connection through the proxy; resolves with how many it cut. */
  cut(): Promise<number>;
  /** `POST {control}/credential`: a player credential (a JWT, valid 10 minutes) the server trusts. */
  credential(playerId: string, name?: string): Promise<string>;
  /** `POST {control}/friend`: serve.py's second player does `request.do` (quickplay, join); its JSON answer. */
  friend(request: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Closes serve.py's standard input and waits (bounded) for it to exit. */
  stop(): Promise<void>;
}

export function python(): string {
  const p = process.env["SPADES_PYTHON"] || join(ROOT, ".venv", "bin", "python");
  if (!existsSync(p)) {
    throw new Error(`no Python at ${p}: run \`make install\` at the repository root or set SPADES_PYTHON`);
  }
  return p;
}

/** serve.py with `args` (`"--tls"`: TLS only, operator calls over mutual TLS on their own port). */
export async function startServer(...args: string[]): Promise<Server> {
  return startServerWith({ args });
}

export interface ServerOptions {
  /** serve.py's arguments (see startServer). */
  args?: string[];
  /** Added to this process's environment for serve.py, which passes it on to the server (OTEL_*); undefined removes one. */
  env?: Record<string, string | undefined>;
}

export async function startServerWith(options: ServerOptions): Promise<Server> {
  const child = spawn(python(), [join(ROOT, "clients", "conformance", "serve.py"), ...(options.args ?? [])], {
    cwd: ROOT,
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, ...options.env },
  });
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  let ready: Ready;
  try {
    ready = await firstLine(child);
  } catch (e) {
    await stopChild(child, exited);
    throw e;
  }
  return {
    ...ready,
    async cut(): Promise<number> {
      const res = await fetch(`${ready.control}/cut`, { method: "POST", signal: AbortSignal.timeout(5_000) });
      const body = await res.text();
      if (!res.ok) {
        throw new Error(`POST /cut: ${res.status} ${body}`);
      }
      return Number(/cut (\d+)/.exec(body)?.[1] ?? "0");
    },
    async credential(playerId: string, name?: string): Promise<string> {
      const answer = await control(ready.control, "credential", { playerId, ...(name !== undefined ? { name } : {}) });
      return String(answer["credential"]);
    },
    friend: (request) => control(ready.control, "friend", request),
    stop: () => stopChild(child, exited),
  };
}

/** A JSON control call of serve.py (`/credential`, `/friend`); a refusal (400) throws with its error. */
async function control(base: string, path: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const res = await fetch(`${base}/${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  if (!res.ok) {
    throw new Error(`POST /${path}: ${res.status} ${text}`);
  }
  return JSON.parse(text) as Record<string, unknown>;
}

type Ready = Pick<Server, "address" | "server" | "control" | "operatorToken" | "operator" | "tls">;

function firstLine(child: ChildProcess): Promise<Ready> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    const timer = setTimeout(() => {
      lines.close();
      reject(new Error(`serve.py printed nothing in ${START_TIMEOUT_MS} ms`));
    }, START_TIMEOUT_MS);
    lines.once("line", (line) => {
      clearTimeout(timer);
      lines.close();
      try {
        resolve(JSON.parse(line));
      } catch (e) {
        reject(new Error(`serve.py's first line is not JSON: ${line}`, { cause: e }));
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`serve.py exited (${code}) before it was ready`));
    });
  });
}

async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return;
  }
  child.stdin?.end();
  const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}

/** Rejects after `ms` with `what` in the message, unless `promise` settles first. */
export async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
