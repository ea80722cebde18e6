// The resuming event streams (src/events.ts) on StreamEvents and Spectate:
// against a real server (serve.py, whose proxy cuts every connection on
// demand) and against a scripted opener for the exact reconnection rules.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, before, describe, it } from "node:test";
import { create } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import {
  BotLevel,
  Code,
  EventStream,
  MatchEventSchema,
  SpadesError,
  connect,
  spectate,
  streamEvents,
  type EventStreamOptions,
  type MatchEvent,
  type OpenEvents,
  type ReconnectInfo,
  type SeatClient,
  type SpadesClient,
} from "../src/node.js";
import { FAST, WAIT_MS, startServer, within, type Server } from "./harness.js";
import { EventReader as Reader } from "./reader.js";


function seqs(events: readonly MatchEvent[]): string[] {
  return events.map((e) => `${e.seq} ${e.kind.case}`);
}

async function newMatch(client: SpadesClient, seed: bigint): Promise<SeatClient> {
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

/** Reads a stream from the start until `last`, on calls never cut, and closes it. */
async function readUpTo(stream: EventStream, last: bigint): Promise<MatchEvent[]> {
  const reader = new Reader(stream);
  await reader.waitFor(`event ${last}`, () => (reader.events.at(-1)?.seq ?? 0n) >= last);
  stream.close();
  await reader.done;
  return reader.events.filter((e) => e.seq <= last);
}

describe("event streams against a real server", { timeout: 240_000 }, () => {
  let server: Server;
  let client: SpadesClient;
  before(async () => {
    server = await startServer();
    client = connect(server.address, { operatorToken: server.operatorToken, retry: FAST });
  });
  after(async () => {
    await server?.stop();
  });

  it("plays a hand with SubmitAction over a StreamEvents stream cut every third action: no gap, no duplicate", async () => {
    const seat = await newMatch(client, 29n);
    const reconnects: ReconnectInfo[] = [];
    const stream = streamEvents(seat, { retry: FAST, onReconnect: (info) => reconnects.push(info) });
    const reader = new Reader(stream);
    let cuts = 0;
    let acted = 0;
    try {
      while (!reader.has("handScored")) {
        const view = await seat.getView();
        const action = view.legalActions[0];
        if (action === undefined) {
          const seen = reader.events.length;
          await reader.waitFor("the next event", () => reader.events.length > seen || reader.has("handScored"));
          continue;
        }
        const res = await seat.submitAction(action, { expectedSeq: view.asOfSeq });
        // The action's events reach the stream too (each once).
        await reader.waitFor(`event ${res.lastSeq}`, () => stream.lastSeq >= res.lastSeq);
        if (++acted % 3 === 0) {
          await server.cut();
          cuts++;
        }
      }
      await reader.waitFor(`reconnection ${cuts}`, () => stream.reconnects >= cuts);
    } finally {
      stream.close();
    }
    await reader.done;
    assert.equal(reader.error, undefined);
    assert.ok(cuts >= 4, `${cuts} cuts`);
    assert.ok(stream.reconnects >= cuts, `${stream.reconnects} reconnects for ${cuts} cuts`);
    assert.ok(reconnects.every((r) => r.afterSeq > 0n));
    const last = reader.events.at(-1)!.seq;
    assert.deepEqual(seqs(reader.events), seqs(await readUpTo(streamEvents(seat), last)));
    assert.ok(reader.events.every((e, i, a) => i === 0 || e.seq > a[i - 1]!.seq));
    // The next hand starts at once and its bots may play before the stream
    // closes: count the first hand's cards, up to its handScored.
    const scored = reader.events.findIndex((e) => e.kind.case === "handScored");
    const hand = reader.events.slice(0, scored + 1);
    assert.equal(hand.filter((e) => e.kind.case === "cardPlayed").length, 52);
  });

  it("spectates: public events only, resumed across cuts without gap or duplicate", async () => {
    const seat = await newMatch(client, 31n);
    const stream = spectate(client, seat.matchId, { retry: FAST });
    const reader = new Reader(stream);
    try {
      await reader.waitFor("the deal", () => reader.has("handStarted"));
      await server.cut();
      await seat.leave(); // the stand-in and the bots play on at once
      await reader.waitFor("a scored hand", () => reader.has("handScored"));
      await server.cut();
      await reader.waitFor("events after the second cut", () => stream.reconnects >= 2 && reader.events.length > 0);
    } finally {
      stream.close();
    }
    await reader.done;
    assert.equal(reader.error, undefined);
    const kinds = new Set(reader.events.map((e) => e.kind.case));
    assert.ok(!kinds.has("handShown") && !kinds.has("cardsPassed") && !kinds.has("chatMessage"), [...kinds].join(" "));
    const last = reader.events.at(-1)!.seq;
    assert.deepEqual(seqs(reader.events), seqs(await readUpTo(spectate(client, seat.matchId), last)));
  });

  it("resumes after afterSeq, as after a reload: exactly the events after it", async () => {
    const seat = await newMatch(client, 37n);
    const view = await seat.getView();
    const all = await readUpTo(streamEvents(seat), view.asOfSeq);
    const middle = all[Math.floor(all.length / 2)]!.seq;
    const rest = await readUpTo(streamEvents(seat, { afterSeq: middle }), view.asOfSeq);
    assert.deepEqual(seqs(rest), seqs(all.filter((e) => e.seq > middle)));
  });

  it("ends with the refusal of a bad credential or an unknown match, without reconnecting", async () => {
    const seat = await newMatch(client, 43n);
    const forged = client.seat(`${seat.matchId}.not-the-secret`);
    const seen: ReconnectInfo[] = [];
    const stream = streamEvents(forged, { onReconnect: (info) => seen.push(info) });
    const ended = await within(WAIT_MS, "the stream's end", stream.ended);
    assert.ok(ended instanceof SpadesError);
    assert.equal(ended.code, Code.Unauthenticated);
    assert.equal(ended.reason, "UNAUTHENTICATED");
    assert.equal(seen.length, 0);
    const reader = new Reader(stream); // the iterator ends with the same error
    await within(WAIT_MS, "the iterator's end", reader.done);
    assert.equal(reader.error, ended);

    const missing = await within(WAIT_MS, "a spectator's end", spectate(client, "no-such-match").ended);
    assert.ok(missing instanceof SpadesError);
    assert.equal(missing.code, Code.NotFound);
    assert.equal(missing.reason, "MATCH_NOT_FOUND");
  });

  it("is ended by close() and by its AbortSignal", async () => {
    const seat = await newMatch(client, 47n);
    const closed = streamEvents(seat);
    const reader = new Reader(closed);
    await reader.waitFor("the deal", () => reader.has("handShown"));
    closed.close();
    await within(WAIT_MS, "the iterator's end", reader.done);
    assert.equal(reader.error, undefined);
    assert.equal(await closed.ended, undefined);

    const abort = new AbortController();
    const aborted = streamEvents(seat, { signal: abort.signal });
    const second = new Reader(aborted);
    await second.waitFor("the deal", () => second.has("handShown"));
    abort.abort();
    await within(WAIT_MS, "the iterator's end", second.done);
    assert.ok(second.error instanceof SpadesError);
    assert.equal(second.error.code, Code.Canceled);
  });

  it("gives up after maxAttempts calls in a row to a server that is not there, backing off", async () => {
    const port = await freePort();
    const lonely = connect(`127.0.0.1:${port}`);
    const seen: ReconnectInfo[] = [];
    const stream = spectate(lonely, "nomatch", {
      retry: { maxAttempts: 3, initialDelayMs: 10, multiplier: 2, jitter: 0, random: () => 0 },
      onReconnect: (info) => seen.push(info),
    });
    const ended = await within(WAIT_MS, "the stream's end", stream.ended);
    assert.ok(ended instanceof SpadesError);
    assert.equal(ended.code, Code.Unavailable);
    assert.match(ended.message, /gave up after 3/);
    assert.deepEqual(seen.map((s) => [s.attempt, s.delayMs]), [
      [1, 10],
      [2, 20],
      [3, 40],
    ]);
  });
});

describe("event stream reconnection rules (scripted calls)", () => {
  const ev = (seq: number): MatchEvent => create(MatchEventSchema, { seq: BigInt(seq) });

  /** An opener that plays `script[i]` on its i-th call: batches, then an end or an error. */
  function scripted(script: { batches: number[][]; then: "end" | Error }[], afterSeqs: bigint[]): OpenEvents {
    let call = 0;
    return (afterSeq) => {
      afterSeqs.push(afterSeq);
      const step = script[Math.min(call++, script.length - 1)]!;
      return (async function* () {
        for (const b of step.batches) {
          yield { events: b.map(ev) };
        }
        if (step.then instanceof Error) {
          throw step.then;
        }
      })();
    };
  }

  const quick: EventStreamOptions["retry"] = { initialDelayMs: 1, jitter: 0, maxAttempts: 3 };

  it("reopens after the last sequence number delivered and skips what it already delivered", async () => {
    const afterSeqs: bigint[] = [];
    const stream = new EventStream(
      scripted(
        [
          { batches: [[1, 2], [3]], then: "end" }, // a proxy's timeout: the call just ends
          { batches: [[2, 3, 4]], then: new ConnectError("reset", Code.Unavailable) }, // overlaps
          { batches: [[4], [5, 7]], then: new ConnectError("stop", Code.PermissionDenied) },
        ],
        afterSeqs,
      ),
      { retry: quick },
    );
    const reader = new Reader(stream);
    await within(WAIT_MS, "the stream's end", reader.done);
    assert.deepEqual(reader.events.map((e) => Number(e.seq)), [1, 2, 3, 4, 5, 7]);
    assert.deepEqual(afterSeqs, [0n, 3n, 4n]);
    assert.ok(reader.error instanceof SpadesError);
    assert.equal(reader.error.code, Code.PermissionDenied); // not transient: no fourth call
    assert.equal(stream.lastSeq, 7n);
    assert.equal(stream.reconnects, 2);
  });

  it("counts calls that delivered nothing as attempts in a row, and one that delivered as a new start", async () => {
    const afterSeqs: bigint[] = [];
    const fail = new ConnectError("refused", Code.Unavailable);
    const seen: number[] = [];
    const stream = new EventStream(
      scripted(
        [
          { batches: [], then: fail },
          { batches: [], then: fail },
          { batches: [[1]], then: fail }, // got through: the count starts again
          { batches: [], then: fail },
        ],
        afterSeqs,
      ),
      { retry: { ...quick, resetAfterMs: 60_000 }, afterSeq: 0n, onReconnect: (i) => seen.push(i.attempt) },
    );
    const ended = await within(WAIT_MS, "the stream's end", stream.ended);
    assert.ok(ended instanceof SpadesError);
    assert.match(ended.message, /gave up after 3/);
    assert.deepEqual(seen, [1, 2, 1, 2, 3]);
    assert.deepEqual(afterSeqs, [0n, 0n, 0n, 1n, 1n, 1n]);
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
