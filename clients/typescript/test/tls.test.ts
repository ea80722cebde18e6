// TLS and mutual TLS against a real server (serve.py --tls: certificates made
// for the run): a player on the main port trusting the run's CA, the operator
// on the operator port with a client certificate; a private match, its
// spectator token, reissueSeatToken and setSpectators; the README's TLS example.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { Code, SpadesError, Spectators, connect, pollSpectate, spectate, streamEvents, tlsFiles, type EventStream, type SpadesClient } from "../src/node.js";
import { PKG, WAIT_MS, startServer, within, type Server } from "./harness.js";

const ONCE = { maxAttempts: 1, initialDelayMs: 10 };

/** How a stream ends: its error, after any events still on their way. */
async function ending(stream: EventStream): Promise<SpadesError> {
  return within(
    WAIT_MS,
    "the stream's end",
    (async () => {
      try {
        for await (const _ of stream) {
          // events before the refusal
        }
      } catch (e) {
        assert.ok(e instanceof SpadesError, String(e));
        return e;
      }
      throw new Error("the stream ended without an error");
    })(),
  );
}

/** The kind of the stream's first event; the stream stays open. */
async function nextKind(stream: EventStream): Promise<string | undefined> {
  const next = await within(WAIT_MS, "the first event", stream[Symbol.asyncIterator]().next());
  return next.done ? undefined : next.value.kind.case;
}

/** The kind of the stream's first event, then the stream closed. */
async function firstEvent(stream: EventStream): Promise<string | undefined> {
  try {
    return await nextKind(stream);
  } finally {
    stream.close();
  }
}

describe("TLS", () => {
  let server: Server;
  let tls: NonNullable<Server["tls"]>;
  let operator: SpadesClient;
  let player: SpadesClient;

  before(async () => {
    server = await startServer("--tls");
    assert.ok(server.tls && server.operator, "serve.py --tls printed the operator port and the certificates");
    tls = server.tls;
    operator = connect(server.operator, {
      tls: tlsFiles({ ca: tls.ca, cert: tls.clientCert, key: tls.clientKey }),
      operatorToken: server.operatorToken,
    });
    player = connect(server.address, { tls: tlsFiles({ ca: tls.ca }), operatorToken: server.operatorToken });
  });
  after(async () => {
    await server?.stop();
  });

  it("serves players over TLS and the operator over mutual TLS, with spectator tokens and reissued seat tokens", async () => {
    const created = await operator.createMatch({
      seats: [{ name: "Me" }, { bot: true }, { bot: true }, { bot: true }],
      seed: 5n,
      hasSeed: true,
      spectators: Spectators.TOKEN,
    });
    const matchId = created.match!.matchId;
    assert.equal(created.match!.spectators, Spectators.TOKEN);
    assert.ok(created.spectatorToken.startsWith(matchId + "."), created.spectatorToken);
    const seat = player.seat(created.seatTokens[0]!.token);
    assert.equal((await seat.claim()).seat, 0);

    // The operator token on the players' port: refused, it needs the certificate.
    await assert.rejects(player.getMatch(matchId), (e: SpadesError) => e.code === Code.PermissionDenied && e.reason === "CLIENT_CERT_REQUIRED");

    const missing = await ending(spectate(player, matchId, { retry: ONCE }));
    assert.deepEqual([missing.code, missing.reason], [Code.Unauthenticated, "SPECTATOR_TOKEN_REQUIRED"]);
    const token = created.spectatorToken;
    assert.equal(await firstEvent(spectate(player, matchId, { spectatorToken: token })), "handStarted");
    assert.equal(await firstEvent(pollSpectate(player, matchId, { spectatorToken: token, waitMs: 0 })), "handStarted");

    // The old token's open stream ends when the operator replaces it.
    const old = streamEvents(seat);
    assert.equal(await nextKind(old), "handStarted"); // the call is open
    const reissued = await operator.reissueSeatToken(matchId, 0);
    assert.equal(reissued.seatToken!.seat, 0);
    const revoked = await ending(old);
    assert.deepEqual([revoked.code, revoked.reason], [Code.Unauthenticated, "TOKEN_REVOKED"]);
    await player.seat(reissued.seatToken!.token).claim();

    const changed = await operator.setSpectators(matchId, Spectators.NONE);
    assert.equal(changed.match!.spectators, Spectators.NONE);
    assert.equal(changed.spectatorToken, "");
    const closed = await ending(spectate(player, matchId, { spectatorToken: token, retry: ONCE }));
    assert.deepEqual([closed.code, closed.reason], [Code.PermissionDenied, "NOT_SPECTATABLE"]);
  });

  it("connects to nothing without the client certificate, without the CA, or in plaintext", async () => {
    const attempts: Array<[string, SpadesClient]> = [
      ["no client certificate", connect(server.operator!, { tls: tlsFiles({ ca: tls.ca }), operatorToken: server.operatorToken, retry: ONCE })],
      ["Node's CAs", connect(server.address, { tls: true, operatorToken: server.operatorToken, retry: ONCE })],
      ["plaintext", connect(server.address, { operatorToken: server.operatorToken, retry: ONCE })],
    ];
    for (const [what, client] of attempts) {
      await assert.rejects(
        within(WAIT_MS, what, client.getMatch("no-such-match")),
        (e: SpadesError) => e instanceof SpadesError && e.code !== Code.NotFound,
        what,
      );
    }
    assert.throws(() => tlsFiles({ ca: tls.ca, cert: tls.clientCert }), /cert and key go together/);
    assert.throws(() => tlsFiles({ ca: tls.ca + ".missing" }), /ENOENT/);
  });

  it("runs the README's TLS example as it is printed there", async () => {
    const readme = readFileSync(join(PKG, "README.md"), "utf8");
    const example = readFileSync(join(PKG, "examples", "tls.ts"), "utf8");
    assert.ok(readme.includes("```ts\n" + example + "```\n"), "README.md shows examples/tls.ts verbatim");
    const { stdout } = await promisify(execFile)(process.execPath, [join(PKG, "dist", "examples", "tls.js")], {
      env: {
        ...process.env,
        SPADES_ADDRESS: server.address,
        SPADES_OPERATOR_ADDRESS: server.operator!,
        SPADES_CA: tls.ca,
        SPADES_CLIENT_CERT: tls.clientCert,
        SPADES_CLIENT_KEY: tls.clientKey,
        SPADES_OPERATOR_TOKEN: server.operatorToken,
      },
      timeout: 60_000,
    });
    assert.equal(stdout, "seat 0 claimed over TLS\na spectator sees handStarted\n");
  });
});
