// Following something that has a version — a table, a ticket, the lobby —
// on a server stream (WatchTable, WatchTicket, WatchLobby) or on a loop of
// long polls (GetTable, GetTicket, PollLobby), resuming by itself after a
// dropped connection; and the credentials these calls carry.
import { Code, type CallOptions } from "@connectrpc/connect";
import { backoffDelay, canceled, connectionLost, isTransient, nextAttempt, resolveRetry, sleep, type ResolvedRetry, type RetryOptions } from "./backoff.js";
import { SpadesError } from "./errors.js";
import { AsyncQueue } from "./queue.js";

/**
 * A credential to send as `authorization: Bearer <credential>`: the string
 * itself, or a function that gives the current one (called before every call
 * and every reconnection, so that a credential that expires can be renewed).
 * An empty string sends no credential.
 */
export type Credential = string | (() => string | Promise<string>);

/**
 * The `authorization` header for a credential (none for an empty one).
 * @internal
 */
export async function bearer(credential: Credential): Promise<Record<string, string>> {
  const value = typeof credential === "string" ? credential : await credential();
  return value ? { authorization: `Bearer ${value}` } : {};
}

export interface WatchOptions {
  /** Ends the watch: the iterator rejects with a CANCELLED SpadesError. */
  signal?: AbortSignal;
  /** Reconnection backoff (defaults: the client's `retry`). */
  retry?: RetryOptions;
  /** Called before each reconnection, after its delay is chosen. */
  onReconnect?: (info: WatchReconnectInfo) => void;
  /** Called each time a call is up: its headers or its first answer came. */
  onConnected?: () => void;
}

export interface WatchReconnectInfo {
  /** 1 for the first attempt after a drop; counts again from 1 after a call that got through. */
  readonly attempt: number;
  /** The delay before this attempt, in milliseconds. */
  readonly delayMs: number;
  /** Why the previous call ended. */
  readonly error: SpadesError;
  /** The version the new call follows from. */
  readonly afterVersion: bigint;
}

/** Long polls: how long each may wait on the server, and its deadline. */
export interface LongPollOpts {
  /**
   * How long each poll may wait on the server for a change, in milliseconds
   * (default 20000; the server caps it at its `--poll-max-wait-ms`, 25 s by
   * default). Keep it below the idle timeout of every proxy on the way.
   */
  waitMs?: number;
  /** Each poll's deadline is its wait plus this, in milliseconds (default 5000). */
  deadlineMarginMs?: number;
  /** Stops waiting: rejects with a CANCELLED SpadesError. */
  signal?: AbortSignal;
}

/** What one answer of a watched call carries: an item to deliver (or none), and the version it brings. */
export interface Taken<T> {
  readonly item: T | undefined;
  readonly version: bigint;
}

/** How a Watch reads its calls. @internal */
export interface WatchSource<R, T> {
  /** One call: its answers, from `afterVersion` (the last version delivered, or the one asked for). */
  open(afterVersion: bigint, call: CallOptions): AsyncIterable<R>;
  /**
   * The item of an answer and its version (no item: nothing to deliver, e.g.
   * an empty long poll), or a batch of them in order (a match's events).
   */
  take(res: R): Taken<T> | readonly Taken<T>[];
  /** Whether an item is the last one there will be (a table started or closed, a ticket placed or cancelled). */
  final?(item: T): boolean;
  /**
   * Whether a call that stayed up `retry.resetAfterMs` without any answer got
   * through (true for streams, which may be quiet; false for long polls, which
   * answer within their wait).
   */
  quietCallsGetThrough: boolean;
  /** The message of the UNAVAILABLE a call that ended by itself counts as. */
  endedMessage?: string;
}

type State = "open" | "closed" | "failed";

/**
 * Something followed as it changes: a table or a ticket (which end once
 * final: started or closed, placed or cancelled) or the lobby's batches of
 * changes (which never end).
 *
 * `for await (const item of watch)` yields each version once, in order. When
 * a call ends before the end — the connection dropped, a proxy timed it out,
 * the server drained — the watch opens a new one from the last version it
 * delivered (an item at or below it is skipped), after a delay that grows
 * exponentially with jitter, up to `retry.maxAttempts` attempts in a row that
 * did not get through. A refusal (a bad credential, an unknown table) ends
 * it with its SpadesError. `close()` ends it quietly.
 */
export class Watch<T> implements AsyncIterable<T> {
  private readonly items = new AsyncQueue<T>();
  private readonly retry: ResolvedRetry;
  private readonly call = new AbortController();
  private state: State = "open";
  private at: bigint;
  private last: T | undefined;
  private reconnectCount = 0;
  private settleEnded!: (error: SpadesError | undefined) => void;
  private readonly onAbort: () => void;

  /** Resolves once the watch is over: undefined after close() or the final item, the error that ended it otherwise. */
  readonly ended: Promise<SpadesError | undefined>;

  /** @internal */
  constructor(
    private readonly source: WatchSource<unknown, T>,
    private readonly options: WatchOptions & { afterVersion?: bigint },
  ) {
    this.retry = resolveRetry(options.retry);
    this.at = options.afterVersion ?? 0n;
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

  /** The version of the last item delivered (or of the last empty answer of a long poll). */
  get version(): bigint {
    return this.at;
  }

  /** The last item delivered. */
  get latest(): T | undefined {
    return this.last;
  }

  /** How many times the watch has opened a new call. */
  get reconnects(): number {
    return this.reconnectCount;
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return this.items[Symbol.asyncIterator]();
  }

  /** Ends the watch: the current call is cancelled and the iterator ends after the items delivered so far. */
  close(): void {
    if (this.state !== "open") {
      return;
    }
    this.state = "closed";
    this.teardown();
    this.items.end();
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
        for await (const res of this.source.open(this.at, { signal: call.signal, onHeader: connected })) {
          connected();
          attempt = 0;
          const taken = this.source.take(res);
          for (const { item, version } of Array.isArray(taken) ? taken : [taken as Taken<T>]) {
            if (version <= this.at) {
              continue; // delivered before a reconnection, or nothing new
            }
            this.at = version;
            if (item === undefined) {
              continue;
            }
            this.last = item;
            this.items.push(item);
            if (this.source.final?.(item)) {
              this.close();
              return;
            }
          }
          if (this.state !== "open") {
            return;
          }
        }
        // A watch of a table or ticket ends once final; a proxy's timeout may end one sooner.
        error = new SpadesError(Code.Unavailable, this.source.endedMessage ?? "the watch's call ended");
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
      const stayedUp = this.source.quietCallsGetThrough && Date.now() - openedAt >= this.retry.resetAfterMs;
      const next = nextAttempt(attempt, error, answered || stayedUp, this.retry);
      if (next instanceof SpadesError) {
        this.fail(next);
        return;
      }
      attempt = next;
      const delayMs = backoffDelay(attempt, this.retry);
      this.options.onReconnect?.({ attempt, delayMs, error, afterVersion: this.at });
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
    this.items.fail(error);
    this.settleEnded(error);
  }

  private teardown(): void {
    this.options.signal?.removeEventListener("abort", this.onAbort);
    this.call.abort();
  }
}

/**
 * An empty answer faster than this (the server waited less than asked: a
 * `waitMs` of 0, or a server whose longest wait is 0) is followed by a pause
 * up to this long, so that nothing is polled in a tight loop.
 */
const MIN_QUIET_POLL_MS = 1_000;

/** The wait and deadline margin of long polls, checked. @internal */
export function pollTiming(options: LongPollOpts): { waitMs: number; marginMs: number } {
  const waitMs = Math.floor(options.waitMs ?? 20_000);
  const marginMs = options.deadlineMarginMs ?? 5_000;
  if (!(waitMs >= 0 && waitMs <= 2_147_483_647) || !(marginMs >= 0)) {
    throw new RangeError("long poll: waitMs must be 0 to 2^31-1 and deadlineMarginMs >= 0");
  }
  return { waitMs, marginMs };
}

/**
 * A loop of long polls as one "call" of a Watch: each poll asks for what
 * changed after the version the previous answer brought and waits on the
 * server up to `waitMs`; its deadline is the wait plus the margin. An answer
 * that brings nothing new and came back in under a second is followed by a
 * pause to make up the second. The loop never ends by itself: a failed poll
 * ends it, and the Watch starts another after its backoff.
 * @internal
 */
export function pollLoop<R>(
  poll: (afterVersion: bigint, waitMs: number, call: CallOptions) => Promise<R>,
  version: (res: R) => bigint,
  options: LongPollOpts,
): (afterVersion: bigint, call: CallOptions) => AsyncIterable<R> {
  const { waitMs, marginMs } = pollTiming(options);
  return (afterVersion, call) =>
    (async function* () {
      let after = afterVersion;
      for (;;) {
        const started = Date.now();
        const res = await poll(after, waitMs, { ...call, timeoutMs: waitMs + marginMs });
        const v = version(res);
        const news = v > after;
        if (news) {
          after = v;
        }
        yield res;
        const took = Date.now() - started;
        if (!news && took < MIN_QUIET_POLL_MS) {
          await sleep(MIN_QUIET_POLL_MS - took, call.signal);
        }
      }
    })();
}

/**
 * Long polls one call at a time (each retried after a dropped connection by
 * `poll` itself) until `done(answer)` says so, and resolves with that
 * answer; `done` may throw to end the wait with a refusal. The first poll
 * asks at once (version 0); each next one after the version the last
 * answer had, waiting up to `waitMs`.
 * @internal
 */
export async function awaitLongPoll<R>(
  poll: (afterVersion: bigint, waitMs: number, opts: { signal?: AbortSignal; timeoutMs?: number }) => Promise<R>,
  version: (res: R) => bigint,
  done: (res: R) => boolean,
  options: LongPollOpts,
): Promise<R> {
  const { waitMs, marginMs } = pollTiming(options);
  const signal = options.signal;
  let after = 0n;
  let wait = 0;
  for (;;) {
    if (signal?.aborted) {
      throw canceled(signal);
    }
    const started = Date.now();
    const res = await poll(after, wait, { ...(signal !== undefined ? { signal } : {}), timeoutMs: wait + marginMs });
    if (done(res)) {
      return res;
    }
    const v = version(res);
    const took = Date.now() - started;
    if (v <= after && took < MIN_QUIET_POLL_MS) {
      await sleep(MIN_QUIET_POLL_MS - took, signal); // nothing new at once: a wait of 0, or a server that does not wait
    }
    after = v > after ? v : after;
    wait = waitMs;
  }
}
