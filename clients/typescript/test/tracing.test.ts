// W3C trace context from this client to a real server: serve.py's server
// started with OTEL_EXPORTER_OTLP_ENDPOINT, exporting its spans to a receiver
// in this process (./otlp.ts), and OpenTelemetry's API set up here as an
// application would (a context manager and the W3C propagator; no SDK: a
// span context made here is the "span"). The server's span of a call made in
// a span is that span's child; outside any span it starts a trace of its own.
// Also: the interceptor's headers against a router transport, a user's
// interceptors, and the client without @opentelemetry/api installed.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { create } from "@bufbuild/protobuf";
import { createRouterTransport, type Interceptor } from "@connectrpc/connect";
import * as api from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import {
  BotLevel,
  PingResponseSchema,
  SpadesClient,
  SpadesService,
  connect,
  traceContext,
  type CreateMatchResponse,
} from "../src/node.js";
import { FAST, PKG, WAIT_MS, startServerWith, type Server } from "./harness.js";
import { SpanKind, startReceiver, type ExportedSpan, type Receiver } from "./otlp.js";
import { EventReader } from "./reader.js";

const METHOD = "/spades.v1.SpadesService/";
const TRACE_STATE = "spades=client";

function newSpanContext(): api.SpanContext {
  return {
    traceId: randomBytes(16).toString("hex"),
    spanId: randomBytes(8).toString("hex"),
    traceFlags: api.TraceFlags.SAMPLED,
    traceState: api.createTraceState(TRACE_STATE),
  };
}

/** `fn` with `span` as the active span, as a traced application's code runs. */
function inSpan<T>(span: api.SpanContext, fn: () => Promise<T>): Promise<T> {
  return api.context.with(api.trace.setSpanContext(api.context.active(), span), fn);
}

function createMatch(client: SpadesClient): Promise<CreateMatchResponse> {
  return client.createMatch({
    ruleset: { preset: "classic" },
    seats: [
      { name: "You" },
      { name: "W", bot: true, botLevel: BotLevel.EASY },
      { name: "N", bot: true, botLevel: BotLevel.EASY },
      { name: "E", bot: true, botLevel: BotLevel.EASY },
    ],
  });
}

describe("trace context", { timeout: 240_000 }, () => {
  let receiver: Receiver;
  let server: Server;
  let client: SpadesClient;

  before(async () => {
    api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    api.propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    receiver = await startReceiver();
    const inherited = Object.keys(process.env).filter((name) => name.startsWith("OTEL_"));
    server = await startServerWith({
      env: {
        ...Object.fromEntries(inherited.map((name) => [name, undefined])),
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_BSP_SCHEDULE_DELAY: "50", // ms: each span reaches the receiver at once
      },
    });
    client = connect(server.address, { operatorToken: server.operatorToken, retry: FAST });
  });
  after(async () => {
    await server?.stop();
    await receiver?.close();
    api.propagation.disable();
    api.context.disable();
  });

  /** The server's spans of calls (kind SERVER) that `pred` picks, once `until` holds for them. */
  async function serverSpans(pred: (s: ExportedSpan) => boolean, until: (spans: ExportedSpan[]) => boolean, what: string): Promise<ExportedSpan[]> {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const spans = receiver.spans.filter((s) => s.kind === SpanKind.SERVER && pred(s));
      if (until(spans)) {
        return spans;
      }
      if (Date.now() > deadline) {
        assert.fail(`timed out waiting for ${what}; the server's spans: ${JSON.stringify(receiver.spans)}`);
      }
      await new Promise((done) => setTimeout(done, 50));
    }
  }

  it("makes the server's span of each call in a span that span's child: unary calls and a Play stream", async () => {
    const span = newSpanContext();
    await inSpan(span, async () => {
      const created = await createMatch(client);
      const seat = client.seat(created.seatTokens[0]!.token);
      await seat.claim();
      const session = seat.open({ retry: FAST });
      const events = new EventReader(session);
      await events.next(0);
      await session.close();
      await events.done;
    });

    const names = (spans: ExportedSpan[]): string[] => spans.map((s) => s.name).sort();
    const expected = ["ClaimSeat", "CreateMatch", "Play"].map((m) => METHOD + m);
    const spans = await serverSpans(
      (s) => s.traceId === span.traceId,
      (found) => found.length >= expected.length,
      "the server's spans of the three calls",
    );
    assert.deepEqual(names(spans), expected);
    for (const s of spans) {
      assert.equal(s.parentSpanId, span.spanId, `${s.name}'s parent`);
      assert.equal(s.traceState, TRACE_STATE, `${s.name}'s tracestate`);
    }
  });

  it("sends no trace context outside any span: the server's span starts a trace of its own", async () => {
    assert.equal(api.trace.getSpanContext(api.context.active()), undefined, "no active span here");
    const created = await createMatch(client);
    await client.getMatch(created.match!.matchId); // GetMatch: called only here, outside any span
    const [getMatch] = await serverSpans(
      (s) => s.name === METHOD + "GetMatch",
      (found) => found.length === 1,
      "the server's GetMatch span",
    );
    assert.equal(getMatch!.parentSpanId, "", "a root span");
    assert.equal(getMatch!.traceState, "");
  });

  it("runs the user's interceptors first: a span one makes current is the one the call carries", async () => {
    const perCall = newSpanContext();
    const seen: string[] = [];
    const spanPerCall: Interceptor = (next) => (req) => {
      seen.push(req.method.name);
      return api.context.with(api.trace.setSpanContext(api.context.active(), perCall), () => next(req));
    };
    const traced = connect(server.address, { operatorToken: server.operatorToken, retry: FAST, interceptors: [spanPerCall] });
    await createMatch(traced);
    assert.deepEqual(seen, ["CreateMatch"]);
    const [call] = await serverSpans(
      (s) => s.traceId === perCall.traceId,
      (found) => found.length === 1,
      "the server's span of the intercepted call",
    );
    assert.equal(call!.name, METHOD + "CreateMatch");
    assert.equal(call!.parentSpanId, perCall.spanId);
  });

  it("writes traceparent and tracestate in a span and no header outside, with the API found or given", async () => {
    const headers: Array<Record<string, string | null>> = [];
    const transport = (interceptor: Interceptor) =>
      createRouterTransport(
        (router) => {
          router.service(SpadesService, {
            ping: (_req, ctx) => {
              const h = ctx.requestHeader;
              headers.push({ traceparent: h.get("traceparent"), tracestate: h.get("tracestate") });
              return create(PingResponseSchema);
            },
          });
        },
        { transport: { interceptors: [interceptor] } },
      );
    const span = newSpanContext();
    for (const interceptor of [traceContext(), traceContext(api)]) {
      const rpc = new SpadesClient({ transport: transport(interceptor) }).rpc;
      await inSpan(span, () => rpc.ping({}));
      await rpc.ping({});
    }
    const inside = { traceparent: `00-${span.traceId}-${span.spanId}-01`, tracestate: TRACE_STATE };
    const outside = { traceparent: null, tracestate: null };
    assert.deepEqual(headers, [inside, outside, inside, outside]);
  });

  it("works without @opentelemetry/api: calls go as before", async () => {
    // A Node process where the package cannot be found, as where it is not installed.
    const dir = mkdtempSync(join(tmpdir(), "spades-no-otel-"));
    try {
      writeFileSync(
        join(dir, "hide.mjs"),
        `export async function resolve(specifier, context, next) {
          if (specifier === "@opentelemetry/api" || specifier.startsWith("@opentelemetry/api/")) {
            throw Object.assign(new Error("Cannot find package '" + specifier + "'"), { code: "ERR_MODULE_NOT_FOUND" });
          }
          return next(specifier, context);
        }\n`,
      );
      writeFileSync(
        join(dir, "main.mjs"),
        `import { register } from "node:module";
        register("./hide.mjs", import.meta.url);
        const [clientUrl, address, operatorToken] = process.argv.slice(2);
        const hidden = await import("@opentelemetry/api").then(() => false, () => true);
        const { connect } = await import(clientUrl);
        const client = connect(address, { operatorToken });
        const created = await client.createMatch({ seats: [{ name: "You" }, { name: "W", bot: true }, { name: "N", bot: true }, { name: "E", bot: true }] });
        const again = await client.getMatch(created.match.matchId);
        console.log(JSON.stringify({ hidden, matchId: again.matchId }));\n`,
      );
      const clientUrl = pathToFileURL(join(PKG, "dist", "src", "node.js")).href;
      const { stdout } = await promisify(execFile)(process.execPath, [join(dir, "main.mjs"), clientUrl, server.address, server.operatorToken], {
        cwd: PKG,
        timeout: WAIT_MS,
      });
      const out = JSON.parse(stdout) as { hidden: boolean; matchId: string };
      assert.equal(out.hidden, true, "the child process could not import @opentelemetry/api");
      assert.match(out.matchId, /\S/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
