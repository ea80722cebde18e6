// A player's calls of spades.v1.LobbyService — tables, the lobby, invitations,
// quick play, and rated play's leaderboards and profiles — with their player
// credential, deadlines, retries and errors handled once. Like client.ts it
// makes no transport: the same calls run over Node's gRPC and over a
// browser's gRPC-Web or Connect (through Envoy). Rematch needs a seat token,
// not a player credential: it is SeatClient.rematch / awaitRematch.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, type CallOptions } from "@connectrpc/connect";
import type { CallOpts, SpadesClient } from "./client.js";
import { SpadesError } from "./errors.js";
import {
  TableState,
  TicketState,
  type GetLeaderboardResponse,
  type JoinTableResponse,
  type LeaderboardEntry,
  type ListTablesResponse,
  type LobbyFilterSchema,
  type OpenTableRequestSchema,
  type OpenTableResponse,
  type Placement,
  type PlayerProfile,
  type Table,
  type Ticket,
  type WatchLobbyResponse,
} from "./gen/spades/v1/lobby_pb.js";
import type { RulesetSchema } from "./gen/spades/v1/spades_pb.js";
import {
  Watch,
  awaitLongPoll,
  bearer,
  pollLoop,
  pollTiming,
  type Credential,
  type LongPollOpts,
  type WatchOptions,
  type WatchSource,
} from "./watch.js";

/** A table: its id, or `{ tableId }`, or `{ inviteCode }` for an invite-only one (case, spaces and dashes do not matter). */
export type TableRef = string | { readonly tableId: string } | { readonly inviteCode: string };

/** Where to sit: a public table by its id or an invite-only one by its code; `seat` unset takes the lowest open seat. */
export type JoinTarget = ({ readonly tableId: string } | { readonly inviteCode: string }) & { readonly seat?: number };

/** Which tables a lobby call is about: `{ ruleset }` (compared once resolved), or every table. */
export type LobbyFilterInit = MessageInitShape<typeof LobbyFilterSchema>;

/** The rules, as a message or its init shape: `{ preset: "classic", targetScore: 250 }`. */
export type RulesetInit = MessageInitShape<typeof RulesetSchema>;

/** A long poll of one table, ticket or rematch: the version last seen and how long to wait for a newer one. */
export interface PollCallOpts extends CallOpts {
  /** Answer at once if the version is past this (0: at once). */
  afterVersion?: bigint;
  /** How long the server may wait for a change, in milliseconds (0: at once; it caps this at its --poll-max-wait-ms). */
  waitMs?: number;
  /** With a wait and no `timeoutMs`, the call's deadline is the wait plus this, in milliseconds (default 5000). */
  deadlineMarginMs?: number;
}

/** What a lobby watch follows: a filter, and the version to follow from. */
export interface LobbyWatchOptions extends WatchOptions {
  /** Which tables (default: every public table). */
  filter?: LobbyFilterInit;
  /**
   * Changes after this version: `listAllTables()`'s (or `listTables()`'s)
   * `version`, so that nothing is missed between the list and the watch.
   * 0 (the default): from now — and after a reconnection that came before
   * any batch, from then.
   */
  afterVersion?: bigint;
}

/** A ticket's wait for its placement: with long polls (the default: they work through any proxy) or `stream: true` (WatchTicket). */
export interface PlacementOptions extends LongPollOpts {
  /** Follow the ticket with WatchTicket rather than GetTicket long polls. */
  stream?: boolean;
}

/** Which leaderboard page: of a pool (empty: the server's default, "classic" unless it keeps one pool, "all"), at the top, after or before a page token, or around a player. */
export interface LeaderboardOptions extends CallOpts {
  /** The rating pool (a table's `ratingPool`: the preset's name, "classic", "polish", ...); empty or unset: the server's default. */
  pool?: string;
  /** Players per page (0 or unset: 25; at most 200). */
  pageSize?: number;
  /** A `nextPageToken` or `previousPageToken` of an earlier page of the same pool. */
  pageToken?: string;
  /** The page that holds this player (not with `pageToken`: TOKEN_AND_PLAYER). */
  aroundPlayerId?: string;
}

/** How `leaderboardPages` walks: from its first page (the top, a token's or a player's) down (`"next"`, the default) or up (`"previous"`). */
export interface LeaderboardPagesOptions extends LeaderboardOptions {
  /** Follow `nextPageToken` (down the board, the default) or `previousPageToken` (up towards the top). */
  direction?: "next" | "previous";
}

const TABLE_FINAL = new Set([TableState.STARTED, TableState.CLOSED]);
const TICKET_FINAL = new Set([TicketState.PLACED, TicketState.CANCELLED]);

/**
 * What a player may do in the lobby, with their player credential (a JWT
 * the game's identity provider issued, sent as `authorization: Bearer <jwt>`
 * on every call). Made by `client.player(credential)`.
 *
 * A seat token this gives (`openTable`, `joinTable`, a placement) plays the
 * seat on SpadesService exactly like one from createMatch, once the table has
 * started: `client.seat(token).open()` (or `streamEvents`, `pollEvents`).
 * Before that the seat's calls are refused (FAILED_PRECONDITION
 * TABLE_NOT_STARTED): wait with `awaitStart(tableId)`.
 *
 * Every refusal is a SpadesError with the server's reason: a refused
 * credential is UNAUTHENTICATED with CREDENTIAL_REQUIRED, CREDENTIAL_EXPIRED,
 * BAD_SIGNATURE, MALFORMED_CREDENTIAL, WRONG_AUDIENCE, ... The reads and the
 * calls that are safe to repeat are retried after a dropped connection with
 * the client's backoff, and so is `quickPlay` (its request id makes a repeat
 * answer with the ticket it made); `openTable` and `leaveTable` are not (a
 * repeat is refused: ALREADY_SEATED, NOT_SEATED).
 *
 * Rated play: `openTable({ rated: true })` and `quickPlay({ rated: true })`;
 * `leaderboard()` (a page), `leaderboardPages()` and `leaderboardEntries()`
 * (walking the pages) read a pool's leaderboard, `profile(playerId)` a
 * player's ratings and record.
 */
export class PlayerClient {
  constructor(
    readonly client: SpadesClient,
    private readonly credential: Credential,
  ) {}

  // -- tables --------------------------------------------------------------------

  /**
   * Opens a table and sits at it (`seat`, default 0): it waits for players
   * until its seats are taken (or `waitSeconds` run out: bots fill it, or it
   * closes, by `unattended`), then it is dealt. `botSeats` are played by bots
   * from the start; `visibility: TableVisibility.INVITE_ONLY` keeps it out of
   * the lobby, and the answer's `table.inviteCode` is what friends join with.
   * `rated: true` asks for a rated table (its result moves the players'
   * ratings in the pool of its rules, `table.ratingPool`): humans only, so
   * with `botSeats` it is refused INVALID_ARGUMENT RATED_WITHOUT_BOTS, and
   * if bots take open seats when it starts it plays unrated (`table.rated`
   * false). Not retried: a repeat is refused ALREADY_SEATED (its metadata
   * names the table).
   */
  openTable(request: MessageInitShape<typeof OpenTableRequestSchema> = {}, opts?: CallOpts): Promise<OpenTableResponse> {
    return this.unary((o) => this.client.lobbyRpc.openTable(request, o), opts);
  }

  /**
   * Sits at a table: `{ tableId }` (a public table) or `{ inviteCode }` (an
   * invite-only one; a wrong code is NOT_FOUND INVITE_NOT_FOUND, and too many
   * wrong ones RESOURCE_EXHAUSTED INVITE_ATTEMPTS), at `seat` or the lowest
   * open one. The table starts when its last seat is taken. Joining a table
   * one sits at answers the same seat and token, so it is retried.
   */
  joinTable(target: JoinTarget, opts?: CallOpts): Promise<JoinTableResponse> {
    const request = {
      ...("tableId" in target ? { tableId: target.tableId } : { inviteCode: target.inviteCode }),
      ...(target.seat !== undefined ? { seat: target.seat } : {}),
    };
    return this.unary((o) => this.client.lobbyRpc.joinTable(request, o), opts, true);
  }

  /** Stands up from a waiting table (the seat's token is worthless from now on); returns the table. Not retried. */
  async leaveTable(tableId: string, opts?: CallOpts): Promise<Table> {
    const res = await this.unary((o) => this.client.lobbyRpc.leaveTable({ tableId }, o), opts);
    return required(res.table, "LeaveTable");
  }

  /** The host starts the table now: bots take the open seats. Returns it STARTED. Retried (a started table is done). */
  async startTable(tableId: string, opts?: CallOpts): Promise<Table> {
    const res = await this.unary((o) => this.client.lobbyRpc.startTable({ tableId }, o), opts, true);
    return required(res.table, "StartTable");
  }

  /**
   * A table (one call): public ones, those the player sits at, and an
   * invite-only one by `{ inviteCode }` (each look by code counts against
   * the player's attempts, as a join does). With `afterVersion` and `waitMs` it
   * is a long poll: the answer comes when the table's version is past
   * `afterVersion`, or unchanged once the wait has run out.
   */
  async getTable(table: TableRef, options: PollCallOpts = {}): Promise<Table> {
    const request = {
      ...tableRef(table),
      afterVersion: options.afterVersion ?? 0n,
      waitMs: options.waitMs ?? 0,
    };
    const res = await this.unary((o) => this.client.lobbyRpc.getTable(request, o), pollDeadline(options), true);
    return required(res.table, "GetTable");
  }

  /** A table as it changes (WatchTable): the table now, then each change, ending after it has started or closed. */
  watchTable(tableId: string, options: WatchOptions = {}): Watch<Table> {
    return this.watch(
      {
        open: (_after, call) => this.stream(call, (o) => this.client.lobbyRpc.watchTable({ tableId }, o)),
        take: (res) => taken(res.table, "WatchTable"),
        final: (t) => TABLE_FINAL.has(t.state),
        quietCallsGetThrough: true,
      },
      options,
    );
  }

  /**
   * `watchTable` made of GetTable long polls, for where streams stall (a
   * proxy or an HTTP stack that buffers them). By id only: a look by invite
   * code counts against the player's attempts (INVITE_ATTEMPTS), so follow
   * an invite-only table once seated at it.
   */
  pollTable(tableId: string, options: WatchOptions & LongPollOpts = {}): Watch<Table> {
    const loop = pollLoop(
      (afterVersion, waitMs, call) => this.callWith(call, (o) => this.client.lobbyRpc.getTable({ tableId, afterVersion, waitMs }, o)),
      (res) => res.table?.version ?? 0n,
      options,
    );
    return this.watch(
      { open: loop, take: (res) => taken(res.table, "GetTable"), final: (t) => TABLE_FINAL.has(t.state), quietCallsGetThrough: false },
      options,
    );
  }

  /**
   * Waits, with GetTable long polls, until the table has started; resolves
   * with it STARTED (its `matchId` plays with the seat tokens). Rejects with
   * FAILED_PRECONDITION TABLE_CLOSED (`metadata.close_reason`: "unattended",
   * "empty", ...) if it closed instead. By id (a public table, or one the
   * player sits at), like `pollTable`.
   */
  awaitStart(tableId: string, options: LongPollOpts = {}): Promise<Table> {
    return awaitLongPoll(
      (afterVersion, waitMs, opts) => this.getTable(tableId, { afterVersion, waitMs, ...opts }),
      (t) => t.version,
      (t) => {
        if (t.state === TableState.CLOSED) {
          throw new SpadesError(Code.FailedPrecondition, `table ${t.tableId} closed (${t.closeReason})`, {
            reason: "TABLE_CLOSED",
            metadata: { table_id: t.tableId, close_reason: t.closeReason },
          });
        }
        return t.state === TableState.STARTED;
      },
      options,
    );
  }

  // -- the lobby -----------------------------------------------------------------

  /** One page of the public tables waiting for players, oldest first, with the lobby's version to follow it from. Retried. */
  listTables(options: CallOpts & { filter?: LobbyFilterInit; pageSize?: number; pageToken?: string } = {}): Promise<ListTablesResponse> {
    const request = {
      ...(options.filter !== undefined ? { filter: options.filter } : {}),
      pageSize: options.pageSize ?? 0,
      pageToken: options.pageToken ?? "",
    };
    return this.unary((o) => this.client.lobbyRpc.listTables(request, o), options, true);
  }

  /** Every page of `listTables`, one after the other (`pageSize`: tables a page, default 50). */
  async *tablePages(options: CallOpts & { filter?: LobbyFilterInit; pageSize?: number } = {}): AsyncGenerator<ListTablesResponse> {
    let pageToken = "";
    do {
      const page = await this.listTables({ ...options, pageToken });
      yield page;
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
  }

  /**
   * Every public table waiting for players (all the pages), and the lobby's
   * version from before the first page: `watchLobby({ afterVersion: version })`
   * then misses nothing (a change already in the list may come again).
   */
  async listAllTables(options: CallOpts & { filter?: LobbyFilterInit; pageSize?: number } = {}): Promise<{ tables: Table[]; version: bigint }> {
    const tables: Table[] = [];
    let version: bigint | undefined;
    for await (const page of this.tablePages(options)) {
      version ??= page.version;
      tables.push(...page.tables);
    }
    return { tables, version: version ?? 0n };
  }

  /**
   * The lobby's changes as they happen (WatchLobby), a batch at a time:
   * `tables` opened or changed (replace what you hold), `removedTableIds`
   * (started, closed, or out of the filter). A batch with `reset` means the
   * changes since the version asked for are no longer kept: list the lobby
   * again. Resumes after a dropped connection from the last batch's version.
   */
  watchLobby(options: LobbyWatchOptions = {}): Watch<WatchLobbyResponse> {
    const filter = options.filter !== undefined ? { filter: options.filter } : {};
    return this.watch(
      {
        open: (afterVersion, call) => this.stream(call, (o) => this.client.lobbyRpc.watchLobby({ ...filter, afterVersion }, o)),
        take: (res) => ({ item: res, version: res.version }),
        quietCallsGetThrough: true,
      },
      options,
    );
  }

  /**
   * `watchLobby` made of PollLobby long polls, for where streams stall
   * (browsers behind a buffering proxy, Unity WebGL): the same batches, each
   * poll from the last answer's version (an empty answer moves it on and
   * delivers nothing).
   */
  pollLobby(options: LobbyWatchOptions & LongPollOpts = {}): Watch<WatchLobbyResponse> {
    const filter = options.filter !== undefined ? { filter: options.filter } : {};
    const loop = pollLoop(
      (afterVersion, waitMs, call) => this.callWith(call, (o) => this.client.lobbyRpc.pollLobby({ ...filter, afterVersion, waitMs }, o)),
      (res) => res.changes?.version ?? 0n,
      options,
    );
    return this.watch(
      {
        open: loop,
        take: (res) => {
          const batch = res.changes;
          const news = batch !== undefined && (batch.tables.length > 0 || batch.removedTableIds.length > 0 || batch.reset);
          return { item: news ? batch : undefined, version: batch?.version ?? 0n };
        },
        quietCallsGetThrough: false,
      },
      options,
    );
  }

  // -- quick play ----------------------------------------------------------------

  /**
   * Asks for a game (QuickPlay): alone, or as a party with `partnerPlayerId`
   * (both must ask, naming each other, for the same rules; the first waits,
   * WAITING_FOR_PARTNER). `rated: true` queues for a rated game, apart from
   * unrated tickets (a party's players must both ask for it); if bots fill
   * the table it plays unrated (`placement.table.rated` false). Resolves with
   * the ticket; `awaitPlacement(ticket)` waits for its seat. A player holds
   * one ticket at a time: another ask before it is placed or cancelled is
   * refused ALREADY_EXISTS ALREADY_QUEUED (its metadata names the ticket;
   * `getTicket()` finds it too).
   *
   * The request carries `requestId` (at most 64 characters, else
   * INVALID_ARGUMENT BAD_REQUEST_ID; unset or empty: a new
   * `crypto.randomUUID()` for each call), so it is retried like the
   * idempotent calls, after a dropped connection or a deadline: a repeat of
   * the request that made the player's latest ticket answers with that
   * ticket, whatever its state now (placed: with its placement), instead of
   * opening a second. To resend an ask after this call has given up, pick
   * the id beforehand and pass it to both calls; a new game, a new id.
   */
  async quickPlay(
    request: { ruleset?: RulesetInit; partnerPlayerId?: string; rated?: boolean; requestId?: string } = {},
    opts?: CallOpts,
  ): Promise<Ticket> {
    const message = { ...request, requestId: request.requestId || crypto.randomUUID() };
    const res = await this.unary((o) => this.client.lobbyRpc.quickPlay(message, o), opts, true);
    return required(res.ticket, "QuickPlay");
  }

  /**
   * A ticket (empty id: the player's latest), as a long poll with
   * `afterVersion` and `waitMs`. Once placed it holds the placement — the
   * match, the seat and the same seat token — however often it is asked
   * (after a lost connection, a reload).
   */
  async getTicket(ticketId = "", options: PollCallOpts = {}): Promise<Ticket> {
    const request = { ticketId, afterVersion: options.afterVersion ?? 0n, waitMs: options.waitMs ?? 0 };
    const res = await this.unary((o) => this.client.lobbyRpc.getTicket(request, o), pollDeadline(options), true);
    return required(res.ticket, "GetTicket");
  }

  /** A ticket as it changes (WatchTicket; empty id: the latest), ending once placed or cancelled. */
  watchTicket(ticketId = "", options: WatchOptions = {}): Watch<Ticket> {
    let id = ticketId;
    return this.watch(
      {
        open: (_after, call) => this.stream(call, (o) => this.client.lobbyRpc.watchTicket({ ticketId: id }, o)),
        take: (res) => {
          id ||= res.ticket?.ticketId ?? ""; // the same ticket after a reconnection
          return taken(res.ticket, "WatchTicket");
        },
        final: (t) => TICKET_FINAL.has(t.state),
        quietCallsGetThrough: true,
      },
      options,
    );
  }

  /** `watchTicket` made of GetTicket long polls, for where streams stall. */
  pollTicket(ticketId = "", options: WatchOptions & LongPollOpts = {}): Watch<Ticket> {
    let id = ticketId;
    const loop = pollLoop(
      (afterVersion, waitMs, call) => this.callWith(call, (o) => this.client.lobbyRpc.getTicket({ ticketId: id, afterVersion, waitMs }, o)),
      (res) => res.ticket?.version ?? 0n,
      options,
    );
    return this.watch(
      {
        open: loop,
        take: (res) => {
          id ||= res.ticket?.ticketId ?? "";
          return taken(res.ticket, "GetTicket");
        },
        final: (t) => TICKET_FINAL.has(t.state),
        quietCallsGetThrough: false,
      },
      options,
    );
  }

  /** Withdraws a ticket not placed yet (a party's: for both players); empty id: the latest. Idempotent, so retried. */
  async cancelTicket(ticketId = "", opts?: CallOpts): Promise<Ticket> {
    const res = await this.unary((o) => this.client.lobbyRpc.cancelTicket({ ticketId }, o), opts, true);
    return required(res.ticket, "CancelTicket");
  }

  /**
   * Waits until a ticket (a Ticket, its id, or "" for the latest) is placed
   * and resolves with its placement: `matchId`, `seat`, `seatToken` (play it:
   * `client.seat(placement.seatToken).open()`) and the `table` as it started.
   * Follows it with GetTicket long polls, or WatchTicket with `stream: true`.
   * Rejects with FAILED_PRECONDITION TICKET_CANCELLED (this client's reason;
   * `metadata.cancel_reason`: "cancelled" or "partner_did_not_join") if the
   * ticket is cancelled instead.
   */
  async awaitPlacement(ticket: Ticket | string = "", options: PlacementOptions = {}): Promise<Placement> {
    let id = typeof ticket === "string" ? ticket : ticket.ticketId;
    if (typeof ticket !== "string" && placementOf(ticket) !== undefined) {
      return placementOf(ticket)!;
    }
    if (options.stream) {
      const watch = this.watchTicket(id, options.signal !== undefined ? { signal: options.signal } : {});
      try {
        for await (const t of watch) {
          const placement = placementOf(t);
          if (placement !== undefined) {
            return placement;
          }
        }
      } finally {
        watch.close();
      }
      throw new SpadesError(Code.Internal, "WatchTicket ended before the ticket was placed or cancelled");
    }
    const placed = await awaitLongPoll(
      (afterVersion, waitMs, opts) => this.getTicket(id, { afterVersion, waitMs, ...opts }),
      (t) => t.version,
      (t) => {
        id ||= t.ticketId;
        return placementOf(t) !== undefined;
      },
      options,
    );
    return placementOf(placed)!;
  }

  // -- rated play ----------------------------------------------------------------

  /**
   * One page of a rating pool's leaderboard (GetLeaderboard), best first:
   * the top, the page after or before `pageToken`, or the page that holds
   * `aroundPlayerId`. Each entry has its `rank` (from 1), the player's id,
   * name and `rating` (`conservative`, mu - 3 sigma, orders the board); the
   * page has `nextPageToken` and `previousPageToken` ("" at either end),
   * `totalPlayers`, and `minGames`, the rated games a player needs to
   * appear. Refusals: NOT_FOUND POOL_NOT_FOUND (no such pool),
   * INVALID_ARGUMENT BAD_POOL, BAD_PAGE_SIZE, BAD_PAGE_TOKEN (a token this
   * server did not give, or another pool's), TOKEN_AND_PLAYER (both a token
   * and a player), NOT_FOUND PLAYER_NOT_RATED (the player is not on the
   * board). Retried.
   */
  leaderboard(options: LeaderboardOptions = {}): Promise<GetLeaderboardResponse> {
    const request = {
      pool: options.pool ?? "",
      pageSize: options.pageSize ?? 0,
      pageToken: options.pageToken ?? "",
      aroundPlayerId: options.aroundPlayerId ?? "",
    };
    return this.unary((o) => this.client.lobbyRpc.getLeaderboard(request, o), options, true);
  }

  /**
   * The pages of a leaderboard one after the other: from the first page
   * `leaderboard(options)` answers (the top, a token's, or a player's), down
   * the board with `nextPageToken` or, with `direction: "previous"`, up
   * towards the top with `previousPageToken`, until the end. Ratings move
   * while a walk is under way; the tokens follow the players at the pages'
   * edges, so a player may appear twice or be missed, never a page skipped.
   */
  async *leaderboardPages(options: LeaderboardPagesOptions = {}): AsyncGenerator<GetLeaderboardResponse> {
    const { direction = "next", ...first } = options;
    // The pages after the first: by token only (a token and a player are refused together).
    const { aroundPlayerId: _, pageToken: __, ...rest } = first;
    let page = await this.leaderboard(first);
    for (;;) {
      yield page;
      const pageToken = direction === "next" ? page.nextPageToken : page.previousPageToken;
      if (pageToken === "" || page.entries.length === 0) {
        return;
      }
      page = await this.leaderboard({ ...rest, pageToken });
    }
  }

  /**
   * Every entry of a leaderboard, in the order `leaderboardPages` walks
   * (best first, or with `direction: "previous"` each page's entries in
   * reverse: worst first, towards the top), a page at a time: stop whenever
   * (`break`), and no further page is asked for.
   */
  async *leaderboardEntries(options: LeaderboardPagesOptions = {}): AsyncGenerator<LeaderboardEntry> {
    for await (const page of this.leaderboardPages(options)) {
      if (options.direction === "previous") {
        yield* [...page.entries].reverse();
      } else {
        yield* page.entries;
      }
    }
  }

  /**
   * A player's public profile (GetProfile; empty id, the default: the
   * caller's own): `ratings`, one `PlayerRating` per pool they played a rated
   * match in (`mu`, `sigma`, `conservative`, `games`, `wins`, `losses`,
   * `rank`: 0 while under the pool's minimum of games), `withHumans` and
   * `withBots` (`PlayerStats`: matches, wins, hands, contracts made and set,
   * mean bid and tricks, bags, nils and blind nils), `lastPlayedMs`. A
   * player who finished no lobby match: NOT_FOUND PLAYER_NOT_FOUND; an id
   * over 128 characters: INVALID_ARGUMENT BAD_PLAYER_ID. Retried.
   */
  async profile(playerId = "", opts?: CallOpts): Promise<PlayerProfile> {
    const res = await this.unary((o) => this.client.lobbyRpc.getProfile({ playerId }, o), opts, true);
    return required(res.profile, "GetProfile");
  }

  // -- plumbing ------------------------------------------------------------------

  private unary<T>(call: (options: CallOptions) => Promise<T>, opts: CallOpts | undefined, idempotent = false): Promise<T> {
    return this.client.unary(call, this.credential, opts, idempotent);
  }

  /** One call of a long-poll loop, with the credential (the Watch retries it). */
  private async callWith<T>(call: CallOptions, rpc: (options: CallOptions) => Promise<T>): Promise<T> {
    return rpc({ ...call, headers: await bearer(this.credential) });
  }

  /** One server-streaming call with the credential. */
  private stream<R>(call: CallOptions, rpc: (options: CallOptions) => AsyncIterable<R>): AsyncIterable<R> {
    const credential = this.credential;
    return (async function* () {
      yield* rpc({ ...call, headers: await bearer(credential) });
    })();
  }

  private watch<R, T>(source: WatchSource<R, T>, options: WatchOptions & { afterVersion?: bigint }): Watch<T> {
    return new Watch<T>(source, {
      ...options,
      retry: { ...this.client.retry, ...(options.retry ?? {}) },
    });
  }
}

/** A ticket's placement once PLACED; undefined while it waits; throws TICKET_CANCELLED once cancelled. */
function placementOf(ticket: Ticket): Placement | undefined {
  if (ticket.state === TicketState.CANCELLED) {
    throw new SpadesError(Code.FailedPrecondition, `ticket ${ticket.ticketId} was cancelled (${ticket.cancelReason})`, {
      reason: "TICKET_CANCELLED",
      metadata: { ticket_id: ticket.ticketId, cancel_reason: ticket.cancelReason },
    });
  }
  return ticket.state === TicketState.PLACED ? ticket.placement : undefined;
}

function tableRef(table: TableRef): { tableId?: string; inviteCode?: string } {
  if (typeof table === "string") {
    return { tableId: table };
  }
  return "tableId" in table ? { tableId: table.tableId } : { inviteCode: table.inviteCode };
}

/** A long poll's deadline: the wait plus the margin, unless the caller gave one. */
function pollDeadline(options: PollCallOpts): CallOpts {
  const waitMs = options.waitMs ?? 0;
  const { marginMs } = pollTiming({ waitMs, ...(options.deadlineMarginMs !== undefined ? { deadlineMarginMs: options.deadlineMarginMs } : {}) });
  return {
    ...(options.signal !== undefined ? { signal: options.signal } : {}),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : waitMs > 0 ? { timeoutMs: waitMs + marginMs } : {}),
  };
}

function required<T>(value: T | undefined, call: string): T {
  if (value === undefined) {
    throw new SpadesError(Code.Internal, `${call} answered without its message`);
  }
  return value;
}

function taken<T extends { version: bigint }>(value: T | undefined, call: string): { item: T; version: bigint } {
  const item = required(value, call);
  return { item, version: item.version };
}
