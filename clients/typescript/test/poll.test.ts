// The long-poll event source (pollEvents, pollSpectate in src/events.ts): the
// same EventStream as streamEvents, made of PollEvents calls. Against a real
// server (serve.py, native gRPC, whose proxy cuts every connection on
// demand), through Envoy with gRPC-Web as a browser calls (the stack `make
// run` starts), and against scripted answers (an in-memory router transport)
// for the exact rules of the loop.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { ConnectError, createRouterTransport, type Interceptor, type Transport } from "@connectrpc/connect";
import { createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import {
  BotLevel,
  Code,
  EventStream,
  MatchEventSchema,
  Phase,
  PollEventsResponseSchema,
  SpadesClient,
  SpadesError,
  SpadesService,
  pollEvents,
  pollSpectate,
  spectate,
  streamEvents,
  type MatchEvent,
  type PollEventsRequest,
  type PollEventsResponse,
  type ReconnectInfo,
  type SeatClient,
} from "../src/node.js";
import { FAST, WAIT_MS, startServer, within, type Server } from "./harness.js";
import { EventReader as Reader } from "./reader.js";
import { startStack, type Stack } from "./stack.js";

/** Hidden from every seat but its holder or its team, and from spectators. */
const PRIVATE = new Set(["handShown", "cardsPassed", "chatMessage", "cardsDrawn"]);

function wire(events: readonly MatchEvent[]): string[] {
  return events.map((e) => Buffer.from(toBinary(MatchEventSchema, e)).toString("hex"));
}

function kinds(events: readonly MatchEvent[]): string[] {
  return events.map((e) => `${e.seq} ${e.kind.case}`);
}

/** Every PollEvents call a client makes: its request, and its answer or failure. */
class PollLog {
  readonly calls: { request: PollEventsRequest; authorization: string | null; response?: PollEventsResponse; error?: unknown }[] = [];
  readonly interceptor: Interceptor = (next) => async (req) => {
    if (req.method.name !== "PollEvents") {
      return next(req);
    }
    const entry: (typeof this.calls)[number] = { request: req.message as PollEventsRequest, authorization: req.header.get("authorization") };
    this.calls.push(entry);
    try {
      const res = await next(req);
      if (!res.stream) {
        entry.response = res.message as PollEventsResponse;
      }
      return res;
    } catch (e) {
      entry.error = e;
      throw e;
    }
  };
}

interface Target {
  client: SpadesClient;
  log: PollLog;
  /** Cuts every connection (serve.py's proxy); undefined through Envoy. */
  cut: (() => Promise<number>) | undefined;
}

async function botMatch(t: Target, seed: bigint, level = BotLevel.EASY): Promise<SeatClient> {
  const created = await t.client.createMatch({
    // No mercy score: a match ends when a side reaches 300, not when one sinks after a hand.
    ruleset: { preset: "classic", targetScore: 300, noMercyScore: true },
    seed,
    hasSeed: true,
    seats: [
      { name: "You" },
      { name: "W", bot: true, botLevel: level },
      { name: "N", bot: true, botLevel: level },
      { name: "E", bot: true, botLevel: level },
    ],
  });
  const seat = t.client.seat(created.seatTokens[0]!.token);
  await seat.claim();
  return seat;
}

/** Four human seats: nothing happens until a test acts, so a poll waits. */
async function quietMatch(t: Target, seed: bigint): Promise<SeatClient[]> {
  const created = await t.client.createMatch({ seed, hasSeed: true, seats: [{ name: "S" }, { name: "W" }, { name: "N" }, { name: "E" }] });
  return created.seatTokens.map((s) => t.client.seat(s.token));
}

/** Reads a source from the start until an event numbered `last` or later, then closes it. */
async function readUpTo(stream: EventStream, last: bigint): Promise<MatchEvent[]> {
  const reader = new Reader(stream);
  await reader.waitFor(`event ${last}`, () => (reader.events.at(-1)?.seq ?? 0n) >= last);
  stream.close();
  await reader.done;
  return reader.events.filter((e) => e.seq <= last);
}

/** Reads a finished match's source to its MatchEnded event, then closes it. */
async function readToTheEnd(stream: EventStream): Promise<MatchEvent[]> {
  const reader = new Reader(stream);
  await reader.waitFor("the match's end", () => reader.has("matchEnded"));
  stream.close();
  await reader.done;
  return reader.events;
}

/** A match its bots play to the end by themselves (seat 0 handed to its stand-in): some 500 events, a few hands. */
async function finishedMatch(t: Target, seed: bigint): Promise<SeatClient> {
  const seat = await botMatch(t, seed, BotLevel.NORMAL);
  await seat.leave();
  const deadline = Date.now() + 60_000;
  while ((await seat.getView()).phase !== Phase.MATCH_OVER) {
    assert.ok(Date.now() < deadline, "the bots did not finish the match in time");
    await new Promise((r) => setTimeout(r, 100));
  }
  return seat;
}

/** The tests every transport passes: serve.py's native gRPC and Envoy's gRPC-Web. */
function behaves(name: string, target: () => Target): void {
  describe(name, () => {
    it("delivers a seat exactly what StreamEvents does over a whole hand, in the same order", async () => {
      const t = target();
      const seat = await botMatch(t, 61n);
      const reconnects: ReconnectInfo[] = [];
      const polled = pollEvents(seat, { retry: FAST, waitMs: 3_000, onReconnect: (info) => reconnects.push(info) });
      const streamed = streamEvents(seat, { retry: FAST });
      const poll = new Reader(polled);
      const stream = new Reader(streamed);
      let acted = 0;
      let cuts = 0;
      try {
        while (!poll.has("handScored")) {
          const seen = poll.events.length;
          const view = await seat.getView();
          const action = view.legalActions[0];
          if (action === undefined) {
            await poll.waitFor("the next event", () => poll.events.length > seen);
            continue;
          }
          const res = await seat.submitAction(action, { expectedSeq: view.asOfSeq });
          // The action's events visible to the seat come on the poll too.
          const mine = res.events.at(-1)?.seq ?? 0n;
          await poll.waitFor(`event ${mine}`, () => polled.lastSeq >= mine);
          if (t.cut !== undefined && ++acted % 4 === 0) {
            await t.cut();
            cuts++;
          }
        }
        const last = poll.events.at(-1)!.seq;
        await stream.waitFor(`event ${last} on the stream`, () => streamed.lastSeq >= last);
        if (cuts > 0) {
          await poll.waitFor("a reconnection", () => polled.reconnects >= 1);
        }
      } finally {
        polled.close();
        streamed.close();
      }
      await Promise.all([poll.done, stream.done]);
      assert.equal(poll.error, undefined);
      assert.equal(stream.error, undefined);
      const last = poll.events.at(-1)!.seq;
      const fromStream = stream.events.filter((e) => e.seq <= last);
      assert.deepEqual(kinds(poll.events), kinds(fromStream));
      assert.deepEqual(wire(poll.events), wire(fromStream));
      // The hand, each card once.
      const scored = poll.events.findIndex((e) => e.kind.case === "handScored");
      assert.equal(poll.events.slice(0, scored).filter((e) => e.kind.case === "cardPlayed").length, 52);
      if (t.cut !== undefined) {
        assert.ok(cuts >= 3, `${cuts} cuts`);
        assert.ok(reconnects.length >= 1 && reconnects.every((r) => r.afterSeq > 0n), `${reconnects.length} reconnections`);
      }
      // Every poll asked for the wait it was given (or none, after `more`), with the seat's credential.
      const mine = t.log.calls.filter((c) => c.request.matchId === seat.matchId);
      assert.ok(mine.length > 0);
      assert.ok(mine.every((c) => (c.request.waitMs === 0 || c.request.waitMs === 3_000) && c.authorization === `Bearer ${seat.token}`));
    });

    it("polls a finished match in batches of 256: again at once after `more`, every event once", async () => {
      const t = target();
      const seat = await finishedMatch(t, 62n);
      const streamed = await readToTheEnd(streamEvents(seat));
      assert.ok(streamed.length > 256, `${streamed.length} events: a match long enough for two batches`);
      const from = t.log.calls.length;
      const polled = await readToTheEnd(pollEvents(seat, { retry: FAST }));
      assert.deepEqual(wire(polled), wire(streamed));
      const calls = t.log.calls.slice(from).filter((c) => c.response !== undefined);
      // ceil(n / 256) answers: full ones that say `more`, then the rest.
      const full = Math.ceil(streamed.length / 256) - 1;
      const sizes = [...Array(full).fill(256), streamed.length - 256 * full];
      assert.deepEqual(calls.slice(0, full + 1).map((c) => c.response!.events.length), sizes);
      assert.deepEqual(calls.slice(0, full + 1).map((c) => c.response!.more), [...Array(full).fill(true), false]);
      // After a response that said `more`, the next poll does not wait; the first one may.
      assert.equal(calls[0]!.request.waitMs, 20_000);
      for (let i = 1; i <= full; i++) {
        assert.equal(calls[i]!.request.waitMs, 0, `poll ${i} follows more=true`);
        assert.equal(calls[i]!.request.afterSeq, calls[i - 1]!.response!.lastSeq, `poll ${i} starts where the last ended`);
      }
    });

    it("resumes after a given sequence number, as after a reload: exactly the events after it", async () => {
      const t = target();
      const seat = await finishedMatch(t, 63n);
      const all = await readToTheEnd(streamEvents(seat));
      for (const middle of [all[1]!.seq, all[Math.floor(all.length / 2)]!.seq, all.at(-2)!.seq]) {
        const rest = await readToTheEnd(pollEvents(seat, { afterSeq: middle }));
        assert.deepEqual(wire(rest), wire(all.filter((e) => e.seq > middle)), `after ${middle}`);
      }
      // A number between two visible events (a hidden one): the next visible event.
      const hidden = all.findIndex((e, i) => i > 0 && e.seq - all[i - 1]!.seq > 1n);
      assert.ok(hidden > 0, "a seat's events skip the other hands");
      const between = all[hidden - 1]!.seq + 1n;
      const rest = await readUpTo(pollEvents(seat, { afterSeq: between }), all[hidden + 2]!.seq);
      assert.deepEqual(kinds(rest), kinds(all.slice(hidden, hidden + 3)));
    });

    it("gives a spectator the public events only, as Spectate does", async () => {
      const t = target();
      const seat = await finishedMatch(t, 64n);
      const from = t.log.calls.length;
      const watched = await readToTheEnd(pollSpectate(t.client, seat.matchId, { retry: FAST }));
      const spectatorCalls = t.log.calls.slice(from);
      const spectated = await readToTheEnd(spectate(t.client, seat.matchId));
      assert.deepEqual(wire(watched), wire(spectated));
      const seen = new Set(watched.map((e) => e.kind.case as string));
      assert.deepEqual([...seen].filter((k) => PRIVATE.has(k)), [], "no hidden card reaches a spectator");
      assert.ok(seen.has("cardPlayed") && seen.has("handScored"));
      // The spectator's polls named the match and carried no credential (the client's operator token stays home).
      assert.ok(spectatorCalls.length > 0);
      assert.ok(spectatorCalls.every((c) => c.request.matchId === seat.matchId && c.authorization === null));
      // A seat of the same match sees its own hands; the spectator saw none.
      const mine = await readToTheEnd(pollEvents(seat));
      assert.ok(mine.some((e) => e.kind.case === "handShown"));
    });

    it("stops when closed, its waiting poll cancelled; an AbortSignal ends it as CANCELLED", async () => {
      const t = target();
      const seats = await quietMatch(t, 65n);
      const poller = pollEvents(seats[1]!, { waitMs: 20_000 });
      const reader = new Reader(poller);
      await reader.waitFor("the deal", () => reader.has("handShown"));
      // The table is still: the next poll waits on the server.
      await new Promise((r) => setTimeout(r, 300));
      const before = t.log.calls.length;
      const waiting = t.log.calls.at(-1)!;
      assert.equal(waiting.response, undefined, "a poll is waiting");
      const t0 = Date.now();
      poller.close();
      await within(WAIT_MS, "the iterator's end", reader.done);
      assert.ok(Date.now() - t0 < 2_000, "closing does not wait for the poll's wait");
      assert.equal(reader.error, undefined);
      assert.equal(await poller.ended, undefined);
      await new Promise((r) => setTimeout(r, 1_500));
      assert.equal(t.log.calls.length, before, "no poll after close()");
      assert.ok(waiting.error !== undefined && SpadesError.from(waiting.error).code === Code.Canceled, "the waiting poll was cancelled");
      // Something happens now: nobody is polling for it.
      const view = await seats[0]!.getView();
      await seats[view.toAct]!.submitAction((await seats[view.toAct]!.getView()).legalActions[0]!);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(t.log.calls.length, before);

      const abort = new AbortController();
      const aborted = pollEvents(seats[2]!, { signal: abort.signal });
      const second = new Reader(aborted);
      await second.waitFor("the deal", () => second.has("handShown"));
      abort.abort();
      await within(WAIT_MS, "the iterator's end", second.done);
      assert.ok(second.error instanceof SpadesError);
      assert.equal(second.error.code, Code.Canceled);
    });

    it("wakes on a new event long before its wait is over", async () => {
      const t = target();
      const seats = await quietMatch(t, 66n);
      const poller = pollEvents(seats[3]!, { waitMs: 15_000 });
      const reader = new Reader(poller);
      try {
        await reader.waitFor("the deal", () => reader.has("handShown"));
        await new Promise((r) => setTimeout(r, 300));
        const view = await seats[0]!.getView();
        const t0 = Date.now();
        const res = await seats[view.toAct]!.submitAction((await seats[view.toAct]!.getView()).legalActions[0]!);
        await reader.waitFor("the bid", () => poller.lastSeq >= res.lastSeq);
        assert.ok(Date.now() - t0 < 3_000, "woken by the bid, not by the end of the wait");
        assert.equal(reader.events.at(-1)!.kind.case, "bidMade");
      } finally {
        poller.close();
      }
      await reader.done;
    });

    it("ends with the refusal of a bad credential or an unknown match, without reconnecting", async () => {
      const t = target();
      const seats = await quietMatch(t, 67n);
      const seen: ReconnectInfo[] = [];
      const forged = pollEvents(t.client.seat(`${seats[0]!.matchId}.not-the-secret`), { onReconnect: (i) => seen.push(i) });
      const ended = await within(WAIT_MS, "the poller's end", forged.ended);
      assert.ok(ended instanceof SpadesError);
      assert.equal(ended.code, Code.Unauthenticated);
      assert.equal(ended.reason, "UNAUTHENTICATED");
      assert.equal(seen.length, 0);
      const missing = await within(WAIT_MS, "a spectator's end", pollSpectate(t.client, "no-such-match").ended);
      assert.ok(missing instanceof SpadesError);
      assert.equal(missing.code, Code.NotFound);
      assert.equal(missing.reason, "MATCH_NOT_FOUND");
    });
  });
}

describe("long polls against a real server (native gRPC, cut on demand)", { timeout: 300_000 }, () => {
  let server: Server;
  let t: Target;
  before(async () => {
    server = await startServer();
    const log = new PollLog();
    const transport = createGrpcTransport({ baseUrl: `http://${server.address}`, interceptors: [log.interceptor] });
    t = { client: new SpadesClient({ transport, operatorToken: server.operatorToken, retry: FAST }), log, cut: () => server.cut() };
  });
  after(async () => {
    await server?.stop();
  });
  behaves("serve.py", () => t);
});

describe("long polls through Envoy with gRPC-Web, as a browser calls", { timeout: 300_000 }, () => {
  let stack: Stack;
  let t: Target;
  before(async () => {
    stack = await startStack({ serverArgs: ["--actions-per-second", "10000"] });
    const log = new PollLog();
    const transport = createGrpcWebTransport({ baseUrl: stack.url, httpVersion: "1.1", useBinaryFormat: true, interceptors: [log.interceptor] });
    t = { client: new SpadesClient({ transport, operatorToken: stack.operatorToken, retry: FAST }), log, cut: undefined };
  });
  after(async () => {
    await stack?.stop();
  });
  behaves("Envoy", () => t);
});

describe("the long-poll loop's rules (scripted answers)", () => {
  const ev = (seq: number, kind: "bidMade" | "handShown" = "bidMade"): MatchEvent =>
    create(MatchEventSchema, { seq: BigInt(seq), kind: { case: kind, value: {} } });

  type Answer = { events: number[]; lastSeq: number; more?: boolean } | Error | "hang";

  /** A SpadesClient whose PollEvents plays `script[i]` on its i-th call and records every request. */
  function scripted(script: Answer[], requests: PollEventsRequest[]): SpadesClient {
    let call = 0;
    const transport: Transport = createRouterTransport((router) => {
      router.service(SpadesService, {
        pollEvents: async (req, ctx) => {
          requests.push(req);
          const step = script[Math.min(call++, script.length - 1)]!;
          if (step === "hang") {
            await new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true }));
          }
          if (step instanceof Error) {
            throw step;
          }
          const s = step as Exclude<Answer, Error | "hang">;
          return create(PollEventsResponseSchema, { events: s.events.map((n) => ev(n)), lastSeq: BigInt(s.lastSeq), more: s.more ?? false });
        },
      });
    });
    return new SpadesClient({ transport });
  }

  const quick = { initialDelayMs: 1, jitter: 0, maxAttempts: 3 };

  it("polls from each last_seq (past hidden events), at once and without waiting after `more`, skipping what it delivered", async () => {
    const requests: PollEventsRequest[] = [];
    const client = scripted(
      [
        { events: [1, 2], lastSeq: 5, more: true }, // 3 to 5: other seats' hands
        { events: [6, 7], lastSeq: 7 },
        { events: [7, 8], lastSeq: 9 }, // an overlap is dropped; 9 hidden
        new ConnectError("reset", Code.Unavailable),
        { events: [10], lastSeq: 10 },
        new ConnectError("no", Code.PermissionDenied),
      ],
      requests,
    );
    const seen: ReconnectInfo[] = [];
    const stream = pollEvents(client.seat("m1.secret"), { waitMs: 7_000, retry: quick, onReconnect: (i) => seen.push(i) });
    const reader = new Reader(stream);
    await within(WAIT_MS, "the end", reader.done);
    assert.deepEqual(reader.events.map((e) => Number(e.seq)), [1, 2, 6, 7, 8, 10]);
    assert.deepEqual(
      requests.map((r) => [r.matchId, Number(r.afterSeq), r.waitMs]),
      [
        ["m1", 0, 7_000],
        ["m1", 5, 0], // more: no wait
        ["m1", 7, 7_000],
        ["m1", 9, 7_000],
        ["m1", 9, 7_000], // after the reconnection: from the last last_seq, not the last event (8)
        ["m1", 10, 7_000],
      ],
    );
    assert.deepEqual(seen.map((s) => [s.attempt, Number(s.afterSeq), s.error.code]), [[1, 8, Code.Unavailable]]);
    assert.ok(reader.error instanceof SpadesError);
    assert.equal(reader.error.code, Code.PermissionDenied);
    assert.equal(stream.lastSeq, 10n);
    assert.equal(stream.reconnects, 1);
  });

  it("counts a poll that hung until its deadline as an attempt, and gives up after maxAttempts", async () => {
    const requests: PollEventsRequest[] = [];
    const client = scripted(["hang"], requests);
    const seen: number[] = [];
    // resetAfterMs 0: a stream's quiet call would count as through at once; a poll's does not.
    const stream = pollEvents(client.seat("m2.secret"), {
      waitMs: 0,
      deadlineMarginMs: 50,
      retry: { ...quick, resetAfterMs: 0 },
      onReconnect: (i) => seen.push(i.attempt),
    });
    const ended = await within(WAIT_MS, "giving up", stream.ended);
    assert.ok(ended instanceof SpadesError);
    assert.equal(ended.code, Code.DeadlineExceeded);
    assert.match(ended.message, /gave up after 3/);
    assert.deepEqual(seen, [1, 2, 3]);
    assert.equal(requests.length, 4);
  });

  it("pauses after an empty answer that came at once, instead of polling in a tight loop", async () => {
    const requests: PollEventsRequest[] = [];
    const client = scripted([{ events: [1], lastSeq: 1 }, { events: [], lastSeq: 1 }], requests);
    const stream = pollEvents(client.seat("m3.secret"), { waitMs: 0 });
    const reader = new Reader(stream);
    await reader.waitFor("the first event", () => reader.events.length === 1);
    await new Promise((r) => setTimeout(r, 2_500));
    stream.close();
    await reader.done;
    // 2.5 s of a server that never waits: the first poll, then one empty answer a second.
    assert.ok(requests.length >= 3 && requests.length <= 5, `${requests.length} polls`);
  });

  it("keeps its place when asked for after a number beyond the match's end", async () => {
    const requests: PollEventsRequest[] = [];
    // The match ends at 4 (the server answers with 4); then 5 and 6 come.
    const client = scripted([{ events: [], lastSeq: 4 }, { events: [5], lastSeq: 5 }, { events: [6, 7], lastSeq: 7 }, "hang"], requests);
    const stream = pollEvents(client.seat("m4.secret"), { afterSeq: 6n, waitMs: 1_000 });
    const reader = new Reader(stream);
    await reader.waitFor("event 7", () => stream.lastSeq >= 7n);
    await within(WAIT_MS, "the fourth poll", (async () => {
      while (requests.length < 4) {
        await new Promise((r) => setTimeout(r, 10));
      }
    })());
    stream.close();
    await reader.done;
    assert.deepEqual(reader.events.map((e) => Number(e.seq)), [7]);
    assert.deepEqual(requests.slice(0, 4).map((r) => Number(r.afterSeq)), [6, 6, 6, 7]);
  });

  it("refuses a negative or non-numeric wait before any call", () => {
    const client = scripted([], []);
    assert.throws(() => pollEvents(client.seat("m.s"), { waitMs: -1 }), RangeError);
    assert.throws(() => pollSpectate(client, "m", { waitMs: Number.NaN }), RangeError);
  });
});
