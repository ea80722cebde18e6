// Node's transport: gRPC over HTTP/2 (@connectrpc/connect-node), the one that
// carries the bidirectional Play call. Browsers will get their own module.
import type { SecureClientSessionOptions } from "node:http2";
import type { Transport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { SpadesClient, type SpadesClientOptions } from "./client.js";

export interface NodeConnectOptions extends Omit<SpadesClientOptions, "transport"> {
  /**
   * TLS: true for the system's CAs, or Node's TLS options (`ca`, `cert`,
   * `servername`, ...). Default: plaintext, unless the address is `https://...`.
   */
  tls?: boolean | SecureClientSessionOptions;
  /** HTTP/2 keepalive ping interval in milliseconds (default 30000; the server allows one per 10 s at most). */
  keepaliveMs?: number;
  /** How long a keepalive ping may go unanswered before the connection counts as dead (default 15000). */
  keepaliveTimeoutMs?: number;
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

/** A gRPC transport over HTTP/2 to `address`. */
export function createNodeTransport(address: string, options: Omit<NodeConnectOptions, keyof SpadesClientOptions> = {}): Transport {
  const { tls, keepaliveMs = 30_000, keepaliveTimeoutMs = 15_000 } = options;
  return createGrpcTransport({
    baseUrl: baseUrl(address, tls),
    pingIntervalMs: keepaliveMs,
    pingTimeoutMs: keepaliveTimeoutMs,
    ...(typeof tls === "object" ? { nodeOptions: tls } : {}),
  });
}

/**
 * A client of the server at `address` over gRPC (HTTP/2):
 *
 *     const client = connect("localhost:50051", { operatorToken });
 */
export function connect(address: string, options: NodeConnectOptions = {}): SpadesClient {
  const { tls, keepaliveMs, keepaliveTimeoutMs, ...rest } = options;
  const transportOptions = {
    ...(tls !== undefined ? { tls } : {}),
    ...(keepaliveMs !== undefined ? { keepaliveMs } : {}),
    ...(keepaliveTimeoutMs !== undefined ? { keepaliveTimeoutMs } : {}),
  };
  return new SpadesClient({ ...rest, transport: createNodeTransport(address, transportOptions) });
}

export * from "./index.js";
