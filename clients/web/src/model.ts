// The table as the page draws it: a SeatView. A seat gets it from the server
// (GetView); a spectator, who has no view call, builds it from the public
// events (applyPublicEvent), from the first one on.
import { create } from "@bufbuild/protobuf";
import {
  Phase,
  SeatBidSchema,
  SeatControl,
  SeatInfoSchema,
  SeatViewSchema,
  Suit,
  TrickSchema,
  HandResultSchema,
  type MatchEvent,
  type MatchSummary,
  type SeatView,
} from "@spades/client";
import { sameCard } from "./cards.js";
import { t } from "./i18n.js";

/** A spectator's starting table: no hand, the seats and rules of the match summary when known. */
export function emptyView(summary: MatchSummary | undefined): SeatView {
  const players = summary?.ruleset?.players ?? 4;
  const view = create(SeatViewSchema, {
    seat: -1,
    phase: Phase.UNSPECIFIED,
    toAct: -1,
    winner: -1,
    trumpNamer: -1,
    trump: Suit.SPADES,
    leader: -1,
    dealer: -1,
    ...(summary?.ruleset !== undefined ? { ruleset: summary.ruleset } : {}),
    seats: summary?.seats.map((s) => create(SeatInfoSchema, s)) ?? [],
    scores: summary?.scores ?? [],
  });
  ensureSeats(view, players - 1);
  return view;
}

/** The number of players at the table of a view. */
export function playersOf(view: SeatView): number {
  return view.ruleset?.players || view.seats.length || view.bids.length || 4;
}

export function partnerships(view: SeatView): boolean {
  return view.ruleset?.partnerships ?? playersOf(view) === 4;
}

function ensureSeats(view: SeatView, seat: number): void {
  for (let s = view.seats.length; s <= seat; s++) {
    view.seats.push(create(SeatInfoSchema, { seat: s, name: "", control: SeatControl.UNSPECIFIED }));
  }
  const n = view.seats.length;
  while (view.bids.length < n) view.bids.push(create(SeatBidSchema, {}));
  while (view.tricksWon.length < n) view.tricksWon.push(0);
  while (view.handSizes.length < n) view.handSizes.push(0);
  while (view.faceDown.length < n) view.faceDown.push(false);
}

/**
 * Applies one public event to a spectator's view, in place. What the events
 * do not say (whose turn it is during the bidding and the exchange) is left
 * as the rules make it plain, or unset (-1).
 */
export function applyPublicEvent(view: SeatView, event: MatchEvent): void {
  const k = event.kind;
  const n = (): number => Math.max(view.seats.length, 1);
  view.asOfSeq = event.seq;
  switch (k.case) {
    case "handStarted": {
      const h = k.value;
      view.handNumber = h.handNumber;
      view.dealer = h.dealer;
      ensureSeats(view, h.dealer);
      const players = n();
      view.phase = players === 2 ? Phase.DRAW : Phase.BIDDING;
      view.handSizes = Array.from({ length: players }, () => (players === 2 ? 0 : h.handSize));
      view.faceDown = Array.from({ length: players }, (_, s) => h.faceDown.includes(s));
      view.bids = Array.from({ length: players }, () => create(SeatBidSchema, {}));
      view.tricksWon = Array.from({ length: players }, () => 0);
      view.trick = [];
      view.tricks = [];
      view.leader = -1;
      view.toAct = (h.dealer + 1) % players;
      view.spadesBroken = false;
      view.trump = Suit.SPADES;
      view.trumpNamed = false;
      view.trumpNamer = -1;
      view.exchangeSeats = [];
      view.exchangeChosen = [];
      view.exchangeDecisions = [];
      break;
    }
    case "lookedAtCards":
      ensureSeats(view, k.value.seat);
      view.faceDown[k.value.seat] = false;
      break;
    case "drawTaken":
      ensureSeats(view, k.value.seat);
      view.handSizes[k.value.seat] = (view.handSizes[k.value.seat] ?? 0) + 1;
      view.toAct = (k.value.seat + 1) % n();
      break;
    case "bidMade": {
      const b = k.value;
      ensureSeats(view, b.seat);
      view.phase = Phase.BIDDING;
      view.bids[b.seat] = create(SeatBidSchema, { hasBid: true, tricks: b.tricks, blind: b.blind });
      view.faceDown[b.seat] = false;
      view.toAct = (b.seat + 1) % n();
      break;
    }
    case "biddingClosed":
      view.toAct = -1;
      break;
    case "trumpNamed":
      view.trump = k.value.suit;
      view.trumpNamed = true;
      view.trumpNamer = k.value.seat;
      break;
    case "exchangeDecided":
      view.exchangeDecisions.push(k.value);
      break;
    case "exchangeStarted":
      view.phase = Phase.EXCHANGE;
      view.exchangeSeats = [...k.value.seats];
      view.exchangeChosen = [];
      view.toAct = -1;
      break;
    case "cardsChosen":
      view.exchangeChosen.push(k.value.seat);
      break;
    case "cardPlayed": {
      const p = k.value;
      ensureSeats(view, p.seat);
      view.phase = Phase.PLAYING;
      if (view.trick.length === 0) {
        view.leader = p.seat;
      }
      if (p.card !== undefined) {
        view.trick.push(p.card);
        if (p.card.suit === view.trump) {
          view.spadesBroken = true;
        }
      }
      view.handSizes[p.seat] = Math.max(0, (view.handSizes[p.seat] ?? 0) - 1);
      if (p.seat === view.seat && p.card !== undefined) {
        const card = p.card;
        view.hand = view.hand.filter((c) => !sameCard(c, card));
      }
      view.toAct = (p.seat + 1) % n();
      break;
    }
    case "trickWon": {
      const t = k.value;
      ensureSeats(view, t.winner);
      view.tricks.push(create(TrickSchema, { leader: t.leader, cards: t.cards, winner: t.winner }));
      view.tricksWon[t.winner] = (view.tricksWon[t.winner] ?? 0) + 1;
      view.trick = [];
      view.leader = t.winner;
      view.toAct = t.winner;
      break;
    }
    case "handScored":
      view.results.push(create(HandResultSchema, { sides: k.value.sides }));
      view.scores = k.value.sides.map((s) => s.score);
      view.bags = k.value.sides.map((s) => s.bags);
      view.toAct = -1;
      break;
    case "matchEnded":
      view.phase = Phase.MATCH_OVER;
      view.winner = k.value.winner;
      view.scores = [...k.value.scores];
      view.toAct = -1;
      break;
    case "seatControlChanged":
      ensureSeats(view, k.value.seat);
      view.seats[k.value.seat]!.control = k.value.control;
      break;
    default:
      break; // private events never reach a spectator; chat neither
  }
}

/** Where each seat sits on screen, the viewer (or seat 0 for a spectator) at the bottom, clockwise. */
export type Place = "bottom" | "left" | "top" | "right" | "top-left" | "top-right";

export function places(players: number, bottom: number): Map<number, Place> {
  const layouts: Record<number, Place[]> = {
    2: ["bottom", "top"],
    3: ["bottom", "left", "right"],
    4: ["bottom", "left", "top", "right"],
    5: ["bottom", "left", "top-left", "top-right", "right"],
  };
  const layout = layouts[players] ?? layouts[4]!;
  const map = new Map<number, Place>();
  for (let i = 0; i < players; i++) {
    map.set((bottom + i) % players, layout[i] ?? "top");
  }
  return map;
}

/** The seats of a side: partners 0+2 and 1+3, or one seat in cutthroat. */
export function sideSeats(view: SeatView, side: number): number[] {
  return partnerships(view) ? [side, side + 2] : [side];
}

export function seatName(view: SeatView, seat: number): string {
  if (seat === view.seat && seat >= 0) {
    return t("you");
  }
  return view.seats[seat]?.name || t("seatNumber", { number: seat + 1 });
}

export function sideName(view: SeatView, side: number): string {
  const [a, b] = sideSeats(view, side).map((s) => seatName(view, s));
  return b === undefined ? (a ?? "") : t("pair", { a, b });
}

/** The side a seat plays for. */
export function sideOf(view: SeatView, seat: number): number {
  return partnerships(view) ? seat % 2 : seat;
}

/** The viewer's partner, or -1 (cutthroat, or a spectator). */
export function partnerOf(view: SeatView, seat: number): number {
  return partnerships(view) && seat >= 0 ? (seat + 2) % 4 : -1;
}

/** The number of sides: two teams, or one per player. */
export function sidesOf(view: SeatView): number {
  return partnerships(view) ? 2 : playersOf(view);
}
