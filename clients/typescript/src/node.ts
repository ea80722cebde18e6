// Node's transport: gRPC over HTTP/2 (@connectrpc/connect-node), the one that
// carries the bidirectional Play call. Browsers will get their own module.
import { readFileSync } from "node:fs";
import type { SecureClientSessionOptions } from "node:http2";
import type { Interceptor, Transport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { SpadesClient, type SpadesClientOptions } from "./client.js";
import { traceContext } from "./tracing.js";

export interface NodeConnectOptions extends Omit<SpadesClientOptions, "transport"> {
  /**
   * TLS: true for the system's CAs, or Node's TLS options (`ca`, `cert`,
   * `key`, `servername`, ...; `tlsFiles()` reads them from PEM files).
   * Default: plaintext, unless the address is `https://...`.
   */
  tls?: boolean | SecureClientSessionOptions;
  /** HTTP/2 keepalive ping interval in milliseconds (default 30000; the server allows one per 10 s at most). */
  keepaliveMs?: number;
  /** How long a keepalive ping may go unanswered before the connection counts as dead (default 15000). */
  keepaliveTimeoutMs?: number;
  /**
   * Connect interceptors of every call, the first outermost. The transport's
   * own, `traceContext()`, comes after them: a span one of them makes
   * current for a call is the one the call carries.
   */
  interceptors?: Interceptor[];
}

/** PEM files of a TLS connection (see `tlsFiles`). */
export interface TlsFiles {
  /** The CA certificates that sign the server's (default: Node's CAs). */
  ca?: string;
  /** A client certificate (chain), for mutual TLS: a server's operator port with `--tls-client-ca`. */
  cert?: string;
  /** The client certificate's private key (unencrypted). */
  key?: string;
  /** The name to check the server's certificate against, if not the address's host. */
  servername?: string;
}

/**
 * Node's TLS options from PEM files, read now (a missing file throws here,
 * not at the first call), for `connect(address, { tls: tlsFiles({ ca }) })`.
 * `cert` and `key` go together.
 */
export function tlsFiles(files: TlsFiles): SecureClientSessionOptions {
  if ((files.cert === undefined) !== (files.key === undefined)) {
    throw new TypeError("tlsFiles: cert and key go together (a client certificate needs its key)");
  }
  return {
    ...(files.ca !== undefined ? { ca: readFileSync(files.ca) } : {}),
    ...(files.cert !== undefined ? { cert: readFileSync(files.cert) } : {}),
    ...(files.key !== undefined ? { key: readFileSync(files.key) } : {}),
    ...(files.servername !== undefined ? { servername: files.servername } : {}),
  };
}

/** The base URL for an address: `host:port`, `http://host:port` or `https://host:port`. */
export function baseUrl(address: string, tls: boolean | SecureClientSessionOptions | undefined): string {
  if (/^https?:\/\//.test(address)) {
    if (tls !== undefined && tls !== false && address.startsWith("http://")) {
      return "https://" + address.slice("http://".length);
    }
    return address;
  }
  return `${tls ? "https" : "http"}://${address}`;
}

/**
 * A gRPC transport over HTTP/2 to `address`. Its calls carry the active
 * OpenTelemetry context when the application has `@opentelemetry/api`
 * (`traceContext`), after `interceptors`.
 */
export function createNodeTransport(address: string, options: Omit<NodeConnectOptions, keyof SpadesClientOptions> = {}): Transport {
  const { tls, keepaliveMs = 30_000, keepaliveTimeoutMs = 15_000, interceptors = [] } = options;
  return createGrpcTransport({
    baseUrl: baseUrl(address, tls),
    pingIntervalMs: keepaliveMs,
    pingTimeoutMs: keepaliveTimeoutMs,
    interceptors: [...interceptors, traceContext()],
    ...(typeof tls === "object" ? { nodeOptions: tls } : {}),
  });
}

/**
 * A client of the server at `address` over gRPC (HTTP/2):
 *
 *     const client = connect("localhost:50051", { operatorToken });
 */
export function connect(address: string, options: NodeConnectOptions = {}): SpadesClient {
  const { tls, keepaliveMs, keepaliveTimeoutMs, interceptors, ...rest } = options;
  const transportOptions = {
    ...(tls !== undefined ? { tls } : {}),
    ...(keepaliveMs !== undefined ? { keepaliveMs } : {}),
    ...(keepaliveTimeoutMs !== undefined ? { keepaliveTimeoutMs } : {}),
    ...(interceptors !== undefined ? { interceptors } : {}),
  };
  return new SpadesClient({ ...rest, transport: createNodeTransport(address, transportOptions) });
}

export * from "./index.js";
