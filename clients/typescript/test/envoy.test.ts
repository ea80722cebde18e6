// The browser path without a browser: the stack `make run` starts (Envoy in
// front of spades-server, python -m spades_server.stack), called as a browser
// would call it, over HTTP/1.1 with binary protobuf: gRPC-Web and Connect,
// unary calls and server streams (StreamEvents, Spectate) and the PollEvents
// long poll, refusals with their ErrorInfo; CORS preflights and responses
// (Node's fetch, which sends whatever Origin it is given); the web table's
// files; and native gRPC (HTTP/2, the bidirectional Play call) through the
// same listener.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { toBinary } from "@bufbuild/protobuf";
import { Code, createClient, type Client, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import {
  MatchEventSchema,
  Phase,
  SpadesClient,
  SpadesError,
  SpadesService,
  connect,
  type MatchEvent,
  type SeatClient,
} from "../src/node.js";
import { within } from "./harness.js";
import { startStack, type Stack } from "./stack.js";

const WAIT_MS = 20_000;
const ALLOWED = "https://table.example";
const OTHER = "https://elsewhere.example";
const INDEX = "<!doctype html><title>web table (test)</title>";

const PROTOCOLS: Record<string, (baseUrl: string) => Transport> = {
  "gRPC-Web": (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true }),
  Connect: (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true }),
};

/** A unary call's options with a credential (and a deadline). */
function auth(token: string): { headers: Record<string, string>; timeoutMs: number } {
  return { headers: { authorization: `Bearer ${token}` }, timeoutMs: WAIT_MS };
}

/** A stream's options with a credential: no deadline, the signal ends it. */
function streamAuth(token: string, signal: AbortSignal): { headers: Record<string, string>; signal: AbortSignal } {
  return { headers: { authorization: `Bearer ${token}` }, signal };
}

async function refusal(promise: Promise<unknown>): Promise<SpadesError> {
  try {
    await within(WAIT_MS, "a refusal", promise);
  } catch (e) {
    return SpadesError.from(e);
  }
  assert.fail("the call was accepted");
}

function wire(events: MatchEvent[]): string[] {
  return events.map((e) => Buffer.from(toBinary(MatchEventSchema, e)).toString("hex"));
}

/** Four human seats, nobody to act by themselves: events come only when a test acts. */
async function quietMatch(client: SpadesClient, seed: bigint): Promise<SeatClient[]> {
  const created = await client.createMatch({
    seed,
    hasSeed: true,
    seats: [{ name: "S" }, { name: "W" }, { name: "N" }, { name: "E" }],
  });
  return created.seatTokens.map((t) => client.seat(t.token));
}

/** The seat to act acts (its first legal action); returns its events' sequence numbers. */
async function actOnce(seats: SeatClient[]): Promise<bigint> {
  const view = await seats[0]!.getView();
  const seat = seats[view.toAct]!;
  const own = await seat.getView();
  const res = await seat.submitAction(own.legalActions[0]!);
  return res.lastSeq;
}

describe("through Envoy, as a browser calls", { timeout: 300_000 }, () => {
  let stack: Stack;
  let webDir: string;
  let stopped = false;
  before(async () => {
    webDir = mkdtempSync(join(tmpdir(), "spades-web-"));
    writeFileSync(join(webDir, "index.html"), INDEX);
    mkdirSync(join(webDir, "assets"));
    writeFileSync(join(webDir, "assets", "app.js"), "export {};\n");
    stack = await startStack({
      corsOrigins: [ALLOWED],
      webDir,
      serverArgs: ["--actions-per-second", "10000", "--poll-max-wait-ms", "5000"],
    });
  });
  after(async () => {
    if (!stopped) {
      await stack?.stop();
    }
    rmSync(webDir, { recursive: true, force: true });
  });

  for (const [protocol, makeTransport] of Object.entries(PROTOCOLS)) {
    describe(protocol, () => {
      let client: SpadesClient;
      let rpc: Client<typeof SpadesService>;
      let native: Client<typeof SpadesService>;
      before(() => {
        client = new SpadesClient({ transport: makeTransport(stack.url), operatorToken: stack.operatorToken });
        rpc = client.rpc;
        native = createClient(SpadesService, createGrpcTransport({ baseUrl: stack.url }));
      });

      it("answers unary calls", async () => {
        await rpc.ping({}, { timeoutMs: WAIT_MS });
        const seats = await quietMatch(client, 31n);
        const summary = await client.getMatch(seats[0]!.matchId);
        assert.equal(summary.seats.length, 4);
        const view = await seats[1]!.getView();
        assert.equal(view.seat, 1);
        assert.equal(view.phase, Phase.BIDDING);
        assert.equal(view.hand.length, 13);
        const before = view.asOfSeq;
        assert.ok((await actOnce(seats)) > before);
      });

      it("carries refusals with their code, ErrorInfo and BadRequest", async () => {
        const seats = await quietMatch(client, 32n);
        const view = await seats[2]!.getView();
        const card = view.hand[0]!;
        const err = await refusal(seats[2]!.submitAction({ kind: { case: "playCard", value: { card } } }));
        assert.equal(err.code, Code.FailedPrecondition);
        assert.equal(err.reason, "WRONG_PHASE");
        assert.equal(err.domain, "spades.v1");
        assert.ok((err.rule ?? "").length > 0, "the broken rule's sentence");
        assert.deepEqual(err.fieldViolations.map((v) => v.field), ["action"]);
        assert.equal(err.message, "Play is not allowed during bidding");

        const anonymous = await refusal(rpc.getMatch({ matchId: seats[0]!.matchId }, { timeoutMs: WAIT_MS }));
        assert.equal(anonymous.code, Code.Unauthenticated);
        assert.equal(anonymous.reason, "UNAUTHENTICATED");
        const notOperator = await refusal(rpc.getMatch({ matchId: seats[0]!.matchId }, auth(seats[0]!.token)));
        assert.equal(notOperator.code, Code.PermissionDenied);
        assert.equal(notOperator.reason, "NOT_OPERATOR");
        // The same refusal as native gRPC gives it, message included. The
        // message travels percent-encoded (grpc-message); Envoy's Connect
        // bridge passes it on without decoding it, gRPC-Web clients decode it.
        const direct = await refusal(native.getMatch({ matchId: seats[0]!.matchId }, auth(seats[0]!.token)));
        assert.equal(notOperator.message, direct.message);
        const directAnonymous = await refusal(native.getMatch({ matchId: seats[0]!.matchId }, { timeoutMs: WAIT_MS }));
        assert.match(directAnonymous.message, /…/);
        const shown = protocol === "Connect" ? decodeURIComponent(anonymous.message) : anonymous.message;
        assert.equal(shown, directAnonymous.message);

        // A server stream refused before its first message.
        const abort = new AbortController();
        try {
          const stream = rpc.streamEvents({ afterSeq: 0n }, streamAuth(stack.operatorToken, abort.signal));
          const refused = await refusal((async () => {
            for await (const _ of stream) {
              assert.fail("a message on a refused stream");
            }
          })());
          assert.equal(refused.code, Code.Unauthenticated);
          assert.equal(refused.reason, "UNAUTHENTICATED");
        } finally {
          abort.abort();
        }
      });

      it("streams a seat's events message by message (StreamEvents), as native gRPC does", async () => {
        const seats = await quietMatch(client, 33n);
        const token = seats[1]!.token;
        const abort = new AbortController();
        const timer = setTimeout(() => abort.abort(), WAIT_MS);
        try {
          const stream = rpc.streamEvents({ afterSeq: 0n }, streamAuth(token, abort.signal));
          const it = stream[Symbol.asyncIterator]();
          const first = await within(WAIT_MS, "the first message", it.next());
          assert.ok(!first.done);
          assert.deepEqual(first.value.events.map((e) => e.kind.case), ["handStarted", "handShown"]);
          // The stream is open and quiet; an action now arrives as the next message.
          const last = await actOnce(seats);
          const second = await within(WAIT_MS, "the live message", it.next());
          assert.ok(!second.done);
          assert.equal(second.value.events.at(-1)!.seq, last);
          const got = [...first.value.events, ...second.value.events];
          const nativeStream = native.streamEvents({ afterSeq: 0n }, streamAuth(token, abort.signal));
          const direct: MatchEvent[] = [];
          for await (const res of nativeStream) {
            direct.push(...res.events);
            if (direct.at(-1)!.seq >= last) {
              break;
            }
          }
          assert.deepEqual(wire(got), wire(direct));
          // Resuming after the last event seen: nothing until the next action.
          const resumed = rpc.streamEvents({ afterSeq: last }, streamAuth(token, abort.signal));
          const rit = resumed[Symbol.asyncIterator]();
          const pending = rit.next();
          const next = await actOnce(seats);
          const third = await within(WAIT_MS, "the resumed stream's message", pending);
          assert.ok(!third.done);
          assert.ok(third.value.events.every((e) => e.seq > last));
          assert.equal(third.value.events.at(-1)!.seq, next);
        } finally {
          clearTimeout(timer);
          abort.abort();
        }
      });

      it("streams the public events (Spectate) with no credential", async () => {
        const seats = await quietMatch(client, 34n);
        const abort = new AbortController();
        const timer = setTimeout(() => abort.abort(), WAIT_MS);
        try {
          const stream = rpc.spectate({ matchId: seats[0]!.matchId, afterSeq: 0n }, { signal: abort.signal });
          const it = stream[Symbol.asyncIterator]();
          const first = await within(WAIT_MS, "the first message", it.next());
          assert.ok(!first.done);
          assert.deepEqual(first.value.events.map((e) => e.kind.case), ["handStarted"]);
          const last = await actOnce(seats);
          const second = await within(WAIT_MS, "the live message", it.next());
          assert.ok(!second.done);
          assert.deepEqual(second.value.events.map((e) => e.kind.case), ["bidMade"]);
          assert.equal(second.value.events[0]!.seq, last);
        } finally {
          clearTimeout(timer);
          abort.abort();
        }
      });

      it("long-polls (PollEvents): per viewer, waiting, waking, resuming", async () => {
        const seats = await quietMatch(client, 35n);
        const matchId = seats[0]!.matchId;
        const mine = await rpc.pollEvents({ afterSeq: 0n, waitMs: 0 }, auth(seats[2]!.token));
        assert.deepEqual(mine.events.map((e) => e.kind.case), ["handStarted", "handShown"]);
        const shown = mine.events[1]!.kind;
        assert.ok(shown.case === "handShown" && shown.value.seat === 2);
        assert.equal(mine.lastSeq, 5n); // the other hands are skipped
        const pub = await rpc.pollEvents({ matchId, afterSeq: 0n, waitMs: 0 }, { timeoutMs: WAIT_MS });
        assert.deepEqual(pub.events.map((e) => e.kind.case), ["handStarted"]);

        // Nothing new: the poll waits; an action wakes it long before its wait ends.
        const t0 = Date.now();
        const waiting = rpc.pollEvents({ afterSeq: mine.lastSeq, waitMs: 4_500 }, auth(seats[2]!.token));
        await new Promise((resolve) => setTimeout(resolve, 300));
        const last = await actOnce(seats);
        const woken = await within(WAIT_MS, "the woken poll", waiting);
        assert.ok(Date.now() - t0 < 4_000, "woken by the bid");
        assert.deepEqual(woken.events.map((e) => e.seq), [last]);
        assert.equal(woken.lastSeq, last);
        // Resumed from there: nothing, after the (short) wait.
        const t1 = Date.now();
        const empty = await rpc.pollEvents({ afterSeq: woken.lastSeq, waitMs: 300 }, auth(seats[2]!.token));
        assert.equal(empty.events.length, 0);
        assert.equal(empty.lastSeq, last);
        assert.ok(Date.now() - t1 >= 250);

        const bad = await refusal(rpc.pollEvents({ matchId, waitMs: 0 }, auth(stack.operatorToken)));
        assert.equal(bad.code, Code.Unauthenticated);
        assert.equal(bad.reason, "UNAUTHENTICATED");
        const wait = await refusal(rpc.pollEvents({ matchId, waitMs: -1 }, { timeoutMs: WAIT_MS }));
        assert.equal(wait.code, Code.InvalidArgument);
        assert.equal(wait.reason, "BAD_WAIT_MS");
        assert.deepEqual(wait.fieldViolations.map((v) => v.field), ["wait_ms"]);
      });
    });
  }

  describe("native gRPC on the same listener", () => {
    it("carries the bidirectional Play call and its refusals", async () => {
      const client = connect(stack.address, { operatorToken: stack.operatorToken });
      const created = await client.createMatch({
        seed: 36n,
        hasSeed: true,
        seats: [{ name: "S" }, { name: "W", bot: true }, { name: "N", bot: true }, { name: "E", bot: true }],
      });
      const seat = client.seat(created.seatTokens[0]!.token);
      await seat.claim();
      const session = seat.open();
      try {
        const view = await seat.getView();
        const card = view.hand[0]!;
        const err = await refusal(session.act({ kind: { case: "playCard", value: { card } } }));
        assert.equal(err.reason, "WRONG_PHASE");
        const events: MatchEvent[] = [];
        for await (const event of session) {
          events.push(event);
          if (event.kind.case === "handShown") {
            break;
          }
        }
        assert.deepEqual(events.map((e) => e.kind.case).slice(0, 2), ["handStarted", "handShown"]);
      } finally {
        await session.close();
      }
    });
  });

  describe("CORS", () => {
    const path = "/spades.v1.SpadesService/GetView";

    async function preflight(origin: string): Promise<Headers> {
      const res = await fetch(stack.url + path, {
        method: "OPTIONS",
        headers: {
          origin,
          "access-control-request-method": "POST",
          "access-control-request-headers": "authorization,content-type,x-grpc-web,x-user-agent,connect-protocol-version",
        },
        signal: AbortSignal.timeout(WAIT_MS),
      });
      await res.arrayBuffer();
      assert.equal(res.status, 200);
      return res.headers;
    }

    function list(value: string | null): string[] {
      return (value ?? "").split(",").map((s) => s.trim().toLowerCase()).filter((s) => s !== "");
    }

    it("answers a preflight from an allowed origin with the allow headers", async () => {
      const h = await preflight(ALLOWED);
      assert.equal(h.get("access-control-allow-origin"), ALLOWED);
      assert.ok(list(h.get("access-control-allow-methods")).includes("post"));
      const allowed = list(h.get("access-control-allow-headers"));
      for (const name of [
        "authorization",
        "content-type",
        "x-grpc-web",
        "x-user-agent",
        "connect-protocol-version",
        "connect-timeout-ms",
        "grpc-timeout",
        "x-request-id",
        "traceparent",
        "tracestate",
        "baggage",
      ]) {
        assert.ok(allowed.includes(name), `${name} is allowed`);
      }
      assert.equal(h.get("access-control-allow-credentials"), null, "no credentials mode");
      assert.ok(Number(h.get("access-control-max-age")) > 0);
    });

    it("gives a preflight from any other origin no allow-origin", async () => {
      for (const origin of [OTHER, "null", stack.url.replace("127.0.0.1", "localhost")]) {
        const h = await preflight(origin);
        assert.equal(h.get("access-control-allow-origin"), null, origin);
        assert.equal(h.get("access-control-allow-credentials"), null, origin);
      }
    });

    it("exposes the gRPC status headers to an allowed origin only", async () => {
      async function ping(origin: string): Promise<Headers> {
        const res = await fetch(stack.url + "/spades.v1.SpadesService/Ping", {
          method: "POST",
          headers: { origin, "content-type": "application/grpc-web+proto", "x-grpc-web": "1" },
          body: new Uint8Array(5), // one empty, uncompressed frame: PingRequest{}
          signal: AbortSignal.timeout(WAIT_MS),
        });
        const body = new Uint8Array(await res.arrayBuffer());
        assert.equal(res.status, 200);
        assert.match(Buffer.from(body).toString("latin1"), /grpc-status:0/);
        return res.headers;
      }
      const allowed = await ping(ALLOWED);
      assert.equal(allowed.get("access-control-allow-origin"), ALLOWED);
      assert.deepEqual(
        list(allowed.get("access-control-expose-headers")).sort(),
        ["grpc-message", "grpc-status", "grpc-status-details-bin"],
      );
      const other = await ping(OTHER);
      assert.equal(other.get("access-control-allow-origin"), null);
      assert.equal(other.get("access-control-expose-headers"), null);
    });
  });

  describe("the web table's files", () => {
    async function get(path: string): Promise<{ status: number; type: string | null; body: string }> {
      const res = await fetch(stack.url + path, { signal: AbortSignal.timeout(WAIT_MS) });
      return { status: res.status, type: res.headers.get("content-type"), body: await res.text() };
    }

    it("serves the table, its assets, and index.html for the table's own routes", async () => {
      const index = await get("/");
      assert.equal(index.status, 200);
      assert.equal(index.body, INDEX);
      const route = await get("/match/abc");
      assert.equal(route.status, 200);
      assert.equal(route.body, INDEX);
      const js = await get("/assets/app.js");
      assert.equal(js.status, 200);
      assert.equal(js.type, "text/javascript");
      assert.equal((await get("/assets/missing.js")).status, 404);
    });
  });

  it("stops cleanly: the launcher exits 0 on SIGTERM", async () => {
    stopped = true;
    const code = await stack.stop();
    assert.equal(code, 0, stack.output.join("\n"));
  });
});
