// Runs every clients/conformance/scenarios/*.json against a real server and
// compares each transcript with clients/conformance/expected/<name>.jsonl,
// byte for byte. Transcripts go to build/conformance/typescript/ at the root.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { connect, type SpadesClient } from "../src/node.js";
import { Runner, type Scenario } from "./conformance.js";
import { ROOT, startServer, type Server } from "./harness.js";

const SCENARIOS = join(ROOT, "clients", "conformance", "scenarios");
// Another directory of expected transcripts may be named for a comparison
// before they are in this tree (e.g. one exported from another branch).
const EXPECTED = process.env["SPADES_CONFORMANCE_EXPECTED"] || join(ROOT, "clients", "conformance", "expected");
const OUT = join(ROOT, "build", "conformance", "typescript");

const scenarios = readdirSync(SCENARIOS)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map((f) => JSON.parse(readFileSync(join(SCENARIOS, f), "utf8")) as Scenario);

describe("conformance", { timeout: 300_000 }, () => {
  let server: Server;
  let client: SpadesClient;
  before(async () => {
    server = await startServer();
    client = connect(server.address, { operatorToken: server.operatorToken, retry: { initialDelayMs: 50, maxDelayMs: 1000 } });
  });
  after(async () => {
    await server?.stop();
  });

  it("finds the scenarios", () => {
    assert.ok(scenarios.length >= 2, `scenarios in ${SCENARIOS}`);
  });

  for (const scenario of scenarios) {
    it(scenario.name, { timeout: 120_000 }, async (t) => {
      const runner = new Runner(client, server, scenario);
      const transcript = await runner.run();
      t.diagnostic(`${runner.staleRefusals} play actions refused STALE_SEQUENCE (GetView ahead of the stream) and sent again`);
      mkdirSync(OUT, { recursive: true });
      const written = join(OUT, `${scenario.name}.jsonl`);
      writeFileSync(written, transcript);
      const path = join(EXPECTED, `${scenario.name}.jsonl`);
      assert.ok(existsSync(path), `no expected transcript ${path} (this run's is ${written})`);
      const expected = readFileSync(path, "utf8");
      if (transcript !== expected) {
        assert.fail(firstDifference(transcript, expected, written, path));
      }
    });
  }
});

function firstDifference(actual: string, expected: string, actualPath: string, expectedPath: string): string {
  const a = actual.split("\n");
  const e = expected.split("\n");
  for (let i = 0; i < Math.max(a.length, e.length); i++) {
    if (a[i] !== e[i]) {
      return (
        `${actualPath} differs from ${expectedPath} at line ${i + 1} ` +
        `(${a.length - 1} lines vs ${e.length - 1}):\n  got:      ${a[i] ?? "<end>"}\n  expected: ${e[i] ?? "<end>"}`
      );
    }
  }
  return `${actualPath} differs from ${expectedPath}`;
}
