// An OTLP/gRPC trace receiver on loopback (TraceService/Export over
// cleartext HTTP/2): where a real server started with
// OTEL_EXPORTER_OTLP_ENDPOINT sends its spans, for a test to read. Only the
// span fields the tests look at are decoded, with protobuf-es's wire reader:
// the OTLP .proto files are not in this repository to generate code from.
import { once } from "node:events";
import { createServer, constants, type Http2Server, type ServerHttp2Session, type ServerHttp2Stream } from "node:http2";
import type { AddressInfo } from "node:net";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";

const EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

/** opentelemetry.proto.trace.v1.Span.SpanKind */
export const SpanKind = { INTERNAL: 1, SERVER: 2, CLIENT: 3 } as const;

/** A span as exported, its ids in lowercase hex ("" for no parent). */
export interface ExportedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly traceState: string;
  readonly name: string;
  readonly kind: number;
}

export interface Receiver {
  /** `http://127.0.0.1:P`, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly endpoint: string;
  /** Every span received so far. */
  readonly spans: ExportedSpan[];
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const spans: ExportedSpan[] = [];
  const server: Http2Server = createServer();
  const sessions = new Set<ServerHttp2Session>();
  server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  server.on("stream", (stream, headers) => {
    const chunks: Buffer[] = [];
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("end", () => {
      if (headers[constants.HTTP2_HEADER_PATH] !== EXPORT) {
        answer(stream, 12, "not an OTLP trace export"); // UNIMPLEMENTED
        return;
      }
      try {
        for (const message of frames(Buffer.concat(chunks))) {
          spans.push(...exportRequest(message));
        }
        answer(stream, 0);
      } catch (e) {
        answer(stream, 3, String(e)); // INVALID_ARGUMENT
      }
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    close: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        // An exporter keeps its connection open: close() alone would wait for it.
        for (const session of sessions) {
          session.destroy();
        }
      }),
  };
}

function answer(stream: ServerHttp2Stream, status: number, message = ""): void {
  if (stream.destroyed) {
    return;
  }
  stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
  stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": String(status), "grpc-message": encodeURIComponent(message) }));
  // An empty ExportTraceServiceResponse on success: a frame of length 0.
  stream.end(status === 0 ? Buffer.alloc(5) : undefined);
}

/** The messages of a gRPC request body: each a flag byte, a 4-byte length, the bytes. */
function* frames(body: Buffer): Generator<Uint8Array> {
  for (let at = 0; at < body.length; ) {
    if (body[at] !== 0) {
      throw new Error("a compressed frame: this receiver reads uncompressed ones only");
    }
    const size = body.readUInt32BE(at + 1);
    yield body.subarray(at + 5, at + 5 + size);
    at += 5 + size;
  }
}

/** `visit` for each field of a message; one it did not read (it answered false) is skipped. */
function fields(bytes: Uint8Array, visit: (field: number, reader: BinaryReader, wire: WireType) => boolean): void {
  const reader = new BinaryReader(bytes);
  while (reader.pos < reader.len) {
    const [field, wire] = reader.tag();
    if (!visit(field, reader, wire)) {
      reader.skip(wire, field);
    }
  }
}

// ExportTraceServiceRequest.resource_spans = 1; ResourceSpans.scope_spans = 2; ScopeSpans.spans = 2.
function exportRequest(bytes: Uint8Array): ExportedSpan[] {
  const out: ExportedSpan[] = [];
  fields(bytes, (field, r) => {
    if (field !== 1) return false;
    fields(r.bytes(), (field, r) => {
      if (field !== 2) return false;
      fields(r.bytes(), (field, r) => {
        if (field !== 2) return false;
        out.push(span(r.bytes()));
        return true;
      });
      return true;
    });
    return true;
  });
  return out;
}

// Span: trace_id = 1, span_id = 2, trace_state = 3, parent_span_id = 4, name = 5, kind = 6.
function span(bytes: Uint8Array): ExportedSpan {
  const s = { traceId: "", spanId: "", parentSpanId: "", traceState: "", name: "", kind: 0 };
  const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");
  fields(bytes, (field, r) => {
    switch (field) {
      case 1:
        s.traceId = hex(r.bytes());
        return true;
      case 2:
        s.spanId = hex(r.bytes());
        return true;
      case 3:
        s.traceState = r.string();
        return true;
      case 4:
        s.parentSpanId = hex(r.bytes());
        return true;
      case 5:
        s.name = r.string();
        return true;
      case 6:
        s.kind = r.int32();
        return true;
      default:
        return false;
    }
  });
  return s;
}
