// A Colyseus 0.16 server doing per action the work our Spades server does:
// four seats a room, one connection each, bids and tricks checked, each
// seat's hand hidden from the others by a StateView, one patch per action.
//
//   node server.mjs --port 2567 [--host 127.0.0.1]
//
// Prints {"event":"listening","port":N,"pid":P} on stdout once it listens;
// everything else goes to stderr. SIGTERM/SIGINT: Colyseus' own graceful
// shutdown (disconnects the rooms, then exits 0).

import { parseArgs } from "node:util";
import { Server, Room } from "@colyseus/core";
import { WebSocketTransport } from "@colyseus/ws-transport";
import { schema, ArraySchema, StateView } from "@colyseus/schema";
import { prng, deal, refusal, trickWinner, scoreSide, suitOf, SPADES } from "./spades.mjs";

// One seat. `hand` carries the view tag: it is encoded only for the clients
// whose StateView holds this Seat (its own player); the other fields are
// public to everyone in the room.
export const Seat = schema(
  {
    sessionId: "string",
    bid: "int8", // -1: not bid yet
    tricks: "uint8",
    handCount: "uint8",
    hand: { array: "uint8", view: true },
  },
  "Seat",
);

export const SpadesState = schema(
  {
    seats: [Seat],
    phase: "string", // "waiting" (fewer than 4 joined yet), "bidding", "playing"
    handNo: "uint32",
    dealer: "uint8",
    turn: "int8", // seat to act, -1 while waiting
    trick: ["uint8"], // cards of the current trick, leader's first
    leader: "int8",
    spadesBroken: "boolean",
    scores: ["int16"], // side 0 (seats 0+2), side 1 (seats 1+3)
    bags: ["uint8"],
    actionCount: "uint32", // accepted actions since the room began
    lastSeat: "int8",
    lastKind: "string", // "bid" or "card"
    lastValue: "int8", // the bid or the card
  },
  "SpadesState",
);

class SpadesRoom extends Room {
  maxClients = 4;
  autoDispose = false; // rooms outlive their clients (memory of idle rooms)
  // Automatic patches off (0.16 takes null or 0 as "no interval"): a patch is
  // broadcast right after each accepted action instead (broadcastPatch()).
  patchRate = null;

  onCreate(options) {
    this.random = prng(Number(options?.seed ?? 0) >>> 0);
    const state = new SpadesState();
    for (let i = 0; i < 4; i++) {
      state.seats.push(new Seat({ sessionId: "", bid: -1, tricks: 0, handCount: 0 }));
    }
    state.phase = "waiting";
    state.handNo = 0;
    state.dealer = 3;
    state.turn = -1;
    state.leader = -1;
    state.spadesBroken = false;
    state.scores.push(0, 0);
    state.bags.push(0, 0);
    state.actionCount = 0;
    state.lastSeat = -1;
    state.lastKind = "";
    state.lastValue = -1;
    this.setState(state);
    this.seatOf = new Map(); // sessionId -> seat index

    this.onMessage("bid", (client, message) => this.bid(client, message));
    this.onMessage("play", (client, message) => this.play(client, message));
  }

  onJoin(client) {
    const seats = this.state.seats;
    let seat = -1;
    for (let i = 0; i < 4; i++) {
      if (seats[i].sessionId === "") {
        seat = i;
        break;
      }
    }
    if (seat < 0) throw new Error("table full");
    seats[seat].sessionId = client.sessionId;
    this.seatOf.set(client.sessionId, seat);
    // The client sees its own hand only: its view holds its own Seat.
    client.view = new StateView();
    client.view.add(seats[seat]);
    if (this.state.phase === "waiting" && this.seatOf.size === 4) this.dealHand();
    this.broadcastPatch();
  }

  onLeave(client) {
    const seat = this.seatOf.get(client.sessionId);
    if (seat !== undefined) {
      this.seatOf.delete(client.sessionId);
      this.state.seats[seat].sessionId = "";
    }
    this.broadcastPatch();
  }

  dealHand() {
    const s = this.state;
    const hands = deal(this.random);
    s.handNo += 1;
    s.dealer = (s.dealer + 1) % 4;
    for (let i = 0; i < 4; i++) {
      const seat = s.seats[i];
      seat.bid = -1;
      seat.tricks = 0;
      seat.handCount = 13;
      seat.hand.clear();
      seat.hand.push(...hands[i]);
    }
    s.trick.clear();
    s.spadesBroken = false;
    s.phase = "bidding";
    s.turn = (s.dealer + 1) % 4;
    s.leader = -1;
  }

  // The sender's seat when it is its turn in `phase`, else null (refused).
  actor(client, phase) {
    const seat = this.seatOf.get(client.sessionId);
    if (seat === undefined) return this.refuse(client, "no seat");
    if (this.state.phase !== phase) return this.refuse(client, `not ${phase}`);
    if (this.state.turn !== seat) return this.refuse(client, "not your turn");
    return seat;
  }

  refuse(client, reason) {
    client.send("error", { reason, actionCount: this.state.actionCount });
    return null;
  }

  accepted(seat, kind, value) {
    const s = this.state;
    s.actionCount += 1;
    s.lastSeat = seat;
    s.lastKind = kind;
    s.lastValue = value;
  }

  bid(client, message) {
    const seat = this.actor(client, "bidding");
    if (seat === null) return;
    const bid = message?.bid;
    if (!Number.isInteger(bid) || bid < 0 || bid > 13) return this.refuse(client, "bad bid");
    const s = this.state;
    s.seats[seat].bid = bid;
    this.accepted(seat, "bid", bid);
    const next = (seat + 1) % 4;
    if (next === (s.dealer + 1) % 4) {
      s.phase = "playing";
      s.leader = next;
    }
    s.turn = next;
    this.broadcastPatch();
  }

  play(client, message) {
    const seat = this.actor(client, "playing");
    if (seat === null) return;
    const card = message?.card;
    if (!Number.isInteger(card) || card < 1 || card > 52) return this.refuse(client, "bad card");
    const s = this.state;
    const me = s.seats[seat];
    const why = refusal(me.hand, card, s.trick, s.spadesBroken);
    if (why !== null) return this.refuse(client, why);

    me.hand.splice(me.hand.indexOf(card), 1);
    me.handCount -= 1;
    s.trick.push(card);
    if (suitOf(card) === SPADES) s.spadesBroken = true;
    this.accepted(seat, "card", card);

    if (s.trick.length < 4) {
      s.turn = (seat + 1) % 4;
    } else {
      const winner = (s.leader + trickWinner(s.trick)) % 4;
      s.seats[winner].tricks += 1;
      s.trick.clear();
      s.leader = winner;
      s.turn = winner;
      if (me.handCount === 0) this.scoreHand();
    }
    this.broadcastPatch();
  }

  scoreHand() {
    const s = this.state;
    const bids = s.seats.map((x) => x.bid);
    const tricks = s.seats.map((x) => x.tricks);
    for (const side of [0, 1]) {
      const [points, bags] = scoreSide(bids, tricks, side);
      let score = s.scores[side] + points;
      let total = s.bags[side] + bags;
      if (total >= 10) {
        total -= 10;
        score -= 100;
      }
      // The room lives on across games: keep the score in int16's range.
      s.scores[side] = Math.max(-30000, Math.min(30000, score));
      s.bags[side] = total;
    }
    this.dealHand();
  }
}

const { values } = parseArgs({
  options: {
    port: { type: "string", default: "2567" },
    host: { type: "string", default: "127.0.0.1" },
  },
});
const port = Number(values.port);

// Colyseus logs with console.log by default: keep stdout for our JSON line.
const toStderr = (...a) => console.error(...a);
const server = new Server({
  greet: false,
  logger: { debug: () => {}, info: toStderr, warn: toStderr, error: toStderr },
  transport: new WebSocketTransport(),
});
server.define("spades", SpadesRoom);
await server.listen(port, values.host);
process.stdout.write(JSON.stringify({ event: "listening", port, pid: process.pid }) + "\n");
