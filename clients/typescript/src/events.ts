// A resuming event stream on the server-streaming calls, StreamEvents (a
// seat's events) and Spectate (the public ones), or on a loop of PollEvents
// long polls where streams stall (an HTTP stack or a proxy that buffers a
// response until it ends): for clients without the bidirectional Play call
// (browsers through gRPC-Web or Connect), which act with SeatClient.submitAction.
import type { CallOptions } from "@connectrpc/connect";
import { sleep, type RetryOptions } from "./backoff.js";
import type { SeatClient, SpadesClient } from "./client.js";
import type { SpadesError } from "./errors.js";
import type { MatchEvent, PollEventsResponse } from "./gen/spades/v1/spades_pb.js";
import type { ReconnectInfo } from "./session.js";
import { Watch, type WatchOptions, type WatchSource } from "./watch.js";

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

/** How the calls an OpenEvents makes behave, for counting reconnection attempts. */
export interface EventStreamTraits {
  /**
   * Whether a call that stayed up `retry.resetAfterMs` without any answer got
   * through (the count of attempts starts again after it). True by default:
   * a resumed server stream with nothing new gets no headers before its next
   * event, so a quiet call is a working one. A PollEvents loop answers every
   * poll within its wait, so only an answer counts there (false): a poll that
   * hung until its deadline, or that a proxy cut, is one more attempt.
   */
  quietCallsGetThrough?: boolean;
}

/**
 * Events of a match in sequence order, each once, over one server-streaming
 * call at a time (streamEvents, spectate) or one loop of long polls at a time
 * (pollEvents, pollSpectate).
 *
 * `for await (const event of stream)` yields them. When a call ends — the
 * connection dropped, a proxy timed it out, the server drained — the stream
 * opens a new call with `after_seq` = the last sequence number it delivered
 * (no gap) and skips any event at or below it (no duplicate), after a delay
 * that grows exponentially with jitter, up to `retry.maxAttempts` attempts in
 * a row that did not get through. A refusal (a bad token, an unknown match)
 * ends the stream with its SpadesError. `close()` ends it quietly.
 *
 * It is a Watch (watch.ts) whose versions are the events' sequence numbers:
 * the lobby's watches and the event streams resume by the same code.
 */
export class EventStream implements AsyncIterable<MatchEvent> {
  private readonly watch: Watch<MatchEvent>;

  /** Resolves once the stream is over: with undefined after close(), with the error that ended it otherwise. */
  readonly ended: Promise<SpadesError | undefined>;

  constructor(open: OpenEvents, options: EventStreamOptions = {}, traits: EventStreamTraits = {}) {
    const { onReconnect, afterSeq, ...rest } = options;
    const source: WatchSource<{ readonly events: readonly MatchEvent[] }, MatchEvent> = {
      open,
      take: (res) => res.events.map((event) => ({ item: event, version: event.seq })),
      quietCallsGetThrough: traits.quietCallsGetThrough ?? true,
      // The server never ends these calls by itself; a proxy's timeout may.
      endedMessage: "the event stream ended",
    };
    const watchOptions: WatchOptions & { afterVersion?: bigint } = { ...rest, afterVersion: afterSeq ?? 0n };
    if (onReconnect) {
      watchOptions.onReconnect = (info) => onReconnect({ attempt: info.attempt, delayMs: info.delayMs, error: info.error, afterSeq: info.afterVersion });
    }
    this.watch = new Watch<MatchEvent>(source, watchOptions);
    this.ended = this.watch.ended;
  }

  /** The sequence number of the last event delivered (afterSeq before any). */
  get lastSeq(): bigint {
    return this.watch.version;
  }

  /** How many times the stream has opened a new call. */
  get reconnects(): number {
    return this.watch.reconnects;
  }

  [Symbol.asyncIterator](): AsyncIterator<MatchEvent> {
    return this.watch[Symbol.asyncIterator]();
  }

  /** Ends the stream: the current call is cancelled and the iterator ends after the events delivered so far. */
  close(): void {
    this.watch.close();
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

/** What a spectator may send. */
export interface SpectatorOptions {
  /**
   * The match's spectator token, for a match created with
   * `Spectators.TOKEN` (a public match needs none; the operator token is
   * not a spectator's).
   */
  spectatorToken?: string;
}

function spectatorHeaders(options: SpectatorOptions): Record<string, string> | undefined {
  return options.spectatorToken ? { authorization: `Bearer ${options.spectatorToken}` } : undefined;
}

/** A match's public events on Spectate (no credential, or the spectator token), resuming by itself. */
export function spectate(client: SpadesClient, matchId: string, options: EventStreamOptions & SpectatorOptions = {}): EventStream {
  const headers = spectatorHeaders(options);
  return new EventStream((afterSeq, call) => client.rpc.spectate({ matchId, afterSeq }, headers ? { ...call, headers } : call), {
    ...options,
    retry: { ...client.retry, ...(options.retry ?? {}) },
  });
}

export interface PollOptions extends EventStreamOptions {
  /**
   * How long each poll may wait on the server for an event, in milliseconds
   * (default 20000). The server waits at most its `--poll-max-wait-ms` (25 s
   * by default); keep it below the idle timeout of every proxy on the way.
   * 0 polls without waiting, at most once a second while nothing comes.
   */
  waitMs?: number;
  /** Each poll's deadline is its wait plus this, in milliseconds (default 5000). */
  deadlineMarginMs?: number;
}

/** One PollEvents call, its credential already in place. */
type PollCall = (request: { afterSeq: bigint; waitMs: number }, options: CallOptions) => Promise<PollEventsResponse>;

/**
 * An empty answer faster than this (the server waited less than asked: a
 * `waitMs` of 0, or a server whose longest wait is 0) is followed by a pause
 * up to this long, so that a quiet match is not polled in a tight loop.
 */
const MIN_EMPTY_POLL_MS = 1_000;

/**
 * The OpenEvents of a long-poll loop: each "call" polls on and on, from the
 * last response's `last_seq` (past the events hidden from this viewer, which
 * the server has looked at already), again at once when a response says
 * `more` (without waiting, then) and after every answer otherwise (the
 * server did the waiting). The loop never ends by itself: a failed poll ends
 * it, and the EventStream starts another after its backoff.
 */
function pollLoop(poll: PollCall, options: PollOptions): OpenEvents {
  const waitMs = options.waitMs ?? 20_000;
  const marginMs = options.deadlineMarginMs ?? 5_000;
  if (!(waitMs >= 0 && waitMs <= 2_147_483_647) || !(marginMs >= 0)) {
    throw new RangeError("pollEvents: waitMs must be 0 to 2^31-1 and deadlineMarginMs >= 0");
  }
  // Where the polls have got to; never behind the events the stream delivered
  // (a reopened loop is given the last of those, which may be before it).
  let cursor = 0n;
  return (afterSeq, call) =>
    (async function* () {
      let after = afterSeq > cursor ? afterSeq : cursor;
      let more = false;
      for (;;) {
        const wait = more ? 0 : Math.floor(waitMs);
        const started = Date.now();
        const res = await poll({ afterSeq: after, waitMs: wait }, { ...call, timeoutMs: wait + marginMs });
        // last_seq is below after_seq only for an after_seq beyond the match's
        // end (the server answers with its last number): keep ours.
        if (res.lastSeq > after) {
          after = res.lastSeq;
          cursor = after;
        }
        more = res.more;
        yield res;
        const took = Date.now() - started;
        if (res.events.length === 0 && !more && took < MIN_EMPTY_POLL_MS) {
          await sleep(MIN_EMPTY_POLL_MS - took, call.signal);
        }
      }
    })();
}

/**
 * A seat's events on PollEvents, for where StreamEvents stalls (a proxy or
 * an HTTP stack that buffers a streamed response until it ends): the same
 * EventStream as `streamEvents` — the same events in the same order, each
 * once, resumed after `afterSeq`, reconnecting with the same backoff and
 * callbacks — made of unary long polls, one at a time.
 */
export function pollEvents(seat: SeatClient, options: PollOptions = {}): EventStream {
  const auth = { authorization: `Bearer ${seat.token}` };
  const loop = pollLoop((req, call) => seat.client.rpc.pollEvents({ matchId: seat.matchId, ...req }, { ...call, headers: auth }), options);
  return new EventStream(loop, { ...options, retry: { ...seat.client.retry, ...(options.retry ?? {}) } }, { quietCallsGetThrough: false });
}

/** A match's public events on PollEvents (no credential, or the spectator token), as `spectate` has them. */
export function pollSpectate(client: SpadesClient, matchId: string, options: PollOptions & SpectatorOptions = {}): EventStream {
  const headers = spectatorHeaders(options);
  const loop = pollLoop((req, call) => client.rpc.pollEvents({ matchId, ...req }, headers ? { ...call, headers } : call), options);
  return new EventStream(loop, { ...options, retry: { ...client.retry, ...(options.retry ?? {}) } }, { quietCallsGetThrough: false });
}
