// A seat's session on the bidirectional Play call: events in order, actions
// with their results, and resuming by itself after a dropped connection.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, type Client } from "@connectrpc/connect";
import { backoffDelay, canceled, connectionLost, isTransient, nextAttempt, resolveRetry, sleep, type ResolvedRetry, type RetryOptions } from "./backoff.js";
import { SpadesError } from "./errors.js";
import { AsyncQueue } from "./queue.js";
import type {
  ActionResult,
  ActionSchema,
  MatchEvent,
  PlayRequestSchema,
  SpadesService,
} from "./gen/spades/v1/spades_pb.js";

export interface SessionOptions {
  /** Deliver the events after this sequence number (default 0: from the start). */
  afterSeq?: bigint;
  /** Ends the session: the event iterator and pending actions reject with a CANCELLED SpadesError. */
  signal?: AbortSignal;
  /** Reconnection backoff (defaults: the client's `retry`). */
  retry?: RetryOptions;
  /** Called before each reconnection, after its delay is chosen. */
  onReconnect?: (info: ReconnectInfo) => void;
  /** Called with each new last sequence number (SeatClient.open passes its `seen`). */
  onSeq?: (seq: bigint) => void;
}

export interface ReconnectInfo {
  /** 1 for the first attempt after a drop; counts again from 1 after a call that got through (see RetryOptions.resetAfterMs). */
  readonly attempt: number;
  /** The delay before this attempt, in milliseconds. */
  readonly delayMs: number;
  /** Why the previous call ended. */
  readonly error: SpadesError;
  /** The call resumes after this sequence number. */
  readonly afterSeq: bigint;
}

export interface ActOptions {
  /** The action's id (default: crypto.randomUUID()). Reuse one to retry an action: the server answers it once. */
  actionId?: string;
  /** The last sequence number the client has seen: refused with STALE_SEQUENCE if the seat has missed events. */
  expectedSeq?: bigint;
  /** Stops waiting for the result (the action may still be applied if it was sent). */
  signal?: AbortSignal;
}

interface Pending {
  readonly actionId: string;
  readonly request: MessageInitShape<typeof PlayRequestSchema>;
  readonly resolve: (result: ActionResult) => void;
  readonly reject: (error: SpadesError) => void;
  readonly cleanup: () => void;
}

type State = "open" | "closing" | "closed" | "failed";

/**
 * A seat's session on one Play call at a time.
 *
 * `for await (const event of session)` yields the seat's events in sequence
 * order, each once: after a dropped connection the session reopens Play with
 * `after_seq` = the last sequence number it delivered (no gap) and skips any
 * event at or below it (no duplicate), with exponential backoff and jitter,
 * up to `retry.maxAttempts` attempts in a row. Actions still without a result
 * are sent again on the new call with the same `action_id`; the server
 * answers a repeated id with its first result and never applies it twice.
 */
export class SeatSession implements AsyncIterable<MatchEvent> {
  private readonly events = new AsyncQueue<MatchEvent>();
  private readonly pending: Pending[] = [];
  private readonly retry: ResolvedRetry;
  private state: State = "open";
  private seq: bigint;
  private requests: AsyncQueue<MessageInitShape<typeof PlayRequestSchema>> | undefined;
  private call: AbortController | undefined;
  private reconnectCount = 0;
  private settleEnded!: (error: SpadesError | undefined) => void;
  private readonly onAbort: () => void;

  /** Resolves once the session is over: with undefined after close(), with the error that ended it otherwise. */
  readonly ended: Promise<SpadesError | undefined>;

  constructor(
    private readonly rpc: Client<typeof SpadesService>,
    private readonly token: string,
    readonly matchId: string,
    private readonly options: SessionOptions,
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

  /** How many times the session has reopened its call. */
  get reconnects(): number {
    return this.reconnectCount;
  }

  /** Actions sent that have no result yet. */
  get unacknowledged(): number {
    return this.pending.length;
  }

  [Symbol.asyncIterator](): AsyncIterator<MatchEvent> {
    return this.events[Symbol.asyncIterator]();
  }

  /**
   * Sends an action; resolves with its ActionResult (`firstSeq`, `lastSeq`)
   * once the server has accepted it and its events have been delivered, or
   * rejects with the refusal as a SpadesError (`reason`, `rule`, ...).
   */
  act(action: MessageInitShape<typeof ActionSchema>, opts: ActOptions = {}): Promise<ActionResult> {
    if (this.state !== "open") {
      return Promise.reject(new SpadesError(Code.FailedPrecondition, `the session is ${this.state}`));
    }
    if (opts.signal?.aborted) {
      return Promise.reject(canceled(opts.signal));
    }
    const actionId = opts.actionId ?? crypto.randomUUID();
    const request: MessageInitShape<typeof PlayRequestSchema> = {
      kind: {
        case: "action",
        value: { actionId, action, ...(opts.expectedSeq !== undefined ? { expectedSeq: opts.expectedSeq } : {}) },
      },
    };
    return new Promise<ActionResult>((resolve, reject) => {
      const signal = opts.signal;
      const onAbort = (): void => {
        const i = this.pending.indexOf(entry);
        if (i >= 0) {
          this.pending.splice(i, 1);
        }
        reject(canceled(signal));
      };
      const entry: Pending = {
        actionId,
        request,
        resolve,
        reject,
        cleanup: () => signal?.removeEventListener("abort", onAbort),
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.pending.push(entry);
      this.requests?.push(request);
    });
  }

  /**
   * Ends the session: half-closes the call, waits for the results of the
   * actions already sent (reconnecting if need be), then ends the call. The
   * event iterator ends after the events delivered so far. Resolves once the
   * session is over (see `ended` for whether it failed first).
   */
  async close(): Promise<void> {
    if (this.state === "open") {
      this.state = "closing";
      this.requests?.end();
      if (this.pending.length === 0) {
        this.finish();
      }
    }
    await this.ended;
  }

  private async run(): Promise<void> {
    let attempt = 0;
    for (;;) {
      const requests = new AsyncQueue<MessageInitShape<typeof PlayRequestSchema>>();
      const call = new AbortController();
      this.requests = requests;
      this.call = call;
      requests.push({ kind: { case: "open", value: { matchId: this.matchId, afterSeq: this.seq } } });
      for (const p of this.pending) {
        requests.push(p.request);
      }
      if (this.state === "closing") {
        requests.end();
      }
      let error: SpadesError;
      let answered = false; // the server took the call (its headers came)
      const openedAt = Date.now();
      try {
        const responses = this.rpc.play(requests, {
          signal: call.signal,
          headers: { authorization: `Bearer ${this.token}` },
          onHeader: () => {
            answered = true;
          },
        });
        for await (const res of responses) {
          attempt = 0;
          for (const event of res.events) {
            if (event.seq <= this.seq) {
              continue; // already delivered before a reconnection
            }
            this.seq = event.seq;
            this.options.onSeq?.(event.seq);
            this.events.push(event);
          }
          for (const result of res.results) {
            this.settle(result);
          }
          if (this.state === "closing" && this.pending.length === 0) {
            this.finish();
          }
          if (this.state === "closed" || this.state === "failed") {
            return;
          }
        }
        error = new SpadesError(Code.Unavailable, "the server ended the Play call");
      } catch (e) {
        if (this.state === "closed" || this.state === "failed") {
          return;
        }
        error = connectionLost(SpadesError.from(e));
      } finally {
        requests.end();
        if (this.requests === requests) {
          this.requests = undefined;
        }
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
        await sleep(delayMs, this.options.signal);
      } catch {
        return; // the signal's abort handler has ended the session
      }
      if (this.state === "closed" || this.state === "failed") {
        return;
      }
      this.reconnectCount++;
    }
  }

  private settle(result: ActionResult): void {
    const i = this.pending.findIndex((p) => p.actionId === result.actionId);
    if (i < 0) {
      return; // abandoned by its caller (AbortSignal)
    }
    const [entry] = this.pending.splice(i, 1) as [Pending];
    entry.cleanup();
    if (result.error !== undefined) {
      entry.reject(SpadesError.fromActionError(result.error));
    } else {
      entry.resolve(result);
    }
  }

  private finish(): void {
    if (this.state === "closed" || this.state === "failed") {
      return;
    }
    this.state = "closed";
    this.teardown(new SpadesError(Code.Canceled, "the session was closed"));
    this.events.end();
    this.settleEnded(undefined);
  }

  private fail(error: SpadesError): void {
    if (this.state === "closed" || this.state === "failed") {
      return;
    }
    this.state = "failed";
    this.teardown(error);
    this.events.fail(error);
    this.settleEnded(error);
  }

  private teardown(error: SpadesError): void {
    this.options.signal?.removeEventListener("abort", this.onAbort);
    this.requests?.end();
    this.call?.abort();
    for (const p of this.pending.splice(0)) {
      p.cleanup();
      p.reject(error);
    }
  }
}
