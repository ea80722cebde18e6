// Exponential backoff with jitter, for reconnecting a seat session and retrying
// the calls that are safe to repeat.
import { Code } from "@connectrpc/connect";
import { SpadesError } from "./errors.js";

/** How a session reconnects (and safe calls retry) after a dropped connection. */
export interface RetryOptions {
  /** Reconnections (or retries) in a row, without an answer between them, before giving up. Default 8. */
  maxAttempts?: number;
  /** The first delay, in milliseconds. Default 100. */
  initialDelayMs?: number;
  /** The longest delay, in milliseconds. Default 5000. */
  maxDelayMs?: number;
  /** Each delay is this many times the one before (before jitter). Default 2. */
  multiplier?: number;
  /** The share of each delay drawn at random, 0 to 1: 0.5 waits 50% to 100% of it. Default 0.5. */
  jitter?: number;
  /** The source of randomness, `[0, 1)`; Math.random by default (tests pass their own). */
  random?: () => number;
  /**
   * A session's call that stayed open this long, in milliseconds, before its
   * connection dropped counts as a success: the attempts start again from 1.
   * Default 1000.
   */
  resetAfterMs?: number;
}

export type ResolvedRetry = Required<RetryOptions>;

export function resolveRetry(options: RetryOptions | undefined): ResolvedRetry {
  const r: ResolvedRetry = {
    maxAttempts: 8,
    initialDelayMs: 100,
    maxDelayMs: 5000,
    multiplier: 2,
    jitter: 0.5,
    random: Math.random,
    resetAfterMs: 1000,
    ...stripUndefined(options ?? {}),
  };
  if (!(r.maxAttempts >= 0) || !(r.initialDelayMs >= 0) || !(r.maxDelayMs >= 0) || !(r.resetAfterMs >= 0) || !(r.multiplier >= 1)) {
    throw new RangeError("retry: maxAttempts, initialDelayMs, maxDelayMs and resetAfterMs must be >= 0, multiplier >= 1");
  }
  if (!(r.jitter >= 0 && r.jitter <= 1)) {
    throw new RangeError("retry: jitter must be between 0 and 1");
  }
  return r;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * The attempt number after a stream's call failed with the transient `error`
 * (`attempt`: the count so far), or the error to end the stream with once
 * `r.maxAttempts` are used up. A call that got through (its headers came, or
 * it stayed up `resetAfterMs`: a quiet resumed stream gets no headers before
 * its first event) and then lost its connection is a new drop, so the count
 * starts again; a status the server sent (UNAVAILABLE while it drains, which
 * has a reason) or a call that never got through is one more attempt.
 */
export function nextAttempt(attempt: number, error: SpadesError, gotThrough: boolean, r: ResolvedRetry): number | SpadesError {
  const next = (gotThrough && error.reason === "" ? 0 : attempt) + 1;
  if (next <= r.maxAttempts) {
    return next;
  }
  return new SpadesError(error.code, `gave up after ${r.maxAttempts} reconnection attempts: ${error.message}`, {
    reason: error.reason,
    domain: error.domain,
    metadata: { ...error.metadata },
    fieldViolations: [...error.fieldViolations],
    cause: error,
  });
}

/** The delay before attempt `attempt` (1 for the first retry), in milliseconds. */
export function backoffDelay(attempt: number, r: ResolvedRetry): number {
  const base = Math.min(r.maxDelayMs, r.initialDelayMs * r.multiplier ** Math.max(0, attempt - 1));
  return base * (1 - r.jitter * r.random());
}

/** Waits `ms`; rejects with a CANCELLED SpadesError at once if `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(canceled(signal));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(canceled(signal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** The error of a call or a session that the caller's AbortSignal ended. */
export function canceled(signal: AbortSignal | undefined): SpadesError {
  return new SpadesError(Code.Canceled, "cancelled by the caller's AbortSignal", { cause: signal?.reason });
}

/**
 * A call that ends CANCELLED without its caller's signal was cut off under it:
 * Node's HTTP/2 closes the streams of a connection that fails with CANCEL.
 * That is a failure of the connection, UNAVAILABLE in gRPC's terms, and said so.
 */
export function connectionLost(err: SpadesError): SpadesError {
  if (err.code !== Code.Canceled || err.reason !== "") {
    return err;
  }
  return new SpadesError(Code.Unavailable, `the connection failed: ${err.message}`, { cause: err });
}

/**
 * Whether a failure is the connection's rather than the service's: a status
 * the service sent with an ErrorInfo is retried only when it says UNAVAILABLE
 * (draining, a store failure); failures without one (a reset, a refused
 * connection, a stream cut off in the middle) are always retried.
 */
export function isTransient(err: SpadesError): boolean {
  if (err.reason !== "") {
    return err.code === Code.Unavailable;
  }
  switch (err.code) {
    case Code.Unavailable:
    case Code.Aborted:
    case Code.Internal:
    case Code.Unknown:
    case Code.Canceled:
    case Code.DeadlineExceeded:
      return true;
    default:
      return false;
  }
}
