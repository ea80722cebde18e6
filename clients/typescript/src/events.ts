// A resuming event stream on the server-streaming calls, StreamEvents (a
// seat's events) and Spectate (the public ones): for clients without the
// bidirectional Play call (browsers through gRPC-Web or Connect), which act
// with SeatClient.submitAction.
import { Code, type CallOptions } from "@connectrpc/connect";
import { backoffDelay, canceled, connectionLost, isTransient, nextAttempt, resolveRetry, sleep, type ResolvedRetry, type RetryOptions } from "./backoff.js";
import type { SeatClient, SpadesClient } from "./client.js";
import { SpadesError } from "./errors.js";
import type { MatchEvent } from "./gen/spades/v1/spades_pb.js";
import { AsyncQueue } from "./queue.js";
import type { ReconnectInfo } from "./session.js";

export interface EventStreamOptions {
  /** Deliver the events after this sequence number (default 0: from the start). */
  afterSeq?: bigint;
  /** Ends the stream: the iterator rejects with a CANCELLED SpadesError. */
  signal?: AbortSignal;
  /** Reconnection backoff (defaults: the client's `retry`). */
  retry?: RetryOptions;
  /** Called before each reconnection, after its delay is chosen. */
  onReconnect?: (info: ReconnectInfo) => void;
  /** Called each time a call is up: its headers or its first message came (for a "connected" indicator). */
  onConnected?: () => void;
}

/** One call of a stream: the batches of events after `afterSeq`. */
export type OpenEvents = (afterSeq: bigint, options: CallOptions) => AsyncIterable<{ readonly events: readonly MatchEvent[] }>;

type State = "open" | "closed" | "failed";

/**
 * Events of a match in sequence order, each once, over one server-streaming
 * call at a time.
 *
 * `for await (const event of stream)` yields them. When a call ends — the
 * connection dropped, a proxy timed it out, the server drained — the stream
 * opens a new call with `after_seq` = the last sequence number it delivered
 * (no gap) and skips any event at or below it (no duplicate), after a delay
 * that grows exponentially with jitter, up to `retry.maxAttempts` attempts in
 * a row that did not get through. A refusal (a bad token, an unknown match)
 * ends the stream with its SpadesError. `close()` ends it quietly.
 */
export class EventStream implements AsyncIterable<MatchEvent> {
  private readonly events = new AsyncQueue<MatchEvent>();
  private readonly retry: ResolvedRetry;
  private readonly call = new AbortController();
  private state: State = "open";
  private seq: bigint;
  private reconnectCount = 0;
  private settleEnded!: (error: SpadesError | undefined) => void;
  private readonly onAbort: () => void;

  /** Resolves once the stream is over: with undefined after close(), with the error that ended it otherwise. */
  readonly ended: Promise<SpadesError | undefined>;

  constructor(
    private readonly open: OpenEvents,
    private readonly options: EventStreamOptions = {},
  ) {
    this.retry = resolveRetry(options.retry);
    this.seq = options.afterSeq ?? 0n;
    this.ended = new Promise((resolve) => {
      this.settleEnded = resolve;
    });
    this.onAbort = () => this.fail(canceled(options.signal));
    if (options.signal?.aborted) {
      queueMicrotask(this.onAbort);
    } else {
      options.signal?.addEventListener("abort", this.onAbort, { once: true });
      void this.run();
    }
  }

  /** The sequence number of the last event delivered (afterSeq before any). */
  get lastSeq(): bigint {
    return this.seq;
  }

  /** How many times the stream has opened a new call. */
  get reconnects(): number {
    return this.reconnectCount;
  }

  [Symbol.asyncIterator](): AsyncIterator<MatchEvent> {
    return this.events[Symbol.asyncIterator]();
  }

  /** Ends the stream: the current call is cancelled and the iterator ends after the events delivered so far. */
  close(): void {
    if (this.state !== "open") {
      return;
    }
    this.state = "closed";
    this.teardown();
    this.events.end();
    this.settleEnded(undefined);
  }

  private async run(): Promise<void> {
    let attempt = 0;
    for (;;) {
      const call = new AbortController();
      const stop = (): void => call.abort();
      this.call.signal.addEventListener("abort", stop, { once: true });
      let error: SpadesError;
      let answered = false;
      const openedAt = Date.now();
      const connected = (): void => {
        if (!answered) {
          answered = true;
          this.options.onConnected?.();
        }
      };
      try {
        const responses = this.open(this.seq, { signal: call.signal, onHeader: connected });
        for await (const res of responses) {
          connected();
          attempt = 0;
          for (const event of res.events) {
            if (event.seq <= this.seq) {
              continue; // delivered before a reconnection
            }
            this.seq = event.seq;
            this.events.push(event);
          }
          if (this.state !== "open") {
            return;
          }
        }
        // The server never ends these calls by itself; a proxy's timeout may.
        error = new SpadesError(Code.Unavailable, "the event stream ended");
      } catch (e) {
        if (this.state !== "open") {
          return;
        }
        error = connectionLost(SpadesError.from(e));
      } finally {
        this.call.signal.removeEventListener("abort", stop);
        call.abort();
      }
      if (this.state !== "open") {
        return;
      }
      if (!isTransient(error)) {
        this.fail(error);
        return;
      }
      const next = nextAttempt(attempt, error, answered || Date.now() - openedAt >= this.retry.resetAfterMs, this.retry);
      if (next instanceof SpadesError) {
        this.fail(next);
        return;
      }
      attempt = next;
      const delayMs = backoffDelay(attempt, this.retry);
      this.options.onReconnect?.({ attempt, delayMs, error, afterSeq: this.seq });
      try {
        await sleep(delayMs, this.call.signal);
      } catch {
        return; // closed or aborted meanwhile
      }
      if (this.state !== "open") {
        return;
      }
      this.reconnectCount++;
    }
  }

  private fail(error: SpadesError): void {
    if (this.state !== "open") {
      return;
    }
    this.state = "failed";
    this.teardown();
    this.events.fail(error);
    this.settleEnded(error);
  }

  private teardown(): void {
    this.options.signal?.removeEventListener("abort", this.onAbort);
    this.call.abort();
  }
}

/**
 * A seat's events on StreamEvents, resuming by itself after `afterSeq` (a
 * view's `asOfSeq`, or the last sequence number seen before a reload). Act
 * with `seat.submitAction(action, { actionId, expectedSeq: stream.lastSeq })`.
 */
export function streamEvents(seat: SeatClient, options: EventStreamOptions = {}): EventStream {
  const auth = { authorization: `Bearer ${seat.token}` };
  return new EventStream((afterSeq, call) => seat.client.rpc.streamEvents({ matchId: seat.matchId, afterSeq }, { ...call, headers: auth }), {
    ...options,
    retry: { ...seat.client.retry, ...(options.retry ?? {}) },
  });
}

/** A match's public events on Spectate (no credential), resuming by itself. */
export function spectate(client: SpadesClient, matchId: string, options: EventStreamOptions = {}): EventStream {
  return new EventStream((afterSeq, call) => client.rpc.spectate({ matchId, afterSeq }, call), {
    ...options,
    retry: { ...client.retry, ...(options.retry ?? {}) },
  });
}
