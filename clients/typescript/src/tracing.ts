// W3C trace context on every call, when the application traces. The server
// continues a call's `traceparent` (docs/operations.md, "Traces
// (OpenTelemetry)"), so that its span of the call is a child of the caller's.
// OpenTelemetry's API is an optional peer dependency: this module never
// imports it statically, so the package installs, bundles and runs without
// it, and then, as outside any span, calls go exactly as before.
import type { Interceptor } from "@connectrpc/connect";

/**
 * The two parts of `@opentelemetry/api` that `traceContext` uses; the
 * module itself (`import * as api from "@opentelemetry/api"`) is one.
 */
export interface TraceContextApi {
  readonly context: { active(): unknown };
  readonly propagation: {
    inject(context: unknown, carrier: Headers, setter: { set(carrier: Headers, key: string, value: string): void }): void;
  };
}

// A variable, not a literal: bundlers (the web table's Vite) would otherwise
// try to resolve the package at build time and fail where it is not
// installed. Node resolves it from this file's location at run time.
const API_MODULE = "@opentelemetry/api";

// The propagators' default setter assigns properties (`carrier[key] = value`),
// which a Headers object would keep as properties, never sent.
const HEADERS = { set: (carrier: Headers, key: string, value: string): void => carrier.set(key, value) };

let loading: Promise<TraceContextApi | null> | undefined;
let loaded: TraceContextApi | null | undefined;

function load(): Promise<TraceContextApi | null> {
  loading ??= (import(/* @vite-ignore */ /* webpackIgnore: true */ API_MODULE) as Promise<Partial<TraceContextApi> & { default?: Partial<TraceContextApi> }>).then(
    (m) => {
      // A CommonJS build seen from an ES module may hold its exports under `default`.
      const api = m.context !== undefined ? m : m.default;
      loaded = api?.context !== undefined && api.propagation !== undefined ? (api as TraceContextApi) : null;
      return loaded;
    },
    () => (loaded = null),
  );
  return loading;
}

/**
 * A Connect interceptor that writes the active OpenTelemetry context into
 * each call's request headers with the application's registered propagator
 * (`traceparent` and `tracestate` for W3C trace context, `baggage` if that
 * propagator is registered too). Outside any span the propagator writes
 * nothing; without `@opentelemetry/api` (looked up once, unless `api` is
 * given) the interceptor does nothing.
 *
 * The transports `connect` and `createNodeTransport` make carry it already;
 * add it to a transport of your own (a browser's `createGrpcWebTransport`),
 * there with `traceContext(api)` where a bundle holds the API, since a
 * browser cannot look a package up by name.
 */
export function traceContext(api?: TraceContextApi): Interceptor {
  if (api === undefined) {
    void load(); // early, so that the first call rarely waits for it
  }
  return (next) => async (req) => {
    const otel = api ?? (loaded !== undefined ? loaded : await load());
    if (otel !== null) {
      try {
        otel.propagation.inject(otel.context.active(), req.header, HEADERS);
      } catch {
        // A failing propagator costs the call its trace, never the call.
      }
    }
    return await next(req);
  };
}
