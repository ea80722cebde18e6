// A check of server.mjs, by hand: starts it on a free port, seats four
// clients at one room, and checks that each client's decoded state holds its
// own hand and no other (StateView), that bad actions are refused and change
// nothing, and that legal actions advance the game through a whole hand.
//
//   node smoke.mjs        (exits 0 and prints "N passed, 0 failed")

import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Client } from "colyseus.js";
import { legalCards, suitOf } from "./spades.mjs";

console.log = console.error; // keep colyseus.js chatter off stdout

let passed = 0;
let failed = 0;
function check(ok, what) {
  if (ok) passed++;
  else failed++;
  process.stdout.write(`${ok ? "ok  " : "FAIL"} ${what}\n`);
}

const port = 20000 + Math.floor(Math.random() * 20000);
const server = spawn(process.execPath, [fileURLToPath(new URL("server.mjs", import.meta.url)), "--port", String(port)], {
  stdio: ["ignore", "pipe", "inherit"],
});
// Never leave the server behind, whatever fails below.
process.on("exit", () => server.kill("SIGKILL"));
process.on("uncaughtException", (e) => {
  console.error(e);
  process.exit(1);
});
const first = await new Promise((resolve, reject) => {
  server.once("exit", (code) => reject(new Error(`server exited ${code}`)));
  createInterface({ input: server.stdout }).once("line", resolve);
});
const listening = JSON.parse(first);
check(listening.event === "listening" && listening.port === port && listening.pid === server.pid, `server says ${first}`);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, cond, ms = 2000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

const client = new Client(`ws://127.0.0.1:${port}`);
const rooms = [await client.create("spades", { seed: 7 })];
for (let i = 1; i < 4; i++) rooms.push(await client.joinById(rooms[0].roomId));
const errors = rooms.map(() => []);
rooms.forEach((r, i) => r.onMessage("error", (m) => errors[i].push(m)));
await until("the deal", () => rooms.every((r) => r.state.phase === "bidding" && r.state.seats.length === 4));
const seatOf = rooms.map((r) => r.state.seats.findIndex((s) => s.sessionId === r.sessionId));
check(seatOf.join() === "0,1,2,3", `seats ${seatOf}`);

function hands(r) {
  return r.state.seats.map((s) => (s.hand ? Array.from(s.hand) : undefined));
}
let allCards = [];
for (let i = 0; i < 4; i++) {
  const h = hands(rooms[i]);
  const own = h[seatOf[i]];
  const others = h.filter((_, s) => s !== seatOf[i]);
  check(own && own.length === 13, `seat ${i} sees its own 13 cards`);
  check(others.every((x) => x === undefined || x.length === 0), `seat ${i} sees no other hand (${JSON.stringify(others)})`);
  check(rooms[i].state.seats.every((s) => s.handCount === 13), `seat ${i} sees every hand size`);
  allCards = allCards.concat(own);
}
check(new Set(allCards).size === 52, "the four hands are the 52 cards");

const st = () => rooms[0].state;
async function refused(i, type, msg, why) {
  const before = st().actionCount;
  const n = errors[i].length;
  rooms[i].send(type, msg);
  await until(`refusal of ${why}`, () => errors[i].length > n);
  await sleep(20);
  check(st().actionCount === before && errors[i][n].reason.length > 0, `${why} refused: ${errors[i][n].reason}`);
}
async function accepted(i, type, msg) {
  const want = st().actionCount + 1;
  rooms[i].send(type, msg);
  await until(`action ${want}`, () => rooms.every((r) => r.state.actionCount === want));
  const s = st();
  if (s.lastSeat !== seatOf[i]) throw new Error(`lastSeat ${s.lastSeat} after seat ${seatOf[i]} acted`);
}

const turnRoom = () => seatOf.indexOf(st().turn);
let t = turnRoom();
await refused((t + 1) % 4, "bid", { bid: 3 }, "a bid out of turn");
await refused(t, "bid", { bid: 14 }, "a bid of 14");
await refused(t, "play", { card: hands(rooms[t])[seatOf[t]][0] }, "a card while bidding");
for (let k = 0; k < 4; k++) await accepted(turnRoom(), "bid", { bid: 3 });
check(st().phase === "playing" && st().seats.every((s) => s.bid === 3), "four bids: playing");

// Refusals in play: out of turn, a card not in hand, a spade led unbroken,
// a card off the led suit while holding it.
t = turnRoom();
const myHand = () => Array.from(rooms[turnRoom()].state.seats[st().turn].hand);
await refused((t + 1) % 4, "play", { card: hands(rooms[(t + 1) % 4])[seatOf[(t + 1) % 4]][0] }, "a card out of turn");
const notMine = allCards.find((c) => !myHand().includes(c));
await refused(t, "play", { card: notMine }, "a card not in hand");
const spade = myHand().find((c) => suitOf(c) === 3);
if (spade !== undefined && myHand().some((c) => suitOf(c) !== 3)) await refused(t, "play", { card: spade }, "a spade led before spades are broken");
const played = rooms.map((r, i) => Array.from(r.state.seats[seatOf[i]].hand));
let handsInSync = true;
let offSuitTested = false;
let tricksPlayed = 0;
const handNo = st().handNo;
while (st().handNo === handNo) {
  const i = turnRoom();
  const hand = myHand();
  const trick = Array.from(st().trick);
  if (!offSuitTested && trick.length > 0) {
    const led = suitOf(trick[0]);
    const off = hand.find((c) => suitOf(c) !== led);
    if (off !== undefined && hand.some((c) => suitOf(c) === led)) {
      await refused(i, "play", { card: off }, "a card off the led suit while holding it");
      offSuitTested = true;
    }
  }
  const legal = legalCards(hand, trick, st().spadesBroken);
  // Play the last legal card, so that cards leave from the middle of hands.
  const card = legal[legal.length - 1];
  const want = played[i].filter((c) => c !== card);
  await accepted(i, "play", { card });
  played[i] = want;
  if (Array.from(rooms[i].state.seats[seatOf[i]].hand).join() !== want.join() && st().handNo === handNo) handsInSync = false;
  if (trick.length === 3) tricksPlayed++;
}
check(tricksPlayed === 13, "13 tricks played");
check(handsInSync, "each seat's decoded hand matched its cards left after every play");
check(st().seats.reduce((a, s) => a + s.tricks, 0) === 0 && st().phase === "bidding" && st().handNo === handNo + 1, "next hand dealt at once");
check(st().scores[0] !== 0 || st().scores[1] !== 0, `scored: ${Array.from(st().scores)} bags ${Array.from(st().bags)}`);
for (let i = 0; i < 4; i++) {
  const h = hands(rooms[i]);
  check(h[seatOf[i]].length === 13 && h.filter((x) => x && x.length > 0).length === 1, `hand 2: seat ${i} sees its new hand only`);
}

await Promise.all(rooms.map((r) => r.leave()));
// The room stays with nobody in it (autoDispose = false): join it again.
const again = await client.joinById(rooms[0].roomId);
await until("state", () => again.state?.seats?.length === 4);
check(again.state.handNo === handNo + 1, "the room outlives its clients");
await again.leave();

const code = await new Promise((resolve) => {
  server.once("exit", (c, sig) => resolve(c ?? sig));
  server.kill("SIGTERM");
});
check(code === 0, `server exits ${code} on SIGTERM`);
process.stdout.write(`${passed} passed, ${failed} failed\n`);
process.exit(failed ? 1 : 0);
