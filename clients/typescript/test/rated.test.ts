// Rated play through this client, against a real server (serve.py, with
// --rating-min-games 1 so that one rated match puts its players on the
// leaderboard): rated tables opened and joined by four players and played
// out, then the players' profiles and the pool's leaderboard, its pages,
// tokens and the page around a player; rated tables and tickets that bots
// make unrated; and the refusals of GetLeaderboard and GetProfile.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import {
  Code,
  SpadesError,
  TableSeatState,
  TableState,
  TicketState,
  codeName,
  connect,
  type Action,
  type GetLeaderboardResponse,
  type LeaderboardEntry,
  type PlayerClient,
  type PlayerProfile,
  type RulesetInit,
  type SeatClient,
  type SpadesClient,
} from "../src/node.js";
import { FAST, PKG, WAIT_MS, startServer, within, type Server } from "./harness.js";
import { playOut } from "./play.js";

interface Player {
  readonly id: string;
  readonly name: string;
  readonly lobby: PlayerClient;
}

/** A short match: the first hand that scores ends it. */
const QUICK: RulesetInit = { preset: "classic", targetScore: 1, noMercyScore: true };

/** How long a match's result may take to be recorded after it ended. */
const RECORDED_MS = 20_000;

async function refusal(promise: Promise<unknown>): Promise<SpadesError> {
  try {
    await within(WAIT_MS, "a refusal", promise);
  } catch (e) {
    assert.ok(e instanceof SpadesError, `a SpadesError, not ${String(e)}`);
    return e;
  }
  assert.fail("the server accepted what it should have refused");
}

/**
 * The humans' policy that ends a short match quickly: look at the cards
 * (never blind nil), bid 3, else the first legal action.
 */
function choose(legal: Action[]): Action | undefined {
  return (
    legal.find((a) => a.kind.case === "look") ??
    legal.find((a) => a.kind.case === "bid" && a.kind.value.tricks === 3) ??
    legal[0]
  );
}

/** A profile once the server has recorded the player's match (PLAYER_NOT_FOUND until then). */
async function recordedProfile(viewer: PlayerClient, playerId: string): Promise<PlayerProfile> {
  const deadline = Date.now() + RECORDED_MS;
  for (;;) {
    try {
      const profile = await viewer.profile(playerId);
      if (profile.ratings.some((r) => r.pool === "classic" && r.games >= 1)) {
        return profile;
      }
    } catch (e) {
      if (!(e instanceof SpadesError) || e.reason !== "PLAYER_NOT_FOUND") {
        throw e;
      }
    }
    assert.ok(Date.now() < deadline, `${playerId}'s match was not recorded in ${RECORDED_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function ids(entries: LeaderboardEntry[]): string[] {
  return entries.map((e) => e.playerId);
}

describe("rated play against a real server (serve.py --rating-min-games 1)", { timeout: 300_000 }, () => {
  let server: Server;
  let client: SpadesClient;
  before(async () => {
    server = await startServer("--", "--rating-min-games", "1");
    client = connect(server.address, { retry: FAST });
  });
  after(async () => {
    await server?.stop();
  });

  async function player(prefix: string): Promise<Player> {
    const id = `${prefix}-${randomUUID().slice(0, 8)}`;
    const name = `${prefix[0]!.toUpperCase()}${prefix.slice(1)}`;
    return { id, name, lobby: client.player(await server.credential(id, name)) };
  }

  /** Four players at a rated table (OpenTable rated, then JoinTable at seats 1, 2, 3), played out. */
  async function ratedMatch(prefix: string): Promise<Player[]> {
    const players = await Promise.all([0, 1, 2, 3].map((i) => player(`${prefix}${i}`)));
    const [host, ...guests] = players as [Player, Player, Player, Player];
    const opened = await host.lobby.openTable({ ruleset: QUICK, rated: true });
    const table = opened.table!;
    assert.equal(table.rated, true);
    assert.equal(table.ratingPool, "classic");
    assert.equal(table.state, TableState.WAITING);
    const tokens = [opened.seatToken];
    for (const [i, guest] of guests.entries()) {
      const joined = await guest.lobby.joinTable({ tableId: table.tableId, seat: i + 1 });
      assert.equal(joined.seat, i + 1);
      tokens.push(joined.seatToken);
    }
    const started = await host.lobby.awaitStart(table.tableId, { waitMs: 5_000 });
    assert.equal(started.state, TableState.STARTED);
    assert.equal(started.rated, true, "four humans: still rated");
    assert.equal(started.ratingPool, "classic");
    assert.deepEqual(
      started.seats.map((s) => [s.state, s.playerId]),
      players.map((p) => [TableSeatState.PLAYER, p.id]),
    );
    await playOut(tokens.map((t) => client.seat(t)), choose, 90_000);
    return players;
  }

  let rated: Player[] = [];
  let board: GetLeaderboardResponse;

  it("four players play a rated table; each one's profile has a classic rating of one game", async () => {
    // Two rated tables at once: eight players on the board.
    const [first, second] = await Promise.all([ratedMatch("ann"), ratedMatch("bob")]);
    rated = [...first!, ...second!];
    const viewer = await player("viewer");
    for (const p of rated) {
      const profile = await recordedProfile(viewer.lobby, p.id);
      assert.equal(profile.playerId, p.id);
      assert.equal(profile.name, p.name);
      assert.equal(profile.ratings.length, 1);
      const rating = profile.ratings[0]!;
      assert.equal(rating.pool, "classic");
      assert.equal(rating.games, 1);
      assert.equal(rating.wins + rating.losses, 1);
      assert.ok(rating.sigma > 0 && rating.sigma < 25 / 3, "one game: less uncertain than at the start");
      assert.ok(Math.abs(rating.conservative - (rating.mu - 3 * rating.sigma)) < 1e-6);
      assert.ok(rating.rank >= 1 && rating.rank <= rated.length, "on the board after one game (min games 1)");
      const humans = profile.withHumans!;
      assert.equal(humans.matches, 1);
      assert.equal(humans.wins, rating.wins);
      assert.ok(humans.hands >= 1);
      assert.ok(humans.contracts >= 1 && humans.contractsMade + humans.sets === humans.contracts);
      assert.equal(humans.meanBid, 3, "every bid was 3");
      assert.equal(humans.blindNilsBid, 0);
      assert.equal(profile.withBots!.matches, 0);
      assert.ok(profile.lastPlayedMs > 0n && profile.lastPlayedMs <= BigInt(Date.now()));
    }
    // Partners share a result: seats 0 and 2, 1 and 3.
    for (const table of [rated.slice(0, 4), rated.slice(4)]) {
      const wins = await Promise.all(table.map(async (p) => (await viewer.lobby.profile(p.id)).ratings[0]!.wins));
      assert.equal(wins[0], wins[2]);
      assert.equal(wins[1], wins[3]);
      assert.notEqual(wins[0], wins[1], "one side won");
    }
    // No id: the caller's own.
    const own = await rated[0]!.lobby.profile();
    assert.equal(own.playerId, rated[0]!.id);
  });

  it("reads the leaderboard: ranks 1..n best first, pages with next and previous tokens, the page around a player", async () => {
    assert.equal(rated.length, 8, "the rated matches were played");
    const viewer = await player("reader");
    board = await viewer.lobby.leaderboard({ pageSize: 200 });
    assert.equal(board.pool, "classic", "no pool: the server's default");
    assert.equal(board.totalPlayers, 8);
    assert.equal(board.minGames, 1);
    assert.deepEqual(board.entries.map((e) => e.rank), [1, 2, 3, 4, 5, 6, 7, 8]);
    assert.deepEqual(new Set(ids(board.entries)), new Set(rated.map((p) => p.id)));
    const scores = board.entries.map((e) => e.rating!.conservative);
    assert.ok(scores.every((s, i) => i === 0 || s <= scores[i - 1]!), "best first");
    assert.deepEqual([board.nextPageToken, board.previousPageToken], ["", ""], "one page: no tokens");
    for (const e of board.entries) {
      const p = rated.find((r) => r.id === e.playerId)!;
      assert.equal(e.name, p.name);
      assert.equal(e.rating!.rank, e.rank);
      assert.equal(e.rating!.pool, "classic");
      assert.equal((await viewer.lobby.profile(e.playerId)).ratings[0]!.rank, e.rank, "the profile's rank is the board's");
    }

    // Pages of 3: 3, 3 and 2, linked both ways.
    const first = await viewer.lobby.leaderboard({ pool: "classic", pageSize: 3 });
    assert.deepEqual(first.entries.map((e) => e.rank), [1, 2, 3]);
    assert.equal(first.previousPageToken, "", "the top has no page before it");
    assert.notEqual(first.nextPageToken, "");
    const second = await viewer.lobby.leaderboard({ pool: "classic", pageSize: 3, pageToken: first.nextPageToken });
    assert.deepEqual(second.entries.map((e) => e.rank), [4, 5, 6]);
    assert.notEqual(second.previousPageToken, "");
    const back = await viewer.lobby.leaderboard({ pool: "classic", pageSize: 3, pageToken: second.previousPageToken });
    assert.deepEqual(ids(back.entries), ids(first.entries), "previous of the second page: the first");
    const last = await viewer.lobby.leaderboard({ pool: "classic", pageSize: 3, pageToken: second.nextPageToken });
    assert.deepEqual(last.entries.map((e) => e.rank), [7, 8]);
    assert.equal(last.nextPageToken, "", "the end has no page after it");

    // leaderboardPages walks them down, or up from a page; leaderboardEntries yields each entry once.
    const pages = [];
    for await (const page of viewer.lobby.leaderboardPages({ pageSize: 3 })) {
      pages.push(page.entries.map((e) => e.rank));
    }
    assert.deepEqual(pages, [[1, 2, 3], [4, 5, 6], [7, 8]]);
    const up = [];
    for await (const page of viewer.lobby.leaderboardPages({ pageSize: 3, pageToken: last.previousPageToken, direction: "previous" })) {
      up.push(page.entries.map((e) => e.rank));
    }
    assert.deepEqual(up, [[4, 5, 6], [1, 2, 3]]);
    const all: LeaderboardEntry[] = [];
    for await (const entry of viewer.lobby.leaderboardEntries({ pageSize: 3 })) {
      all.push(entry);
    }
    assert.deepEqual(ids(all), ids(board.entries));
    const someFirst: number[] = [];
    for await (const entry of viewer.lobby.leaderboardEntries({ pageSize: 3 })) {
      someFirst.push(entry.rank);
      if (entry.rank === 4) {
        break;
      }
    }
    assert.deepEqual(someFirst, [1, 2, 3, 4]);

    // The page around a player: the page of 3 that holds them.
    for (const e of board.entries) {
      const around = await viewer.lobby.leaderboard({ pageSize: 3, aroundPlayerId: e.playerId });
      assert.ok(ids(around.entries).includes(e.playerId));
      const start = Math.floor((e.rank - 1) / 3) * 3 + 1;
      assert.equal(around.entries[0]!.rank, start);
      assert.equal(around.previousPageToken === "", start === 1);
      assert.equal(around.nextPageToken === "", start + 3 > 8);
    }
    const walked = [];
    for await (const page of viewer.lobby.leaderboardPages({ pageSize: 3, aroundPlayerId: board.entries[4]!.playerId })) {
      walked.push(page.entries[0]!.rank);
    }
    assert.deepEqual(walked, [4, 7], "from a player's page, down by tokens");
  });

  it("runs the README's leaderboard example as it is printed there", async () => {
    assert.ok(board !== undefined, "the leaderboard was read");
    const readme = readFileSync(join(PKG, "README.md"), "utf8");
    const example = readFileSync(join(PKG, "examples", "leaderboard.ts"), "utf8");
    assert.ok(readme.includes("```ts\n" + example + "```\n"), "README.md shows examples/leaderboard.ts verbatim");
    const top = board.entries[0]!;
    const me = rated.find((p) => p.id === top.playerId)!;
    const { stdout } = await promisify(execFile)(process.execPath, [join(PKG, "dist", "examples", "leaderboard.js")], {
      env: { ...process.env, SPADES_ADDRESS: server.address, SPADES_PLAYER_CREDENTIAL: await server.credential(me.id, me.name) },
      timeout: 60_000,
    });
    assert.match(stdout, /^classic: 8 players with 1\+ rated games$/m);
    assert.equal(stdout.match(/^#\d+ \w+: -?\d+\.\d\d \(\d won, \d lost\)$/gm)?.length, 8);
    assert.match(stdout, new RegExp(`^${me.name}: 1 matches with humans, \\d won, \\d+% of contracts made$`, "m"));
    assert.match(stdout, new RegExp(`^#1 in classic: mu \\d+\\.\\d\\d, sigma \\d+\\.\\d\\d, 1 games$`, "m"));
    assert.match(stdout, new RegExp(`^my page: #1 ${me.name}, #2 \\w+, #3 \\w+, #4 \\w+, #5 \\w+$`, "m"));
  });

  it("rated tables and tickets: refused with bot seats, unrated once bots sit", async () => {
    const [host, queued] = await Promise.all([player("host"), player("queued")]);
    const withBots = await refusal(host.lobby.openTable({ rated: true, botSeats: [1] }));
    assert.deepEqual([withBots.code, withBots.reason], [Code.InvalidArgument, "RATED_WITHOUT_BOTS"]);
    // Started by the host: bots take the open seats, and it plays unrated.
    const opened = await host.lobby.openTable({ ruleset: QUICK, rated: true });
    assert.equal(opened.table!.rated, true);
    const started = await host.lobby.startTable(opened.table!.tableId);
    assert.equal(started.state, TableState.STARTED);
    assert.equal(started.rated, false, "a bot at the table: unrated");

    // Quick play: a rated ticket; alone, bots fill the table after serve.py's 1 s, unrated.
    const ticket = await queued.lobby.quickPlay({ ruleset: { preset: "classic", targetScore: 777 }, rated: true });
    assert.equal(ticket.rated, true);
    assert.equal(ticket.state, TicketState.SEARCHING);
    const placement = await within(WAIT_MS, "the placement", queued.lobby.awaitPlacement(ticket, { waitMs: 5_000 }));
    assert.equal(placement.table!.rated, false);
    assert.equal((await queued.lobby.getTicket(ticket.ticketId)).rated, true);
  });

  it("refuses bad leaderboard and profile requests with their reasons", async () => {
    const viewer = await player("asker");
    const cases: [() => Promise<unknown>, Code, string][] = [
      [() => viewer.lobby.leaderboard({ pool: "nosuchpool" }), Code.NotFound, "POOL_NOT_FOUND"],
      [() => viewer.lobby.leaderboard({ pool: "Not A Pool!" }), Code.InvalidArgument, "BAD_POOL"],
      [() => viewer.lobby.leaderboard({ pageToken: "bogus-token" }), Code.InvalidArgument, "BAD_PAGE_TOKEN"],
      [() => viewer.lobby.leaderboard({ pageSize: 201 }), Code.InvalidArgument, "BAD_PAGE_SIZE"],
      [() => viewer.lobby.leaderboard({ aroundPlayerId: "nobody-rated" }), Code.NotFound, "PLAYER_NOT_RATED"],
      [() => viewer.lobby.profile("nobody-at-all"), Code.NotFound, "PLAYER_NOT_FOUND"],
      [() => viewer.lobby.profile(), Code.NotFound, "PLAYER_NOT_FOUND"],
      [() => viewer.lobby.profile("x".repeat(129)), Code.InvalidArgument, "BAD_PLAYER_ID"],
    ];
    // A real token, of another pool or with a player as well.
    const page = await viewer.lobby.leaderboard({ pageSize: 3 });
    assert.notEqual(page.nextPageToken, "", "the rated matches put more than 3 players on the board");
    cases.push(
      [() => viewer.lobby.leaderboard({ pool: "polish", pageToken: page.nextPageToken }), Code.InvalidArgument, "BAD_PAGE_TOKEN"],
      [() => viewer.lobby.leaderboard({ pageToken: page.nextPageToken, aroundPlayerId: page.entries[0]!.playerId }), Code.InvalidArgument, "TOKEN_AND_PLAYER"],
    );
    for (const [call, code, reason] of cases) {
      const err = await refusal(call());
      assert.deepEqual([err.code, err.codeName, err.reason], [code, codeName(code), reason]);
    }
    // A pool nobody played in yet is empty, not refused.
    const empty = await viewer.lobby.leaderboard({ pool: "polish" });
    assert.deepEqual([empty.pool, empty.entries.length, empty.totalPlayers, empty.nextPageToken], ["polish", 0, 0, ""]);
  });
});
