// Load generator for our Spades server (issue 25, "Server efficiency against
// Colyseus"): the peer of bench/peer/colyseus/loadgen.mjs, on the same
// contract (bench/peer/README.md), driven by bench/peer.py.
//
//   node bench/peer/spades-load.mjs --url 127.0.0.1:PORT --operator-token TOKEN \
//     --tables N --think-ms T --warmup-s W --seconds S --seed K --mode load|hold
//
// Every seat is a phone of its own: its own SpadesClient over its own
// transport, so its own HTTP/2 connection (one Http2SessionManager a seat),
// which claims the seat and holds one `Play` session (@spades/client's
// SeatSession). A seat knows its legal actions without an RPC: it follows the
// match from its own events (its dealt hand, the bids, the trick, the led
// suit, spades broken) and works out the classic preset's legal cards; it bids
// 1..4 at random. A finished match is replaced by a new one on the same table,
// played by the same four clients. stdout carries the contract's JSON lines
// only; diagnostics go to stderr.

import { parseArgs } from "node:util";
import { performance } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { SpadesClient, SpadesError } from "../../clients/typescript/dist/src/index.js";
import { baseUrl } from "../../clients/typescript/dist/src/node.js";
// The very module the client's own node.js imports (its ESM build, from the
// client's node_modules): connect() makes no handle on its connection, so
// each seat gets a transport with a session manager it can abort.
import {
  createGrpcTransport,
  Http2SessionManager,
} from "../../clients/typescript/node_modules/@connectrpc/connect-node/dist/esm/index.js";

console.log = console.error; // never anything but the contract's lines on stdout
const emit = (obj) => process.stdout.write(JSON.stringify(obj) + "\n"); // a pipe: synchronous on Linux
const note = (...a) => console.error("spades-load:", ...a);

const { values: opt } = parseArgs({
  options: {
    url: { type: "string", default: "127.0.0.1:50051" },
    "operator-token": { type: "string", default: process.env.SPADES_OPERATOR_TOKEN ?? "bench-operator" },
    tables: { type: "string", default: "1" },
    "think-ms": { type: "string", default: "0" },
    "warmup-s": { type: "string", default: "2" },
    seconds: { type: "string", default: "10" },
    seed: { type: "string", default: "1" },
    mode: { type: "string", default: "load" },
    // Play calls go here instead (an edge in front of the server: bench/edge.py);
    // CreateMatch and ClaimSeat still go to --url.
    "play-url": { type: "string", default: "" },
  },
});
const TABLES = Number(opt.tables);
const THINK = Number(opt["think-ms"]);
const WARMUP_S = Number(opt["warmup-s"]);
const SECONDS = Number(opt.seconds);
const SEED = Number(opt.seed) >>> 0;
const MODE = opt.mode;
if (!(TABLES >= 1) || !(THINK >= 0) || !(WARMUP_S >= 0) || !(SECONDS > 0) || !["load", "hold"].includes(MODE)) {
  note("bad arguments", JSON.stringify(opt));
  process.exit(2);
}
const URL_BASE = baseUrl(opt.url, undefined); // host:port or http://host:port
const PLAY_BASE = opt["play-url"] ? baseUrl(opt["play-url"], undefined) : "";
const SETUP_CONCURRENCY = 16; // tables being set up at once (as loadgen.mjs)
const CONNECT_TIMEOUT_MS = 60_000;
const CLOSE_TIMEOUT_MS = 10_000;
const SPADES = 4; // Suit.SPADES
const TRICKS = 13;

// mulberry32: a small seeded PRNG (choices, think times, match seeds).
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = prng(SEED ^ 0x5bd1e995);
const uniform = (lo, hi) => lo + (hi - lo) * random();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- the measurement window -------------------------------------------------
let playing = false; // seats act once every seat is connected
let collecting = false; // inside the measured window
let closing = false; // our own closes are not errors
const acting = []; // ms, from the send to the acting seat's ActionResult
const others = []; // ms, from the send to each other seat's event of the action
let actions = 0;
let errors = 0;
let hands = 0;
let matchesStarted = 0;

function percentile(samples, p) {
  if (samples.length === 0) return null;
  const s = Float64Array.from(samples).sort();
  return Math.round(s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))] * 1000) / 1000;
}

function error(where, e) {
  if (closing) return;
  if (collecting) errors++;
  const detail = e instanceof SpadesError ? `${e.codeName} ${e.reason ?? ""} ${e.message}` : String(e?.stack ?? e);
  note(where, detail);
}

// One HTTP/2 connection and its client: a seat's, or the operator's.
function connection(operatorToken, base = URL_BASE) {
  const manager = new Http2SessionManager(base, { pingIntervalMs: 30_000, pingTimeoutMs: 15_000 });
  const transport = createGrpcTransport({ baseUrl: base, sessionManager: manager });
  const client = new SpadesClient({ transport, ...(operatorToken ? { operatorToken } : {}) });
  return { client, manager };
}

// The legal cards of a hand (classic): follow the led suit if able; lead
// anything once spades are broken, else anything but a spade unless the hand
// holds only spades.
function legalCards(hand, led, broken) {
  if (led > 0) {
    const follow = hand.filter((c) => c.suit === led);
    return follow.length > 0 ? follow : hand;
  }
  if (broken) return hand;
  const other = hand.filter((c) => c.suit !== SPADES);
  return other.length > 0 ? other : hand;
}

// ---- tables and seats -------------------------------------------------------
class Table {
  constructor(index, operator) {
    this.index = index;
    this.operator = operator;
    this.random = prng((Math.imul(SEED, 7919) + index) >>> 0);
    this.seats = [0, 1, 2, 3].map((i) => new Seat(this, i));
    this.first = true; // the first action waits the stagger, not the think time
    this.match = 0; // matches played at this table (the current one's number)
    this.sends = new Map(); // action index in the match -> {t, inWindow, seen}
    this.pendingAt = -1; // the action index an action is scheduled or sent for
    this.done = undefined; // resolves when the current match's four seats are done
  }

  // Creates a match, claims its four seats (each on its own connection) and
  // opens their Play sessions; resolves once every seat has had an event.
  async setUp() {
    const seed = BigInt(Math.floor(this.random() * 2 ** 52));
    const created = await this.operator.createMatch({
      ruleset: { preset: "classic" },
      seats: this.seats.map((s) => ({ name: `load ${this.index}.${s.index}` })),
      seed,
      hasSeed: true,
    });
    this.match++;
    this.sends.clear();
    this.pendingAt = -1;
    matchesStarted++;
    const tokens = created.seatTokens.map((t) => t.token);
    await Promise.all(this.seats.map((s) => s.client.seat(tokens[s.index]).claim()));
    this.done = Promise.all(this.seats.map((s) => s.open(tokens[s.index])));
    await Promise.all(this.seats.map((s) => s.connected));
  }

  // Plays match after match until the run closes.
  async run() {
    for (;;) {
      await this.done;
      if (closing) return;
      try {
        await this.setUp();
      } catch (e) {
        error(`table ${this.index}: setting up a match failed:`, e);
        if (closing) return;
        await sleep(1000);
        continue;
      }
      for (const s of this.seats) s.maybeAct();
    }
  }

  end() {
    for (const s of this.seats) s.session?.close().catch(() => {});
  }
}

class Seat {
  constructor(table, index) {
    this.table = table;
    this.index = index;
    const { client, manager } = connection(undefined);
    this.client = client;
    this.managers = [manager];
    this.playClient = client; // the Play call's: the same connection, or one to --play-url
    if (PLAY_BASE) {
      const play = connection(undefined, PLAY_BASE);
      this.playClient = play.client;
      this.managers.push(play.manager);
    }
    this.session = undefined;
    this.connected = undefined;
    this.recent = new Array(8); // the events read last, a ring
    this.recentAt = 0;
  }

  // Opens the seat's Play session on a new match and follows it to its end.
  open(token) {
    this.seatClient = this.playClient.seat(token);
    this.reset();
    let onConnected;
    this.connected = new Promise((r) => (onConnected = r));
    this.onConnected = onConnected;
    this.session = this.seatClient.open({
      onReconnect: (info) => error(`table ${this.table.index} seat ${this.index} reconnects:`, info.error),
    });
    return this.follow(this.session);
  }

  reset() {
    this.seen = 0n; // the last sequence number read
    this.count = 0; // actions (bids and cards) seen in the match
    this.dealer = 0;
    this.phase = "waiting"; // "bidding", "playing", "scored", "over"
    this.turn = -1;
    this.bids = 0;
    this.hand = [];
    this.trick = 0; // cards in the current trick
    this.led = 0; // the led suit, 0 when no card is in the trick
    this.broken = false;
    this.tricks = 0;
  }

  async follow(session) {
    const table = this.table;
    try {
      for await (const event of session) {
        this.onConnected?.();
        this.onConnected = undefined;
        this.seen = event.seq;
        this.recent[this.recentAt++ & 7] = event; // the last eight, for a refusal's note
        this.apply(event);
        if (this.phase === "over") break;
        this.maybeAct();
      }
    } catch (e) {
      error(`table ${table.index} seat ${this.index} session ended:`, e);
      table.end(); // the match cannot go on without this seat
    } finally {
      this.onConnected?.(); // never leave set-up waiting
      this.onConnected = undefined;
      await session.close().catch(() => {});
    }
  }

  apply(event) {
    const now = performance.now();
    const { kind } = event;
    switch (kind.case) {
      case "handStarted":
        this.dealer = kind.value.dealer;
        this.phase = "bidding";
        this.bids = 0;
        this.turn = (this.dealer + 1) % 4;
        this.hand = [];
        this.trick = 0;
        this.led = 0;
        this.broken = false;
        this.tricks = 0;
        break;
      case "handShown":
        if (kind.value.seat === this.index) this.hand = kind.value.cards.map((c) => ({ suit: c.suit, rank: c.rank }));
        break;
      case "bidMade":
        this.sawAction(kind.value.seat, now);
        this.bids++;
        if (this.bids === 4) {
          this.phase = "playing";
          this.turn = (this.dealer + 1) % 4; // first lead: left of the dealer
        } else {
          this.turn = (kind.value.seat + 1) % 4;
        }
        break;
      case "cardPlayed": {
        const { seat, card } = kind.value;
        this.sawAction(seat, now);
        if (seat === this.index) {
          const i = this.hand.findIndex((c) => c.suit === card.suit && c.rank === card.rank);
          if (i >= 0) this.hand.splice(i, 1);
        }
        if (this.trick === 0) this.led = card.suit;
        if (card.suit === SPADES) this.broken = true;
        this.trick++;
        this.turn = this.trick === 4 ? -1 : (seat + 1) % 4; // after the fourth: the trick's winner
        break;
      }
      case "trickWon":
        this.trick = 0;
        this.led = 0;
        this.tricks++;
        this.turn = this.tricks === TRICKS ? -1 : kind.value.winner;
        break;
      case "handScored":
        this.phase = "scored";
        this.turn = -1;
        if (this.index === 0 && collecting) hands++;
        break;
      case "matchEnded":
        this.phase = "over";
        this.turn = -1;
        break;
      default:
        break;
    }
  }

  // Another seat's action arrived here: one "others" sample.
  sawAction(actor, now) {
    const n = this.count++;
    if (actor === this.index) return;
    const table = this.table;
    const rec = table.sends.get(n);
    if (rec === undefined) return;
    if (rec.inWindow && collecting) others.push(now - rec.t);
    if (++rec.seen === 4) table.sends.delete(n);
  }

  maybeAct() {
    const table = this.table;
    if (!playing || closing || this.turn !== this.index) return;
    if (this.phase !== "bidding" && !(this.phase === "playing" && this.hand.length > 0)) return;
    const at = this.count;
    if (table.pendingAt === at) return;
    table.pendingAt = at;
    let delay = 0;
    if (THINK > 0) delay = table.first ? uniform(0, 56 * THINK) : uniform(0.5 * THINK, 1.5 * THINK);
    table.first = false;
    // Not at once even with T = 0: the rest of the events of the same
    // response (bidding closed after the last bid) are read first.
    const match = table.match;
    const fire = () => this.act(at, match);
    if (delay > 0) setTimeout(fire, delay);
    else setImmediate(fire);
  }

  act(at, match) {
    const table = this.table;
    if (closing || table.match !== match || this.count !== at || this.turn !== this.index) {
      if (table.pendingAt === at && table.match === match) table.pendingAt = -1;
      return;
    }
    let action;
    if (this.phase === "bidding") {
      action = { kind: { case: "bid", value: { tricks: 1 + Math.floor(random() * 4) } } };
    } else {
      const legal = legalCards(this.hand, this.led, this.broken);
      const card = legal[Math.floor(random() * legal.length)];
      action = { kind: { case: "playCard", value: { card } } };
    }
    const rec = { t: performance.now(), inWindow: collecting, seen: 1 };
    table.sends.set(at, rec);
    const session = this.session;
    session.act(action, { expectedSeq: this.seen }).then(
      () => {
        if (rec.inWindow && collecting) {
          acting.push(performance.now() - rec.t);
          actions++;
        }
      },
      (e) => {
        if (session === this.session && table.match === match) table.pendingAt = -1;
        const seen = [...this.recent.slice(this.recentAt & 7), ...this.recent.slice(0, this.recentAt & 7)];
        const recent = seen.filter(Boolean).map((ev) => `${ev.seq}:${ev.kind.case}`).join(" ");
        error(`table ${table.index} seat ${this.index} action refused (after ${recent}):`, e);
      },
    );
  }
}

// ---- connecting -------------------------------------------------------------
const operator = connection(opt["operator-token"]);
const tables = Array.from({ length: TABLES }, (_, i) => new Table(i, operator.client));

async function setUpAll() {
  let next = 0;
  const worker = async () => {
    while (next < tables.length) await tables[next++].setUp();
  };
  await Promise.all(Array.from({ length: Math.min(SETUP_CONCURRENCY, tables.length) }, worker));
}

async function closeAll() {
  closing = true;
  const closed = Promise.all(tables.flatMap((t) => t.seats.map((s) => s.session?.close().catch(() => {}))));
  await Promise.race([closed, sleep(CLOSE_TIMEOUT_MS)]);
  for (const t of tables) for (const s of t.seats) for (const m of s.managers) m.abort();
}

try {
  await Promise.race([
    setUpAll(),
    sleep(CONNECT_TIMEOUT_MS).then(() => {
      throw new Error(`not every seat connected after ${CONNECT_TIMEOUT_MS / 1000} s`);
    }),
  ]);
} catch (e) {
  note("setting up failed:", e?.stack ?? e);
  process.exit(1);
}

if (MODE === "hold") {
  emit({ event: "connected", tables: TABLES });
  const lines = createInterface({ input: process.stdin });
  let disconnected = false;
  lines.on("line", async (line) => {
    const cmd = line.trim();
    if (cmd === "disconnect" && !disconnected) {
      disconnected = true;
      await closeAll();
      operator.manager.abort();
      emit({ event: "disconnected" });
    } else if (cmd === "exit") {
      process.exit(0);
    }
  });
  lines.on("close", () => process.exit(0));
} else {
  emit({ event: "ready", tables: TABLES, seats: 4 * TABLES });
  playing = true;
  const running = tables.map((t) => t.run());
  for (const t of tables) for (const s of t.seats) s.maybeAct();
  await sleep(WARMUP_S * 1000);
  collecting = true;
  emit({ event: "measure-start" });
  await sleep(SECONDS * 1000);
  collecting = false;
  emit({
    event: "measure-end",
    actions,
    acting_p50_ms: percentile(acting, 0.5),
    acting_p99_ms: percentile(acting, 0.99),
    others_p50_ms: percentile(others, 0.5),
    others_p99_ms: percentile(others, 0.99),
    errors,
    hands,
  });
  note(`${matchesStarted} matches started`);
  await closeAll();
  await Promise.race([Promise.all(running), sleep(1000)]);
  operator.manager.abort();
  process.exit(0);
}
