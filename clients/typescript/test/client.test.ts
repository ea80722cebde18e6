// What a user of the wrapper would notice, against a real server (serve.py):
// typed refusals, resuming without gaps or duplicates after cuts, idempotent
// retries, cancellation, the reconnection limit, and the README's example.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import {
  BotLevel,
  Code,
  Phase,
  SeatControl,
  SpadesError,
  backoffDelay,
  baseUrl,
  connect,
  resolveRetry,
  type ActionInit,
  type MatchEvent,
  type ReconnectInfo,
  type SeatClient,
  type SeatSession,
  type SpadesClient,
} from "../src/node.js";
import { FAST, PKG, WAIT_MS, startServer, within, type Server } from "./harness.js";
import { EventReader as Collector } from "./reader.js";


/** A match with seat 0 human and three bots, seed fixed; returns the claimed seat. */
async function newMatch(client: SpadesClient, seed = 11n): Promise<SeatClient> {
  const created = await createMatch(client, {
    ruleset: { preset: "classic" },
    seed,
    hasSeed: true,
    seats: [
      { name: "You" },
      { name: "W", bot: true, botLevel: BotLevel.EASY },
      { name: "N", bot: true, botLevel: BotLevel.NORMAL },
      { name: "E", bot: true, botLevel: BotLevel.HARD },
    ],
  });
  const seat = client.seat(created.seatTokens[0]!.token);
  await seat.claim();
  return seat;
}

/**
 * createMatch is not retried by the client (it is not idempotent). Right after
 * a test's cut, its first call may meet the dead connection before Node has
 * noticed it: UNAVAILABLE. A duplicate match is harmless here, so try again.
 */
async function createMatch(client: SpadesClient, request: Parameters<SpadesClient["createMatch"]>[0]) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await client.createMatch(request);
    } catch (e) {
      if (!(e instanceof SpadesError) || e.code !== Code.Unavailable || attempt >= 3) {
        throw e;
      }
    }
  }
}

/** Waits for the seat's turn and returns its first legal action. */
async function myTurn(seat: SeatClient, events: Collector): Promise<ActionInit> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const seen = events.events.length;
    const view = await seat.getView();
    if (view.legalActions[0] !== undefined) {
      return view.legalActions[0];
    }
    if (Date.now() > deadline) {
      throw new Error("not this seat's turn in time");
    }
    await events.next(seen);
  }
}

function seqs(events: MatchEvent[]): string[] {
  return events.map((e) => `${e.seq} ${e.kind.case}`);
}

async function refusal(promise: Promise<unknown>): Promise<SpadesError> {
  try {
    await within(WAIT_MS, "a refusal", promise);
  } catch (e) {
    assert.ok(e instanceof SpadesError, `a SpadesError, not ${String(e)}`);
    return e;
  }
  assert.fail("the server accepted what it should have refused");
}

describe("the wrapper against a real server", { timeout: 240_000 }, () => {
  let server: Server;
  let client: SpadesClient;
  before(async () => {
    server = await startServer();
    client = connect(server.address, { operatorToken: server.operatorToken, retry: FAST });
  });
  after(async () => {
    await server?.stop();
  });

  it("creates a match, looks it up, leaves and claims the seat", async () => {
    const seat = await newMatch(client, 5n);
    const summary = await client.getMatch(seat.matchId);
    assert.equal(summary.matchId, seat.matchId);
    assert.equal(summary.seats.length, 4);
    assert.equal(summary.seats[0]!.control, SeatControl.HUMAN);
    assert.equal((await seat.leave()).seat, 0);
    const left = await seat.getView();
    assert.equal(left.seats[0]!.control, SeatControl.BOT_STANDING_IN);
    const claimed = await seat.claim();
    assert.equal(claimed.seat, 0);
    assert.equal(claimed.view?.seats[0]?.control, SeatControl.HUMAN);
  });

  it("asks for a view at least as new as what the seat has seen (minSeq)", async () => {
    const seat = await newMatch(client, 6n);
    assert.equal(seat.seenSeq, 0n);
    const view = await seat.getView();
    assert.equal(seat.seenSeq, view.asOfSeq);
    const done = await seat.submitAction(view.legalActions[0]!);
    assert.equal(seat.seenSeq, done.lastSeq); // what the next view must include
    assert.ok((await seat.getView()).asOfSeq >= done.lastSeq);
    const err = await refusal(seat.getView({ minSeq: seat.seenSeq + 10_000n }));
    assert.equal(err.codeName, "OUT_OF_RANGE");
    assert.equal(err.reason, "SEQ_AHEAD");
  });

  it("refuses a unary call with a typed error: code, reason, rule, field violations", async () => {
    const seat = await newMatch(client);
    const view = await seat.getView();
    assert.equal(view.phase, Phase.BIDDING);
    const card = view.hand[0]!;
    const err = await refusal(seat.submitAction({ kind: { case: "playCard", value: { card } } }));
    assert.equal(err.code, Code.FailedPrecondition);
    assert.equal(err.codeName, "FAILED_PRECONDITION");
    assert.equal(err.reason, "WRONG_PHASE");
    assert.equal(err.domain, "spades.v1");
    assert.equal(typeof err.rule, "string");
    assert.ok(err.rule!.length > 0);
    assert.deepEqual(err.fieldViolations.map((v) => v.field), ["action"]);
    assert.ok(err.message.length > 0);
    assert.ok(err instanceof Error);

    const malformed = await refusal(
      seat.submitAction({ kind: { case: "playCard", value: { card: { suit: card.suit } } } }),
    );
    assert.equal(malformed.code, Code.InvalidArgument);
    assert.equal(malformed.reason, "INVALID_ARGUMENT");
    assert.deepEqual(malformed.fieldViolations.map((v) => v.field), ["action.play_card.card.rank"]);

    const stale = await refusal(seat.submitAction(view.legalActions[0]!, { expectedSeq: 1n }));
    assert.equal(stale.reason, "STALE_SEQUENCE");
    assert.equal(stale.metadata["current_seq"], String(view.asOfSeq));

    const noOperator = connect(server.address, { operatorToken: "op-not-it" });
    const denied = await refusal(noOperator.getMatch(seat.matchId));
    assert.equal(denied.code, Code.PermissionDenied);
    assert.equal(denied.reason, "NOT_OPERATOR");

    const unknown = await refusal(client.seat(`${seat.matchId}.not-the-secret`).getView());
    assert.equal(unknown.codeName, "UNAUTHENTICATED");
    assert.equal(unknown.reason, "UNAUTHENTICATED");
  });

  it("refuses an action on the Play stream with the same typed error, and the session goes on", async () => {
    const seat = await newMatch(client);
    const session = seat.open({ retry: FAST });
    const events = new Collector(session);
    try {
      const view = await seat.getView();
      const err = await refusal(session.act({ kind: { case: "playCard", value: { card: view.hand[0]! } } }));
      assert.equal(err.code, Code.FailedPrecondition);
      assert.equal(err.reason, "WRONG_PHASE");
      assert.ok((err.rule ?? "").length > 0);
      assert.deepEqual(err.fieldViolations.map((v) => v.field), ["action"]);
      const result = await within(WAIT_MS, "a bid", session.act(await myTurn(seat, events)));
      assert.ok(result.firstSeq > 0n && result.lastSeq >= result.firstSeq);
      assert.equal(result.error, undefined);
    } finally {
      await session.close();
    }
    await events.done;
    assert.equal(events.error, undefined);
  });

  it("resumes after every cut from the last sequence number: no gap, no duplicate", async () => {
    const seat = await newMatch(client, 23n);
    const reconnects: ReconnectInfo[] = [];
    const session = seat.open({ retry: FAST, onReconnect: (info) => reconnects.push(info) });
    const events = new Collector(session);
    let cuts = 0;
    try {
      // Play the whole first hand, cutting every connection after every third action.
      for (let acted = 0; events.count("handScored") === 0; acted++) {
        const action = await myTurn(seat, events);
        if (events.count("handScored") > 0) {
          break;
        }
        await within(WAIT_MS, "an action", session.act(action));
        if (acted % 3 === 2) {
          await server.cut();
          cuts++;
        }
      }
    } finally {
      await session.close();
    }
    await events.done;
    assert.equal(events.error, undefined);
    assert.ok(cuts >= 4, `${cuts} cuts`);
    assert.ok(session.reconnects >= cuts, `${session.reconnects} reconnects for ${cuts} cuts`);
    assert.ok(reconnects.every((r) => r.afterSeq > 0n));

    // The same seat's events read again from the start, on a call never cut.
    const fresh = seat.open();
    const all = new Collector(fresh);
    const last = events.events.at(-1)!.seq;
    while ((all.events.at(-1)?.seq ?? 0n) < last) {
      await all.next(all.events.length);
    }
    await fresh.close();
    await all.done;
    const upTo = all.events.filter((e) => e.seq <= last);
    assert.deepEqual(seqs(events.events), seqs(upTo));
    const strictlyIncreasing = events.events.every((e, i, a) => i === 0 || e.seq > a[i - 1]!.seq);
    assert.ok(strictlyIncreasing);
  });

  it("counts a drop after a successful reconnection as a new drop, not one more failed attempt", async () => {
    const seat = await newMatch(client, 41n);
    const session = seat.open({ retry: { ...FAST, maxAttempts: 1, resetAfterMs: 100 } });
    const events = new Collector(session);
    try {
      await events.next(0);
      for (let cut = 1; cut <= 3; cut++) {
        await server.cut();
        const deadline = Date.now() + WAIT_MS;
        while (session.reconnects < cut) {
          assert.ok(Date.now() < deadline, `reconnection ${cut} in time`);
          assert.equal(events.error, undefined);
          await new Promise((r) => setTimeout(r, 10));
        }
        await new Promise((r) => setTimeout(r, 300)); // the new call is up, quiet, past resetAfterMs
      }
      const result = await within(WAIT_MS, "an action after three cuts", session.act(await myTurn(seat, events)));
      assert.ok(result.lastSeq > 0n);
    } finally {
      await session.close();
    }
    await events.done;
    assert.equal(events.error, undefined);
  });

  it("resends an unacknowledged action after a cut with the same action_id: applied once", async () => {
    const seat = await newMatch(client, 31n);
    const session = seat.open({ retry: FAST });
    const events = new Collector(session);
    try {
      const action = await myTurn(seat, events);
      const pending = session.act(action, { actionId: "resend-1" });
      await server.cut();
      const result = await within(WAIT_MS, "the resent action", pending);
      assert.equal(result.actionId, "resend-1");
      assert.equal(session.unacknowledged, 0);
      // The result names the events it caused; each came exactly once.
      const caused = events.events.filter((e) => e.seq >= result.firstSeq && e.seq <= result.lastSeq);
      assert.ok(caused.length >= 1);
      assert.equal(new Set(events.events.map((e) => e.seq)).size, events.events.length);
      assert.equal(events.count("bidMade") >= 1, true);
      const mine = events.events.filter((e) => e.kind.case === "bidMade" && e.kind.value.seat === 0);
      assert.equal(mine.length, 1);
    } finally {
      await session.close();
    }
    await events.done;
  });

  it("answers a retried action_id with the first result, on Play and on SubmitAction", async () => {
    const seat = await newMatch(client);
    const session = seat.open({ retry: FAST });
    const events = new Collector(session);
    try {
      const bid = await myTurn(seat, events);
      const first = await session.act(bid, { actionId: "retry-1" });
      const again = await session.act(bid, { actionId: "retry-1" });
      assert.equal(again.firstSeq, first.firstSeq);
      assert.equal(again.lastSeq, first.lastSeq);
      const unary = await seat.submitAction(bid, { actionId: "retry-1" });
      assert.equal(unary.lastSeq, first.lastSeq);
      // Later actions of the bots have happened meanwhile; the retry applied nothing.
      const view = await seat.getView();
      assert.equal(view.bids[0]!.hasBid, true);
      const mine = events.events.filter((e) => e.kind.case === "bidMade" && e.kind.value.seat === 0);
      assert.equal(mine.length, 1);
    } finally {
      await session.close();
    }
    await events.done;
  });

  it("cancels through AbortSignal: calls, an action's wait, the whole session", async () => {
    const seat = await newMatch(client);

    const aborted = new AbortController();
    aborted.abort();
    const call = await refusal(seat.getView({ signal: aborted.signal }));
    assert.equal(call.code, Code.Canceled);

    const stop = new AbortController();
    const session = seat.open({ retry: FAST, signal: stop.signal });
    const events = new Collector(session);
    // Not this seat's turn after its bid: an action that waits, abandoned by its caller.
    await within(WAIT_MS, "a bid", session.act(await myTurn(seat, events)));
    const waiting = new AbortController();
    const view = await seat.getView();
    const pending = session.act({ kind: { case: "bid", value: { tricks: 1 } } }, { signal: waiting.signal });
    waiting.abort();
    const gaveUp = await refusal(pending);
    assert.equal(gaveUp.code, Code.Canceled);
    assert.ok(view.asOfSeq > 0n);

    const inFlight = session.act({ kind: { case: "bid", value: { tricks: 1 } } });
    stop.abort();
    const ended = await within(WAIT_MS, "the session's end", session.ended);
    assert.ok(ended instanceof SpadesError);
    assert.equal(ended.code, Code.Canceled);
    const lost = await refusal(inFlight);
    assert.equal(lost.code, Code.Canceled);
    await events.done;
    assert.ok(events.error instanceof SpadesError);
    assert.equal((events.error as SpadesError).code, Code.Canceled);
    await refusal(session.act({ kind: { case: "bid", value: { tricks: 1 } } }));
  });

  it("gives up a session whose credential is refused, without reconnecting", async () => {
    const seat = await newMatch(client);
    const reconnects: ReconnectInfo[] = [];
    const session = client.seat(`${seat.matchId}.not-the-secret`).open({ retry: FAST, onReconnect: (r) => reconnects.push(r) });
    const ended = await within(WAIT_MS, "the session's end", session.ended);
    assert.ok(ended instanceof SpadesError);
    assert.equal(ended.code, Code.Unauthenticated);
    assert.equal(ended.reason, "UNAUTHENTICATED");
    assert.equal(reconnects.length, 0);
  });

  it("runs the README's example as it is printed there", async () => {
    const readme = readFileSync(join(PKG, "README.md"), "utf8");
    const example = readFileSync(join(PKG, "examples", "play-hand.ts"), "utf8");
    assert.ok(readme.includes("```ts\n" + example + "```\n"), "README.md shows examples/play-hand.ts verbatim");
    const { stdout } = await promisify(execFile)(process.execPath, [join(PKG, "dist", "examples", "play-hand.js")], {
      env: { ...process.env, SPADES_ADDRESS: server.address, SPADES_OPERATOR_TOKEN: server.operatorToken },
      timeout: 60_000,
    });
    assert.match(stdout, /seat 0 bids \d+/);
    assert.match(stdout, /trick 13 to seat \d/);
    assert.match(stdout, /hand scored: -?\d+ to -?\d+/);
  });
});

describe("the package", () => {
  it("keeps Node out of its core API: only src/node.ts imports Node modules or connect-node", () => {
    const dir = join(PKG, "dist", "src");
    const files = readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".js") && f !== "node.js");
    assert.ok(files.includes("index.js") && files.includes("session.js"), files.join(", "));
    for (const file of files) {
      const text = readFileSync(join(dir, file), "utf8");
      const imports = [...text.matchAll(/^\s*(?:import|export)\s[^;"]*?\bfrom\s+"([^"]+)"|^\s*import\s+"([^"]+)"/gm)].map((m) => (m[1] ?? m[2])!);
      for (const spec of imports) {
        assert.ok(
          spec.startsWith(".") || spec.startsWith("@bufbuild/protobuf") || spec === "@connectrpc/connect",
          `${file} imports ${spec}`,
        );
      }
    }
  });

  it("builds the base URL for plaintext and TLS", () => {
    assert.equal(baseUrl("localhost:50051", undefined), "http://localhost:50051");
    assert.equal(baseUrl("localhost:50051", true), "https://localhost:50051");
    assert.equal(baseUrl("localhost:50051", { servername: "spades.example" }), "https://localhost:50051");
    assert.equal(baseUrl("https://spades.example:443", undefined), "https://spades.example:443");
    assert.equal(baseUrl("http://spades.example:443", true), "https://spades.example:443");
  });
});

describe("reconnection backoff", () => {
  it("grows exponentially up to its cap, with jitter inside its share", () => {
    const r = resolveRetry({ initialDelayMs: 100, maxDelayMs: 1000, multiplier: 2, jitter: 0.5, random: () => 0 });
    assert.deepEqual([1, 2, 3, 4, 5, 6].map((a) => backoffDelay(a, r)), [100, 200, 400, 800, 1000, 1000]);
    const high = resolveRetry({ initialDelayMs: 100, jitter: 0.5, random: () => 0.999999 });
    const d = backoffDelay(2, high);
    assert.ok(d > 100 && d <= 200 * 0.5 + 1e-6 + 100, `${d}`);
    assert.throws(() => resolveRetry({ jitter: 2 }), RangeError);
  });

  it("stops after maxAttempts reconnections in a row to a server that is not there", async () => {
    const port = await freePort();
    const lonely = connect(`127.0.0.1:${port}`);
    const seen: ReconnectInfo[] = [];
    const session = lonely.seat("nomatch.secret").open({
      retry: { maxAttempts: 3, initialDelayMs: 10, multiplier: 2, jitter: 0, random: () => 0 },
      onReconnect: (info) => seen.push(info),
    });
    const ended = await within(WAIT_MS, "the session's end", session.ended);
    assert.ok(ended instanceof SpadesError);
    assert.equal(ended.code, Code.Unavailable);
    assert.match(ended.message, /gave up after 3/);
    assert.deepEqual(seen.map((s) => [s.attempt, s.delayMs]), [
      [1, 10],
      [2, 20],
      [3, 40],
    ]);
    assert.equal(session.reconnects, 3);
  });
});

/** A loopback port that nothing listens on (it was free a moment ago). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const address = s.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      s.close(() => resolve(port));
    });
  });
}
