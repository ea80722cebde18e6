// Load generator for server.mjs (colyseus.js 0.16): one process, one
// WebSocket per seat, four seats a table; each seat plays legal moves when
// the state says it is its turn. The command line and output follow the
// contract bench/peer.py relies on (README.md beside this file):
//
//   node loadgen.mjs --url ws://127.0.0.1:PORT --tables N --think-ms T \
//     --warmup-s W --seconds S --seed K --mode load|hold
//
// stdout carries JSON lines only; diagnostics go to stderr.

import { parseArgs } from "node:util";
import { performance } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { Client } from "colyseus.js";
import { prng, legalCards } from "./spades.mjs";

console.log = console.error; // colyseus.js and friends: never on stdout
const emit = (obj) => process.stdout.write(JSON.stringify(obj) + "\n"); // a pipe: synchronous on Linux
const note = (...a) => console.error("loadgen:", ...a);

const { values: opt } = parseArgs({
  options: {
    url: { type: "string", default: "ws://127.0.0.1:2567" },
    tables: { type: "string", default: "1" },
    "think-ms": { type: "string", default: "0" },
    "warmup-s": { type: "string", default: "2" },
    seconds: { type: "string", default: "10" },
    seed: { type: "string", default: "1" },
    mode: { type: "string", default: "load" },
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
const CONNECT_CONCURRENCY = 16; // tables being seated at once

const random = prng(SEED ^ 0x9e3779b9);
const uniform = (lo, hi) => lo + (hi - lo) * random();

// ---- the measurement window -------------------------------------------------
let playing = false; // seats act once every seat is connected
let collecting = false; // inside the measured window
let closing = false; // our own leaves are not errors
const acting = []; // ms, from t_send to the acting seat seeing its action applied
const others = []; // ms, from t_send to each other seat seeing it
let actions = 0;
let errors = 0;
let hands = 0;

function percentile(samples, p) {
  if (samples.length === 0) return null;
  const s = Float64Array.from(samples).sort();
  return Math.round(s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))] * 1000) / 1000;
}

// ---- tables and seats -------------------------------------------------------
class Table {
  constructor(index) {
    this.index = index;
    this.seed = (Math.imul(SEED, 7919) + index) >>> 0;
    this.seats = [];
    this.sends = new Map(); // actionCount after the action -> {t, seat, inWindow, seen}
    this.pendingAt = -1; // actionCount at which an action is scheduled or sent
    this.first = true; // the first action waits the stagger, not the think time
    this.handNo = 0;
  }
}

class Seat {
  constructor(table, room) {
    this.table = table;
    this.room = room;
    this.idx = -1; // seat index in the game, from the state's sessionIds
    this.seen = -1; // the last actionCount this seat has seen
    room.onStateChange((state) => this.onState(state));
    room.onMessage("error", (m) => {
      if (collecting) errors++;
      note(`table ${table.index} seat ${this.idx} refused:`, JSON.stringify(m));
      // Only legal moves are sent, so this is a bug; retry later, not in a loop.
      table.pendingAt = -1;
      setTimeout(() => this.maybeAct(), 50);
    });
    room.onError((code, message) => {
      if (collecting) errors++;
      note(`table ${table.index} seat ${this.idx} error ${code}: ${message}`);
    });
    room.onLeave((code) => {
      if (closing) return;
      if (collecting) errors++;
      note(`table ${table.index} seat ${this.idx} disconnected (${code})`);
    });
  }

  onState(state) {
    const now = performance.now();
    const table = this.table;
    if (this.idx < 0) {
      this.idx = state.seats.findIndex((s) => s.sessionId === this.room.sessionId);
      this.seen = state.actionCount;
    }
    const ac = state.actionCount;
    while (this.seen < ac) {
      const n = ++this.seen;
      const rec = table.sends.get(n);
      if (rec === undefined) continue;
      if (rec.inWindow && collecting) {
        if (rec.seat === this) {
          acting.push(now - rec.t);
          actions++;
        } else {
          others.push(now - rec.t);
        }
      }
      if (++rec.seen === 4) table.sends.delete(n);
    }
    if (this.idx === 0 && state.handNo !== table.handNo) {
      if (collecting && table.handNo > 0) hands += state.handNo - table.handNo;
      table.handNo = state.handNo;
    }
    this.maybeAct();
  }

  maybeAct() {
    const state = this.room.state;
    const table = this.table;
    if (!playing || closing || !state || state.turn !== this.idx) return;
    if (state.phase !== "bidding" && state.phase !== "playing") return;
    const ac = state.actionCount;
    if (table.pendingAt === ac) return;
    table.pendingAt = ac;
    let delay = 0;
    if (THINK > 0) delay = table.first ? uniform(0, 56 * THINK) : uniform(0.5 * THINK, 1.5 * THINK);
    table.first = false;
    if (delay > 0) setTimeout(() => this.act(ac), delay);
    else this.act(ac);
  }

  act(ac) {
    const state = this.room.state;
    if (closing || state.actionCount !== ac || state.turn !== this.idx) return;
    let type;
    let message;
    if (state.phase === "bidding") {
      type = "bid";
      message = { bid: 1 + Math.floor(random() * 4) };
    } else {
      const legal = legalCards(state.seats[this.idx].hand, state.trick, state.spadesBroken);
      type = "play";
      message = { card: legal[Math.floor(random() * legal.length)] };
    }
    this.table.sends.set(ac + 1, { t: performance.now(), seat: this, inWindow: collecting, seen: 0 });
    this.room.send(type, message);
  }
}

// ---- connecting -------------------------------------------------------------
const client = new Client(opt.url);
const tables = Array.from({ length: TABLES }, (_, i) => new Table(i));
const seats = [];

async function seat(table) {
  const first = await client.create("spades", { seed: table.seed });
  table.seats.push(new Seat(table, first));
  for (let i = 1; i < 4; i++) table.seats.push(new Seat(table, await client.joinById(first.roomId)));
  seats.push(...table.seats);
}

async function connectAll() {
  let next = 0;
  const worker = async () => {
    while (next < tables.length) await seat(tables[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(CONNECT_CONCURRENCY, tables.length) }, worker));
  // Ready once each seat knows its index and every table has dealt.
  const deadline = Date.now() + 30000;
  while (!seats.every((s) => s.idx >= 0 && s.room.state?.phase === "bidding")) {
    if (Date.now() > deadline) throw new Error("tables not dealt after 30 s");
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function closeAll() {
  closing = true;
  const left = Promise.all(seats.map((s) => s.room.leave(true).catch(() => {})));
  await Promise.race([left, new Promise((r) => setTimeout(r, 10000))]);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

try {
  await connectAll();
} catch (e) {
  note("connecting failed:", e?.stack ?? e);
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
      emit({ event: "disconnected" });
    } else if (cmd === "exit") {
      process.exit(0);
    }
  });
  lines.on("close", () => process.exit(0));
} else {
  emit({ event: "ready", tables: TABLES, seats: 4 * TABLES });
  playing = true;
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
  await closeAll();
  process.exit(0);
}
