// The real stack for the browser tests: `python -m spades_server.stack` (what
// `make run` runs: spades-server, Envoy, and the web table's server with
// /api/new-match) on a free loopback port, and a Chromium from Debian's
// packages driven by Playwright. Every wait is bounded; stop() ends each.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright";

/** clients/web/ (this file runs from build/test/). */
export const PKG = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const ROOT = resolve(PKG, "..", "..");
export const SCREENSHOTS = join(ROOT, "build", "web-screenshots");

const START_TIMEOUT_MS = 90_000;
const STOP_TIMEOUT_MS = 30_000;

/** The TypeScript client, its Node entry (gRPC over HTTP/2: Envoy carries native gRPC on the page's port). */
export type ClientModule = typeof import("../../typescript/dist/src/node.js");

export async function clientModule(): Promise<ClientModule> {
  const entry = join(ROOT, "clients", "typescript", "dist", "src", "node.js");
  if (!existsSync(entry)) {
    throw new Error(`${entry} is missing: build the TypeScript client first (make clients/typescript/dist/.built)`);
  }
  return (await import(pathToFileURL(entry).href)) as ClientModule;
}

export interface Stack {
  /** The page's URL, `http://127.0.0.1:P/`. */
  readonly url: string;
  /** `127.0.0.1:P`: Envoy's listener, for the tests' own gRPC calls. */
  readonly address: string;
  readonly operatorToken: string;
  stop(): Promise<void>;
}

function python(): string {
  const p = process.env["SPADES_PYTHON"] || join(ROOT, ".venv", "bin", "python");
  if (!existsSync(p)) {
    throw new Error(`no Python at ${p}: run \`make install\` at the repository root or set SPADES_PYTHON`);
  }
  return p;
}

export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      const port = typeof a === "object" && a !== null ? a.port : 0;
      s.close(() => done(port));
    });
  });
}

/** Starts the launcher (its own log directory, an in-memory store); extra flags go to the server. */
export async function startStack(name: string, serverFlags: string[] = []): Promise<Stack> {
  if (!existsSync(join(PKG, "dist", "index.html"))) {
    throw new Error("clients/web/dist is not built: run `make web-dist` at the repository root");
  }
  const port = await freePort();
  const logDir = join(ROOT, "build", "web-test", name);
  mkdirSync(logDir, { recursive: true });
  const child = spawn(
    python(),
    [
      "-m",
      "spades_server.stack",
      "--port",
      String(port),
      "--log-dir",
      logDir,
      "--",
      "--store",
      "memory",
      "--port",
      "0",
      "--metrics-port",
      "-1",
      ...serverFlags,
    ],
    { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, SPADES_OPERATOR_TOKEN: "" } },
  );
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  const stderr: string[] = [];
  child.stderr!.on("data", (b: Buffer) => stderr.push(b.toString()));
  let url = "";
  let token = "";
  try {
    await new Promise<void>((done, fail) => {
      const timer = setTimeout(() => fail(new Error(`the stack was not up in ${START_TIMEOUT_MS} ms: ${stderr.join("")}`)), START_TIMEOUT_MS);
      const lines = createInterface({ input: child.stdout! });
      lines.on("line", (line) => {
        const up = /^Spades is up: open (\S+)/.exec(line);
        const op = /^operator token: (\S+)/.exec(line);
        if (up) url = up[1]!;
        if (op) token = op[1]!;
        if (url !== "" && token !== "") {
          clearTimeout(timer);
          done();
        }
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        fail(new Error(`the stack exited (${code}) before it was up: ${stderr.join("")}`));
      });
    });
  } catch (e) {
    await stopChild(child, exited);
    throw e;
  }
  return {
    url,
    address: `127.0.0.1:${port}`,
    operatorToken: token,
    stop: () => stopChild(child, exited),
  };
}

async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return;
  }
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}

export const CHROMIUM = process.env["SPADES_CHROMIUM"] || "/usr/bin/chromium";

/** Debian's Chromium, headless, with the flags this machine's closed network needs. */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium (or set SPADES_CHROMIUM)`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    timeout: 60_000,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-dev-shm-usage",
    ],
  });
}

/** A phone-sized page (375 × 812) that records the page's errors. */
export async function phonePage(browser: Browser): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 375, height: 812 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  context.setDefaultTimeout(20_000);
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text());
  });
  return { context, page, errors };
}
