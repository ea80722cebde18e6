// The calls of spades.v1.SpadesService, typed, with credentials, deadlines and
// errors handled once; spades.v1.LobbyService's are in ./lobby.ts
// (`client.player(credential)`) and, for Rematch, on SeatClient. No transport
// is made here (see ./node.ts): the same code runs on Node and, with a
// browser transport, in a browser.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, createClient, type CallOptions, type Client, type Transport } from "@connectrpc/connect";
import { backoffDelay, canceled, connectionLost, isTransient, resolveRetry, sleep, type ResolvedRetry, type RetryOptions } from "./backoff.js";
import { SpadesError } from "./errors.js";
import { LobbyService, TableState, type RematchResponse } from "./gen/spades/v1/lobby_pb.js";
import { PlayerClient } from "./lobby.js";
import { awaitLongPoll, bearer, type Credential, type LongPollOpts } from "./watch.js";
import { SeatSession, type SessionOptions } from "./session.js";
import {
  SpadesService,
  type ActionSchema,
  type ClaimSeatResponse,
  type CreateMatchRequestSchema,
  type CreateMatchResponse,
  type LeaveSeatResponse,
  type MatchSummary,
  type ReissueSeatTokenResponse,
  type SeatView,
  type SetSpectatorsResponse,
  type Spectators,
  type SubmitActionResponse,
} from "./gen/spades/v1/spades_pb.js";

/** An action to send, as a message or its init shape: `{ kind: { case: "bid", value: { tricks: 3 } } }`. */
export type ActionInit = MessageInitShape<typeof ActionSchema>;

/** Per-call options: a deadline other than the client's, and cancellation. */
export interface CallOpts {
  /** This call's deadline in milliseconds (default: the client's `timeoutMs`). */
  timeoutMs?: number;
  /** Cancels the call: it rejects with a CANCELLED SpadesError. */
  signal?: AbortSignal;
}

export interface SpadesClientOptions {
  /** How calls reach the server: `createNodeTransport()` from `./node`, or any Connect transport. */
  transport: Transport;
  /** The operator credential, for createMatch, getMatch, reissueSeatToken and setSpectators. */
  operatorToken?: string;
  /** The deadline of each unary call, in milliseconds (default 10000). Play calls have none. */
  timeoutMs?: number;
  /** Backoff for retrying the calls that are safe to repeat, and default for sessions' reconnections. */
  retry?: RetryOptions;
}

/** The service's client: operator calls, `seat(token)` for a seat's, `player(credential)` for the lobby's. */
export class SpadesClient {
  /** The generated Connect client, for the calls this wrapper does not cover. */
  readonly rpc: Client<typeof SpadesService>;
  /** The generated Connect client of spades.v1.LobbyService. */
  readonly lobbyRpc: Client<typeof LobbyService>;
  readonly timeoutMs: number;
  readonly retry: RetryOptions;
  private readonly operatorToken: string | undefined;

  constructor(options: SpadesClientOptions) {
    this.rpc = createClient(SpadesService, options.transport);
    this.lobbyRpc = createClient(LobbyService, options.transport);
    this.operatorToken = options.operatorToken;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.retry = { ...(options.retry ?? {}) };
    resolveRetry(this.retry); // validates
  }

  /**
   * Creates a match (operator). The response has one seat token per human
   * seat; with `spectators: Spectators.TOKEN`, its `spectatorToken` is the
   * watchers' credential (`spectate(client, matchId, { spectatorToken })`).
   * Not retried: a call that fails with UNAVAILABLE may have created the
   * match all the same.
   */
  async createMatch(request: MessageInitShape<typeof CreateMatchRequestSchema>, opts?: CallOpts): Promise<CreateMatchResponse> {
    return this.unary((o) => this.rpc.createMatch(request, o), this.operatorCredential(), opts);
  }

  /** One match's public summary (operator); safe to repeat, so retried after a dropped connection. */
  async getMatch(matchId: string, opts?: CallOpts): Promise<MatchSummary> {
    const res = await this.unary((o) => this.rpc.getMatch({ matchId }, o), this.operatorCredential(), opts, true);
    if (res.match === undefined) {
      throw new SpadesError(Code.Internal, "GetMatch answered without a match");
    }
    return res.match;
  }

  /**
   * Replaces a human seat's token (operator): the old one is refused from
   * now on, the streams opened with it end (UNAUTHENTICATED, reason
   * TOKEN_REVOKED), and the seat is OPEN again. Retried after a dropped
   * connection: a repeat replaces the token once more, and its answer holds
   * the token that is current.
   */
  reissueSeatToken(matchId: string, seat: number, opts?: CallOpts): Promise<ReissueSeatTokenResponse> {
    return this.unary((o) => this.rpc.reissueSeatToken({ matchId, seat }, o), this.operatorCredential(), opts, true);
  }

  /**
   * Changes who may watch a match (operator); with `Spectators.TOKEN` the
   * answer's `spectatorToken` is a new one (an earlier one is refused from
   * now on). Retried like reissueSeatToken.
   */
  setSpectators(matchId: string, spectators: Spectators, opts?: CallOpts): Promise<SetSpectatorsResponse> {
    return this.unary((o) => this.rpc.setSpectators({ matchId, spectators }, o), this.operatorCredential(), opts, true);
  }

  /** A seat's calls with its seat token (`<match_id>.<secret>`). */
  seat(token: string): SeatClient {
    return new SeatClient(this, token);
  }

  /**
   * A player's calls (spades.v1.LobbyService: tables, the lobby, quick play)
   * with their player credential: the JWT the game's identity provider
   * issued (this client never makes one), or a function that returns the
   * current one.
   */
  player(credential: Credential): PlayerClient {
    return new PlayerClient(this, credential);
  }

  private operatorCredential(): string {
    if (this.operatorToken === undefined) {
      throw new SpadesError(Code.Unauthenticated, "this client has no operatorToken", { reason: "UNAUTHENTICATED" });
    }
    return this.operatorToken;
  }

  /**
   * One unary call with the credential, the deadline and the signal; errors
   * become SpadesError. `idempotent` calls are retried with backoff after
   * failures of the connection (never after a refusal).
   * @internal
   */
  async unary<T>(
    call: (options: CallOptions) => Promise<T>,
    credential: Credential,
    opts: CallOpts | undefined,
    idempotent = false,
  ): Promise<T> {
    const retry: ResolvedRetry = resolveRetry(this.retry);
    for (let attempt = 1; ; attempt++) {
      // A credential function is asked again for each attempt (a renewed JWT).
      const options: CallOptions = {
        headers: await bearer(credential),
        timeoutMs: opts?.timeoutMs ?? this.timeoutMs,
        ...(opts?.signal !== undefined ? { signal: opts.signal } : {}),
      };
      try {
        return await call(options);
      } catch (e) {
        if (opts?.signal?.aborted) {
          throw canceled(opts.signal);
        }
        const err = connectionLost(SpadesError.from(e));
        if (!idempotent || !isTransient(err) || attempt > retry.maxAttempts) {
          throw err;
        }
        await sleep(backoffDelay(attempt, retry), opts?.signal);
      }
    }
  }
}

/** What a seat token may do: claim or leave the seat, see it, act, open a session, and ask for a rematch. */
export class SeatClient {
  /** The match id: the part of the token before its first dot. */
  readonly matchId: string;

  /**
   * The newest sequence number this seat has seen through this object (its
   * views, its actions' results, its sessions' events): getView asks for a
   * view at least as new (`minSeq`), so that a server replica a moment
   * behind the one the client left answers only once it has caught up.
   */
  seenSeq = 0n;

  constructor(
    readonly client: SpadesClient,
    readonly token: string,
  ) {
    const dot = token.indexOf(".");
    this.matchId = dot > 0 ? token.slice(0, dot) : "";
  }

  /**
   * Takes the seat (back) from a bot; returns the seat number and its view.
   * Claiming a seat one holds changes nothing, so a claim is retried after a
   * dropped connection.
   */
  claim(opts?: CallOpts): Promise<ClaimSeatResponse> {
    return this.client.unary((o) => this.client.rpc.claimSeat({ matchId: this.matchId }, o), this.token, opts, true);
  }

  /** Hands the seat to a bot until it is claimed again or acts (retried like claim). */
  leave(opts?: CallOpts): Promise<LeaveSeatResponse> {
    return this.client.unary((o) => this.client.rpc.leaveSeat({ matchId: this.matchId }, o), this.token, opts, true);
  }

  /**
   * The match as this seat may see it, with its legal actions, at least as new
   * as `minSeq` (default: `seenSeq`); retried after a dropped connection. A
   * `minSeq` the match has not reached is refused: OUT_OF_RANGE, reason SEQ_AHEAD.
   */
  async getView(opts?: CallOpts & { minSeq?: bigint }): Promise<SeatView> {
    const request = { matchId: this.matchId, minSeq: opts?.minSeq ?? this.seenSeq };
    const res = await this.client.unary((o) => this.client.rpc.getView(request, o), this.token, opts, true);
    if (res.view === undefined) {
      throw new SpadesError(Code.Internal, "GetView answered without a view");
    }
    this.saw(res.view.asOfSeq);
    return res.view;
  }

  private saw(seq: bigint): void {
    if (seq > this.seenSeq) {
      this.seenSeq = seq;
    }
  }

  /**
   * Acts with a unary call (for clients without a session). The action id is
   * made up (crypto.randomUUID) unless given; a retry after a dropped
   * connection sends the same id, so the action is applied at most once.
   */
  async submitAction(
    action: ActionInit,
    opts?: CallOpts & { actionId?: string; expectedSeq?: bigint },
  ): Promise<SubmitActionResponse> {
    const request = {
      matchId: this.matchId,
      actionId: opts?.actionId ?? crypto.randomUUID(),
      action,
      ...(opts?.expectedSeq !== undefined ? { expectedSeq: opts.expectedSeq } : {}),
    };
    const res = await this.client.unary((o) => this.client.rpc.submitAction(request, o), this.token, opts, true);
    this.saw(res.lastSeq);
    return res;
  }

  /** Sends a chat line to the partner (partnership tables, during the bidding); not retried. */
  async sendChat(text: string, opts?: CallOpts): Promise<bigint> {
    const res = await this.client.unary((o) => this.client.rpc.sendChat({ matchId: this.matchId, text }, o), this.token, opts);
    return res.seq;
  }

  /**
   * Opens the seat's session: a Play call that delivers the seat's events
   * after `afterSeq` in order and carries its actions, and that resumes by
   * itself after a dropped connection.
   */
  open(options: SessionOptions = {}): SeatSession {
    return new SeatSession(this.client.rpc, this.token, this.matchId, {
      ...options,
      retry: { ...this.client.retry, ...(options.retry ?? {}) },
      onSeq: (seq) => {
        this.saw(seq);
        options.onSeq?.(seq);
      },
    });
  }

  /**
   * Rematch, one call (a long poll), with this seat's token of a finished
   * match: the first call opens the rematch, each human seat's call accepts
   * it (`decline: true` closes it for everyone, reason "declined"). The
   * answer is the rematch table (WAITING until every human accepted, then
   * STARTED) and this seat's token for the new match: `client.seat(res.seatToken)`
   * plays it once the table has started. With `afterVersion` (the table's
   * `version` last seen) and `waitMs` it answers when the table changes or
   * the wait runs out. Refused before the match is over (FAILED_PRECONDITION
   * MATCH_NOT_OVER). Asking again changes nothing, so it is retried after a
   * dropped connection.
   */
  rematch(options: RematchOpts = {}, opts?: CallOpts): Promise<RematchResponse> {
    const waitMs = options.waitMs ?? 0;
    const request = {
      matchId: this.matchId,
      decline: options.decline ?? false,
      afterVersion: options.afterVersion ?? 0n,
      waitMs,
    };
    const timeout = opts?.timeoutMs ?? (waitMs > 0 ? waitMs + (options.deadlineMarginMs ?? 5_000) : undefined);
    return this.client.unary(
      (o) => this.client.lobbyRpc.rematch(request, o),
      this.token,
      { ...opts, ...(timeout !== undefined ? { timeoutMs: timeout } : {}) },
      true,
    );
  }

  /**
   * Accepts a rematch (opening it if nobody has yet) and waits, with Rematch
   * long polls, until every human seat has accepted and the new match is
   * dealt. Resolves with the last answer (`table.state` STARTED,
   * `table.matchId` the new match, `seatToken` this seat's in it); rejects
   * with FAILED_PRECONDITION TABLE_CLOSED (`metadata.close_reason`:
   * "declined" or "expired") if the rematch closed instead.
   */
  awaitRematch(options: LongPollOpts = {}): Promise<RematchResponse> {
    return awaitLongPoll(
      (afterVersion, waitMs, opts) => this.rematch({ afterVersion, waitMs, ...deadline(options) }, opts),
      (res) => res.table?.version ?? 0n,
      (res) => {
        const table = res.table;
        if (table?.state === TableState.STARTED) {
          return true;
        }
        if (table?.state === TableState.CLOSED) {
          throw new SpadesError(Code.FailedPrecondition, `the rematch closed (${table.closeReason})`, {
            reason: "TABLE_CLOSED",
            metadata: { table_id: table.tableId, close_reason: table.closeReason },
          });
        }
        return false;
      },
      options,
    );
  }
}

/** What a Rematch call asks. */
export interface RematchOpts {
  /** True to decline: the rematch closes for everyone. */
  decline?: boolean;
  /** Answer at once if the rematch table's version is past this (0: at once). */
  afterVersion?: bigint;
  /** How long the server may wait for a change, in milliseconds (0: at once; it caps this at its --poll-max-wait-ms). */
  waitMs?: number;
  /** With a wait, the call's deadline is the wait plus this, in milliseconds (default 5000). */
  deadlineMarginMs?: number;
}

function deadline(options: LongPollOpts): { deadlineMarginMs?: number } {
  return options.deadlineMarginMs !== undefined ? { deadlineMarginMs: options.deadlineMarginMs } : {};
}
