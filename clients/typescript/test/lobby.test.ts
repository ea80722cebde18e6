// The lobby (spades.v1.LobbyService) through this client, against a real
// server: serve.py, which trusts the player credentials it signs (POST
// {control}/credential), deals quick play's bots after 1 s and every table from
// seed 11; and the stack `make run` starts (Envoy, gRPC-Web as a browser calls,
// guest credentials from the web server's POST /api/guest).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { createGrpcWebTransport } from "@connectrpc/connect-node";
import {
  Code,
  SpadesClient,
  SpadesError,
  TableKind,
  TableSeatState,
  TableState,
  TableVisibility,
  TicketState,
  connect,
  type MatchEvent,
  type PlayerClient,
  type RulesetInit,
  type SeatClient,
  type Table,
  type Ticket,
  type Watch,
  type WatchLobbyResponse,
} from "../src/node.js";
import { FAST, PKG, WAIT_MS, startServer, within, type Server } from "./harness.js";
import { playOut } from "./play.js";
import { startStack, type Stack } from "./stack.js";

interface Player {
  readonly id: string;
  readonly lobby: PlayerClient;
}

/** A quick play queue of its own for each test (tickets of equal rules are matched together). */
function rules(n: number): RulesetInit {
  return { preset: "classic", targetScore: 500 + n };
}

/** A short match: the first hand that scores ends it. */
const QUICK: RulesetInit = { preset: "classic", targetScore: 1, noMercyScore: true };

async function refusal(promise: Promise<unknown>): Promise<SpadesError> {
  try {
    await within(WAIT_MS, "a refusal", promise);
  } catch (e) {
    assert.ok(e instanceof SpadesError, `a SpadesError, not ${String(e)}`);
    return e;
  }
  assert.fail("the server accepted what it should have refused");
}

/** Reads a watch in the background; `until` waits for an item that satisfies it. */
class Reader<T> {
  readonly items: T[] = [];
  error: unknown;
  readonly done: Promise<void>;
  private wake: (() => void) | undefined;

  constructor(readonly watch: Watch<T>) {
    this.done = (async () => {
      try {
        for await (const item of watch) {
          this.items.push(item);
          this.wake?.();
        }
      } catch (e) {
        this.error = e;
      } finally {
        this.wake?.();
      }
    })();
  }

  async until(what: string, found: (item: T) => boolean): Promise<T> {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const item = this.items.find(found);
      if (item !== undefined) {
        return item;
      }
      if (this.error !== undefined) {
        throw new Error(`the watch ended before ${what}`, { cause: this.error });
      }
      if (Date.now() > deadline) {
        throw new Error(`timed out waiting for ${what}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 200);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }
}

/** The first event of a seat's Play session: the seat token plays like one from CreateMatch. */
async function firstEvent(seat: SeatClient): Promise<MatchEvent> {
  const session = seat.open({ retry: FAST });
  try {
    for await (const event of session) {
      return event;
    }
    throw new Error("the session ended without an event");
  } finally {
    await session.close();
  }
}

function seatStates(table: Table | undefined): TableSeatState[] {
  return (table?.seats ?? []).map((s) => s.state);
}

describe("the lobby against a real server (serve.py)", { timeout: 240_000 }, () => {
  let server: Server;
  let client: SpadesClient;
  before(async () => {
    server = await startServer();
    client = connect(server.address, { retry: FAST });
  });
  after(async () => {
    await server?.stop();
  });

  async function player(prefix: string): Promise<Player> {
    const id = `${prefix}-${randomUUID().slice(0, 8)}`;
    return { id, lobby: client.player(await server.credential(id)) };
  }

  it("opens, joins, leaves and starts a table; its seat tokens play once it has started", async () => {
    const [alice, bob, carol] = await Promise.all([player("alice"), player("bob"), player("carol")]);
    const opened = await alice.lobby.openTable({ botSeats: [3] });
    const table = opened.table!;
    assert.equal(table.state, TableState.WAITING);
    assert.equal(table.kind, TableKind.OPENED);
    assert.equal(table.hostPlayerId, alice.id);
    assert.deepEqual(seatStates(table), [TableSeatState.PLAYER, TableSeatState.OPEN, TableSeatState.OPEN, TableSeatState.BOT]);
    assert.equal(opened.seat, 0);
    const early = await refusal(client.seat(opened.seatToken).getView());
    assert.equal(early.code, Code.FailedPrecondition);
    assert.equal(early.reason, "TABLE_NOT_STARTED");

    const joined = await bob.lobby.joinTable({ tableId: table.tableId, seat: 2 });
    assert.equal(joined.seat, 2);
    const again = await bob.lobby.joinTable({ tableId: table.tableId });
    assert.deepEqual([again.seat, again.seatToken], [2, joined.seatToken], "joining again is idempotent");
    const taken = await refusal(carol.lobby.joinTable({ tableId: table.tableId, seat: 2 }));
    assert.deepEqual([taken.codeName, taken.reason], ["FAILED_PRECONDITION", "SEAT_TAKEN"]);

    const left = await bob.lobby.leaveTable(table.tableId);
    assert.equal(left.seats[2]!.state, TableSeatState.OPEN);
    const notSeated = await refusal(bob.lobby.leaveTable(table.tableId));
    assert.equal(notSeated.reason, "NOT_SEATED");
    const carols = await carol.lobby.joinTable({ tableId: table.tableId });
    assert.equal(carols.seat, 1, "the lowest open seat");
    const notHost = await refusal(carol.lobby.startTable(table.tableId));
    assert.deepEqual([notHost.code, notHost.reason], [Code.PermissionDenied, "NOT_HOST"]);

    const started = await alice.lobby.startTable(table.tableId);
    assert.equal(started.state, TableState.STARTED);
    assert.equal(started.matchId, table.tableId);
    assert.deepEqual(seatStates(started), [TableSeatState.PLAYER, TableSeatState.PLAYER, TableSeatState.BOT, TableSeatState.BOT]);
    const late = await refusal(bob.lobby.joinTable({ tableId: table.tableId }));
    assert.equal(late.reason, "TABLE_STARTED");

    // The token from OpenTable plays the seat: a Play session, as with CreateMatch's.
    const seat = client.seat(opened.seatToken);
    assert.equal(seat.matchId, table.tableId);
    assert.equal((await seat.getView()).seat, 0);
    assert.equal((await firstEvent(seat)).kind.case, "handStarted");
    assert.equal((await client.seat(carols.seatToken).getView()).seat, 1);
    // Bob's token from before he left plays nothing.
    const stale = await refusal(client.seat(joined.seatToken).getView());
    assert.equal(stale.code, Code.Unauthenticated);
  });

  it("follows a table with WatchTable, GetTable long polls and awaitStart", async () => {
    const [host, guest] = await Promise.all([player("host"), player("guest")]);
    const opened = await host.lobby.openTable({ botSeats: [1, 2] });
    const tableId = opened.table!.tableId;
    const watched = new Reader(host.lobby.watchTable(tableId, { retry: FAST }));
    const polled = new Reader(host.lobby.pollTable(tableId, { waitMs: 5_000, retry: FAST }));
    await watched.until("the table now", (t) => t.state === TableState.WAITING);
    await polled.until("the table now", (t) => t.state === TableState.WAITING);
    const longPoll = host.lobby.getTable(tableId, { afterVersion: opened.table!.version, waitMs: 5_000 });
    const starting = host.lobby.awaitStart(tableId, { waitMs: 5_000 });
    await guest.lobby.joinTable({ tableId });
    const changed = await within(WAIT_MS, "the long poll's answer", longPoll);
    assert.ok(changed.version > opened.table!.version);
    const started = await within(WAIT_MS, "awaitStart", starting);
    assert.equal(started.state, TableState.STARTED);
    await within(WAIT_MS, "WatchTable's end", watched.done);
    await within(WAIT_MS, "the long polls' end", polled.done);
    for (const reader of [watched, polled]) {
      assert.equal(reader.error, undefined);
      assert.equal(reader.items.at(-1)!.state, TableState.STARTED, "it ends once started");
      const versions = reader.items.map((t) => t.version);
      assert.deepEqual(versions, [...new Set(versions)].sort((a, b) => (a < b ? -1 : 1)), "each version once, in order");
      assert.equal(await reader.watch.ended, undefined);
    }

    // A table that closes: awaitStart rejects with TABLE_CLOSED and why.
    const lone = await player("lone");
    const closing = await lone.lobby.openTable();
    const waiting = lone.lobby.awaitStart(closing.table!.tableId, { waitMs: 5_000 });
    await lone.lobby.leaveTable(closing.table!.tableId);
    const closed = await refusal(waiting);
    assert.equal(closed.reason, "TABLE_CLOSED");
    assert.equal(closed.metadata["close_reason"], "empty");
  });

  it("joins an invite-only table by its code; a wrong code is refused INVITE_NOT_FOUND", async () => {
    const [host, friend, stranger] = await Promise.all([player("host"), player("friend"), player("stranger")]);
    const opened = await host.lobby.openTable({ visibility: TableVisibility.INVITE_ONLY, botSeats: [1, 3] });
    const table = opened.table!;
    assert.equal(table.visibility, TableVisibility.INVITE_ONLY);
    const code = table.inviteCode;
    assert.match(code, /^[A-Z0-9]{5}-[A-Z0-9]{5}$/);
    const wrong = await refusal(stranger.lobby.joinTable({ inviteCode: "AAAAA-AAAAA" }));
    assert.deepEqual([wrong.code, wrong.reason], [Code.NotFound, "INVITE_NOT_FOUND"]);
    const byId = await refusal(stranger.lobby.getTable(table.tableId));
    assert.deepEqual([byId.code, byId.reason], [Code.PermissionDenied, "INVITE_REQUIRED"]);
    const seen = await friend.lobby.getTable({ inviteCode: code });
    assert.equal(seen.tableId, table.tableId);
    // Read aloud: lower case, a space for the dash.
    const joined = await friend.lobby.joinTable({ inviteCode: code.toLowerCase().replace("-", " "), seat: 2 });
    assert.equal(joined.seat, 2);
    assert.equal(joined.table!.state, TableState.STARTED);
    const started = await host.lobby.awaitStart(table.tableId);
    assert.deepEqual(seatStates(started), [TableSeatState.PLAYER, TableSeatState.BOT, TableSeatState.PLAYER, TableSeatState.BOT]);
    assert.equal((await client.seat(joined.seatToken).getView()).seat, 2);
  });

  it("lists the lobby a page at a time and follows its changes (WatchLobby and PollLobby)", async () => {
    const filter = { ruleset: { preset: "classic", targetScore: 301 } };
    const hosts = await Promise.all([player("h1"), player("h2"), player("h3")]);
    const ids: string[] = [];
    for (const h of hosts) {
      ids.push((await h.lobby.openTable({ ruleset: filter.ruleset })).table!.tableId);
    }
    const viewer = await player("viewer");
    const pages = [];
    for await (const page of viewer.lobby.tablePages({ filter, pageSize: 2 })) {
      pages.push(page);
    }
    assert.deepEqual(pages.map((p) => p.tables.length), [2, 1]);
    const listed = await viewer.lobby.listAllTables({ filter, pageSize: 2 });
    assert.deepEqual(listed.tables.map((t) => t.tableId), ids, "oldest first, each once");
    assert.ok(listed.version > 0n);

    const streamed = new Reader(viewer.lobby.watchLobby({ filter, afterVersion: listed.version, retry: FAST }));
    const polled = new Reader(viewer.lobby.pollLobby({ filter, afterVersion: listed.version, waitMs: 5_000, retry: FAST }));
    const newcomer = await player("h4");
    const added = (await newcomer.lobby.openTable({ ruleset: filter.ruleset })).table!.tableId;
    await (await player("other")).lobby.openTable(); // classic: outside the filter
    await hosts[0]!.lobby.startTable(ids[0]!); // started: gone from the lobby
    for (const reader of [streamed, polled]) {
      await reader.until("the new table", (b) => b.tables.some((t) => t.tableId === added));
      await reader.until("the started table's removal", (b) => b.removedTableIds.includes(ids[0]!));
      const batches: WatchLobbyResponse[] = reader.items;
      assert.ok(batches.every((b) => b.tables.every((t) => ids.includes(t.tableId) || t.tableId === added)), "only the filter's tables");
      const versions = batches.map((b) => b.version);
      assert.ok(versions.every((v, i) => v > (i === 0 ? listed.version : versions[i - 1]!)), "versions increase");
      assert.equal(reader.watch.version, versions.at(-1));
    }

    // A dropped connection: the stream resumes from its last version and misses nothing.
    await server.cut();
    const afterCut = (await hosts[1]!.lobby.startTable(ids[1]!)).tableId;
    await streamed.until("a change made after the cut", (b) => b.removedTableIds.includes(afterCut));
    await polled.until("a change made after the cut", (b) => b.removedTableIds.includes(afterCut));
    assert.ok(streamed.watch.reconnects >= 1, "the stream reconnected");
    streamed.watch.close();
    polled.watch.close();
    await Promise.all([streamed.done, polled.done]);
    assert.equal(streamed.error, undefined);
    assert.equal(polled.error, undefined);
  });

  it("quick play alone: bots after the wait, the same seat token when asked again, the seat plays", async () => {
    const alone = await player("alone");
    const ticket = await alone.lobby.quickPlay({ ruleset: rules(1) });
    assert.equal(ticket.state, TicketState.SEARCHING);
    assert.deepEqual(ticket.playerIds, [alone.id]);
    const started = Date.now();
    const placement = await within(WAIT_MS, "the placement", alone.lobby.awaitPlacement(ticket, { waitMs: 5_000 }));
    assert.ok(Date.now() - started < 5_000, "bots after serve.py's 1 s");
    assert.equal(placement.table!.kind, TableKind.QUICK_PLAY);
    assert.equal(seatStates(placement.table).filter((s) => s === TableSeatState.BOT).length, 3);
    assert.equal(placement.table!.seats[placement.seat]!.playerId, alone.id);
    // After a lost connection: the latest ticket, with the same seat token.
    const again = await alone.lobby.getTicket();
    assert.equal(again.ticketId, ticket.ticketId);
    assert.equal(again.placement!.seatToken, placement.seatToken);
    assert.equal((await alone.lobby.awaitPlacement()).seatToken, placement.seatToken);
    const placed = await refusal(alone.lobby.cancelTicket(ticket.ticketId));
    assert.deepEqual([placed.codeName, placed.reason], ["FAILED_PRECONDITION", "TICKET_PLACED"]);
    // The placement's token plays exactly like one from CreateMatch.
    const seat = client.seat(placement.seatToken);
    assert.equal(seat.matchId, placement.matchId);
    assert.equal((await seat.getView()).seat, placement.seat);
    assert.equal((await firstEvent(seat)).kind.case, "handStarted");
  });

  it("quick play resent with its request id answers with the ticket it made, even placed; an id over 64 characters is refused", async () => {
    const alone = await player("resend");
    const requestId = `resend-${randomUUID()}`;
    const ticket = await alone.lobby.quickPlay({ ruleset: rules(4), requestId });
    assert.equal(ticket.state, TicketState.SEARCHING);
    // A repeat while it searches: the same ticket, not ALREADY_QUEUED.
    assert.equal((await alone.lobby.quickPlay({ ruleset: rules(4), requestId })).ticketId, ticket.ticketId);
    const placement = await within(WAIT_MS, "the placement", alone.lobby.awaitPlacement(ticket, { waitMs: 5_000 }));
    // A QuickPlay resent after its answer was lost: the same ticket, placed, with the same seat token.
    const resent = await alone.lobby.quickPlay({ ruleset: rules(4), requestId });
    assert.equal(resent.ticketId, ticket.ticketId);
    assert.equal(resent.state, TicketState.PLACED);
    assert.equal(resent.placement!.seatToken, placement.seatToken);
    assert.equal(resent.placement!.matchId, placement.matchId);
    const long = await refusal(alone.lobby.quickPlay({ ruleset: rules(4), requestId: "x".repeat(65) }));
    assert.deepEqual([long.code, long.reason], [Code.InvalidArgument, "BAD_REQUEST_ID"]);
    assert.equal((await alone.lobby.getTicket()).ticketId, ticket.ticketId, "a refused ask opens no ticket");
  });

  it("a party of two credentials sits as partners", async () => {
    const [ann, ben] = await Promise.all([player("ann"), player("ben")]);
    const first = await ann.lobby.quickPlay({ ruleset: rules(2), partnerPlayerId: ben.id });
    assert.equal(first.state, TicketState.WAITING_FOR_PARTNER);
    const second = await ben.lobby.quickPlay({ ruleset: rules(2), partnerPlayerId: ann.id });
    assert.equal(second.ticketId, first.ticketId);
    assert.equal(second.state, TicketState.SEARCHING);
    assert.deepEqual(second.playerIds, [ann.id, ben.id]);
    const [a, b] = await within(
      WAIT_MS,
      "both placements",
      Promise.all([ann.lobby.awaitPlacement(first, { waitMs: 5_000 }), ben.lobby.awaitPlacement(second.ticketId, { stream: true })]),
    );
    assert.equal(a.matchId, b.matchId);
    assert.deepEqual(new Set([a.seat, b.seat]), new Set([0, 2]), "partners sit opposite");
    assert.notEqual(a.seatToken, b.seatToken);
    assert.equal(a.table!.seats[a.seat]!.playerId, ann.id, "who asked first sits first");
    assert.deepEqual(seatStates(a.table), [TableSeatState.PLAYER, TableSeatState.BOT, TableSeatState.PLAYER, TableSeatState.BOT]);
    const refused = await refusal(ann.lobby.quickPlay({ partnerPlayerId: ann.id }));
    assert.deepEqual([refused.code, refused.reason], [Code.InvalidArgument, "BAD_PARTNER"]);
  });

  it("cancels a ticket: WatchTicket ends, awaitPlacement rejects TICKET_CANCELLED, cancelling again changes nothing", async () => {
    const p = await player("cancel");
    const ticket = await p.lobby.quickPlay({ ruleset: rules(3) });
    const twice = await refusal(p.lobby.quickPlay({ ruleset: rules(3) }));
    assert.deepEqual([twice.code, twice.reason, twice.metadata["ticket_id"]], [Code.AlreadyExists, "ALREADY_QUEUED", ticket.ticketId]);
    const watched = new Reader<Ticket>(p.lobby.watchTicket(ticket.ticketId, { retry: FAST }));
    await watched.until("the ticket now", (t) => t.state === TicketState.SEARCHING);
    const waiting = refusal(p.lobby.awaitPlacement(ticket.ticketId, { waitMs: 5_000 }));
    // The caller's AbortSignal ends a wait (and a watch) with CANCELLED.
    const abort = new AbortController();
    const abandoned = refusal(p.lobby.awaitPlacement(ticket, { waitMs: 5_000, signal: abort.signal }));
    const dropped = p.lobby.pollTicket(ticket.ticketId, { waitMs: 5_000, signal: abort.signal });
    abort.abort();
    assert.equal((await abandoned).code, Code.Canceled);
    assert.equal((await within(WAIT_MS, "the aborted watch's end", dropped.ended))?.code, Code.Canceled);
    const cancelled = await p.lobby.cancelTicket();
    assert.equal(cancelled.ticketId, ticket.ticketId);
    assert.equal(cancelled.state, TicketState.CANCELLED);
    await within(WAIT_MS, "WatchTicket's end", watched.done);
    assert.deepEqual(watched.items.map((t) => t.state), [TicketState.SEARCHING, TicketState.CANCELLED]);
    const err = await waiting;
    assert.equal(err.reason, "TICKET_CANCELLED");
    assert.equal(err.metadata["cancel_reason"], "cancelled");
    assert.equal((await p.lobby.cancelTicket(ticket.ticketId)).state, TicketState.CANCELLED);
    const unknown = await refusal((await player("stranger")).lobby.getTicket(ticket.ticketId));
    assert.deepEqual([unknown.code, unknown.reason], [Code.NotFound, "TICKET_NOT_FOUND"]);
  });

  it("a rematch after a short match: the same seats, a new match once both humans accept", async () => {
    const [host, guest] = await Promise.all([player("host"), player("guest")]);
    const opened = await host.lobby.openTable({ ruleset: QUICK, botSeats: [1, 3] });
    const joined = await guest.lobby.joinTable({ tableId: opened.table!.tableId });
    assert.equal(joined.table!.state, TableState.STARTED);
    const seats = [client.seat(opened.seatToken), client.seat(joined.seatToken)];
    const early = await refusal(seats[0]!.rematch());
    assert.equal(early.reason, "MATCH_NOT_OVER");
    await playOut(seats);

    const first = await seats[0]!.rematch();
    assert.equal(first.table!.state, TableState.WAITING);
    assert.equal(first.table!.kind, TableKind.REMATCH);
    assert.equal(first.table!.rematchOf, seats[0]!.matchId);
    assert.deepEqual(first.table!.seats.map((s) => s.accepted), [true, false, false, false]);
    const hostWaits = seats[0]!.awaitRematch({ waitMs: 5_000 });
    const second = await seats[1]!.awaitRematch({ waitMs: 5_000 });
    const again = await within(WAIT_MS, "the host's rematch", hostWaits);
    for (const [res, seat] of [[again, 0], [second, 2]] as const) {
      assert.equal(res.table!.state, TableState.STARTED);
      assert.equal(res.seat, seat);
      const next = client.seat(res.seatToken);
      assert.equal(next.matchId, res.table!.matchId);
      assert.notEqual(next.matchId, seats[0]!.matchId);
      assert.equal((await next.getView()).seat, seat);
    }

    // Declined: the rematch of the new match closes for everyone.
    const nextSeats = [client.seat(again.seatToken), client.seat(second.seatToken)];
    await playOut(nextSeats);
    await nextSeats[1]!.rematch();
    const declined = await nextSeats[0]!.rematch({ decline: true });
    assert.equal(declined.table!.state, TableState.CLOSED);
    assert.equal(declined.table!.closeReason, "declined");
    const closed = await refusal(nextSeats[1]!.awaitRematch({ waitMs: 1_000 }));
    assert.deepEqual([closed.reason, closed.metadata["close_reason"]], ["TABLE_CLOSED", "declined"]);
  });

  it("refuses credentials with UNAUTHENTICATED and a reason, on unary calls and on streams", async () => {
    const good = await server.credential("someone");
    const [head, body, signature] = good.split(".") as [string, string, string];
    const flipped = signature.slice(0, -2) + (signature.endsWith("AA") ? "BB" : "AA");
    const none = Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url");
    const cases: [string, string][] = [
      ["", "CREDENTIAL_REQUIRED"],
      ["not.a.jwt", "MALFORMED_CREDENTIAL"],
      [`${head}.${body}.${flipped}`, "BAD_SIGNATURE"],
      [`${none}.${body}.`, "ALGORITHM_NOT_ALLOWED"],
    ];
    for (const [credential, reason] of cases) {
      const err = await refusal(client.player(credential).listTables());
      assert.equal(err.code, Code.Unauthenticated, reason);
      assert.equal(err.codeName, "UNAUTHENTICATED");
      assert.equal(err.reason, reason);
    }
    // On a stream: the refusal ends the watch, without a reconnection.
    const reconnects: unknown[] = [];
    const watch = client.player("not.a.jwt").watchLobby({ retry: FAST, onReconnect: (r) => reconnects.push(r) });
    const ended = await within(WAIT_MS, "the watch's end", watch.ended);
    assert.ok(ended instanceof SpadesError);
    assert.deepEqual([ended.code, ended.reason], [Code.Unauthenticated, "MALFORMED_CREDENTIAL"]);
    assert.equal(reconnects.length, 0);
    await assert.rejects(async () => {
      for await (const _ of watch) {
        // nothing comes
      }
    }, SpadesError);
    // A credential function is asked before every call (a renewed JWT).
    let asked = 0;
    const renewing = client.player(async () => {
      asked++;
      return server.credential("renewing");
    });
    await renewing.listTables();
    await renewing.listTables();
    assert.equal(asked, 2);
  });

  it("runs the README's quick play example as it is printed there", async () => {
    const readme = readFileSync(join(PKG, "README.md"), "utf8");
    const example = readFileSync(join(PKG, "examples", "quick-play.ts"), "utf8");
    assert.ok(readme.includes("```ts\n" + example + "```\n"), "README.md shows examples/quick-play.ts verbatim");
    const { stdout } = await promisify(execFile)(process.execPath, [join(PKG, "dist", "examples", "quick-play.js")], {
      env: { ...process.env, SPADES_ADDRESS: server.address, SPADES_PLAYER_CREDENTIAL: await server.credential("example", "Example") },
      timeout: 60_000,
    });
    assert.match(stdout, /^ticket \w+: looking for a table$/m);
    assert.match(stdout, /^seat 0 of match \w+: Example, \w+/m);
    assert.match(stdout, /^hand scored: -?\d+ to -?\d+$/m);
  });
});

describe("the lobby through Envoy with gRPC-Web, as a browser calls", { timeout: 240_000 }, () => {
  let stack: Stack;
  let client: SpadesClient;
  before(async () => {
    stack = await startStack({ serverArgs: ["--quickplay-bot-wait-seconds", "1", "--quickplay-turn-timer-ms", "0"] });
    const transport = createGrpcWebTransport({ baseUrl: stack.url, httpVersion: "1.1", useBinaryFormat: true });
    client = new SpadesClient({ transport, retry: FAST });
  });
  after(async () => {
    const code = await stack?.stop();
    assert.equal(code, 0, stack?.output.join("\n"));
  });

  /** A guest credential from the web table's server (POST /api/guest, through Envoy), as the page gets one. */
  async function guest(name: string): Promise<Player> {
    const res = await fetch(`${stack.url}/api/guest`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name }),
      signal: AbortSignal.timeout(10_000),
    });
    assert.equal(res.status, 200, await res.clone().text());
    const body = (await res.json()) as { credential: string; playerId: string };
    return { id: body.playerId, lobby: client.player(body.credential) };
  }

  it("tables, the lobby's stream and long poll, and a seat played with its token", async () => {
    const [host, visitor, viewer] = await Promise.all([guest("Host"), guest("Visitor"), guest("Viewer")]);
    const filter = { ruleset: { preset: "classic", targetScore: 333 } };
    const listed = await viewer.lobby.listAllTables({ filter });
    const streamed = new Reader(viewer.lobby.watchLobby({ filter, afterVersion: listed.version, retry: FAST }));
    const polled = new Reader(viewer.lobby.pollLobby({ filter, afterVersion: listed.version, waitMs: 5_000, retry: FAST }));
    const opened = await host.lobby.openTable({ ruleset: filter.ruleset, botSeats: [1, 2] });
    const tableId = opened.table!.tableId;
    const watched = new Reader(host.lobby.watchTable(tableId, { retry: FAST }));
    await watched.until("the table now", (t) => t.state === TableState.WAITING);
    for (const reader of [streamed, polled]) {
      await reader.until("the new table", (b) => b.tables.some((t) => t.tableId === tableId));
    }
    const joined = await visitor.lobby.joinTable({ tableId });
    assert.equal(joined.table!.state, TableState.STARTED);
    await within(WAIT_MS, "WatchTable's end", watched.done);
    assert.equal(watched.items.at(-1)!.state, TableState.STARTED);
    for (const reader of [streamed, polled]) {
      await reader.until("the table's removal", (b) => b.removedTableIds.includes(tableId));
      reader.watch.close();
    }
    // A browser's seat: submitAction and the seat's view, with the token JoinTable gave.
    const seat = client.seat(joined.seatToken);
    const view = await seat.getView();
    assert.equal(view.seat, 3);
    const err = await refusal(client.player("not.a.jwt").listTables());
    assert.deepEqual([err.code, err.reason], [Code.Unauthenticated, "MALFORMED_CREDENTIAL"]);
  });

  it("quick play: GetTicket long polls until placed, then the seat plays", async () => {
    const me = await guest("Me");
    const ticket = await me.lobby.quickPlay({ ruleset: rules(9) });
    const placement = await within(WAIT_MS, "the placement", me.lobby.awaitPlacement(ticket, { waitMs: 5_000 }));
    assert.equal(placement.seat, 0);
    const seat = client.seat(placement.seatToken);
    const view = await seat.getView();
    assert.equal(view.seat, 0);
    const action = view.legalActions[0];
    if (action !== undefined) {
      const res = await seat.submitAction(action);
      assert.ok(res.events.length > 0 && res.lastSeq >= res.events[0]!.seq);
    }
  });
});
