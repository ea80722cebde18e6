// The table's story, one line per event: bids, cards, tricks, scores. A line
// is kept as a message key and its values (seats as numbers, cards as their
// record codes), not as text, so it reads in whatever language the page is
// in now, and a reload in another language tells the same story.
import { SeatControl, type MatchEvent, type SeatView } from "@spades/client";
import { cardFromCode, cardCode, cardText, suitName } from "./cards.js";
import { t } from "./i18n.js";
import { seatName, sideName } from "./model.js";

/** A value of a line: a seat, a side, a card, cards, a suit, a number or a text. */
export type LogValue =
  | { readonly seat: number }
  | { readonly side: number }
  | { readonly card: string }
  | { readonly cards: readonly string[] }
  | { readonly suit: number }
  | number
  | string;

export interface LogEntry {
  /** The event's sequence number (each appears once in a log). */
  readonly seq: string;
  /** For styling: "bid", "card", "trick", "score", "chat", "info". */
  readonly kind: string;
  /** The message's key in the ui namespace, under log. */
  readonly msg: string;
  /** The seat whose action it is, for the "you" form of the message. */
  readonly actor?: number;
  readonly values: Readonly<Record<string, LogValue>>;
  /** Per-side parts of a score line: [side, hand points, score]. */
  readonly sides?: readonly (readonly [number, number, number])[];
}

function valueText(view: SeatView, v: LogValue): string | number {
  if (typeof v === "number" || typeof v === "string") return v;
  if ("seat" in v) return seatName(view, v.seat);
  if ("side" in v) return sideName(view, v.side);
  if ("card" in v) return cardLabel(v.card);
  if ("cards" in v) return v.cards.map(cardLabel).join(" ");
  return suitName(v.suit);
}

function cardLabel(code: string): string {
  const c = cardFromCode(code);
  return c === undefined ? "?" : cardText(c);
}

function signed(n: number): string {
  return n >= 0 ? `+${n}` : String(n);
}

/** A log line in the page's language, as the viewer of `view` reads it. */
export function logText(view: SeatView, e: LogEntry): string {
  const values: Record<string, string | number> = {};
  for (const [k, v] of Object.entries(e.values)) values[k] = valueText(view, v);
  if (e.sides !== undefined) {
    values["sides"] = e.sides.map(([side, points, score]) => t("log.sideScore", { side: sideName(view, side), points: signed(points), score })).join(", ");
  }
  const you = e.actor !== undefined && e.actor === view.seat && view.seat >= 0;
  return t(`log.${e.msg}`, { ...values, ...(you ? { context: "you" } : {}) });
}

function bidValue(tricks: number, blind: boolean): string {
  if (blind) return t("bid.blindNil");
  return tricks === 0 ? t("bid.nil") : String(tricks);
}

/** The log line of an event, or undefined for the events not worth a line. */
export function describe(view: SeatView, event: MatchEvent): LogEntry | undefined {
  const k = event.kind;
  const seq = String(event.seq);
  const line = (kind: string, msg: string, values: Record<string, LogValue>, actor?: number): LogEntry => ({
    seq,
    kind,
    msg,
    values,
    ...(actor !== undefined ? { actor } : {}),
  });
  switch (k.case) {
    case "handStarted": {
      const h = k.value;
      const base = { hand: h.handNumber + 1, who: { seat: h.dealer } };
      return h.faceDown.length > 0
        ? line("info", "dealFaceDown", { ...base, down: h.faceDown.map((s) => seatName(view, s)).join(", ") }, h.dealer)
        : line("info", "deal", base, h.dealer);
    }
    case "handShown":
      return line("info", "handShown", { count: k.value.cards.length });
    case "lookedAtCards":
      return line("bid", "look", { who: { seat: k.value.seat } }, k.value.seat);
    case "bidMade":
      return line("bid", "bid", { who: { seat: k.value.seat }, bid: bidValue(k.value.tricks, k.value.blind) }, k.value.seat);
    case "biddingClosed":
      return line("bid", "biddingClosed", { contracts: k.value.contracts.join(" / ") });
    case "exchangeDecided":
      return line("bid", k.value.exchange ? "exchangeTake" : "exchangeDecline", { who: { seat: k.value.seat } }, k.value.seat);
    case "exchangeStarted":
      return line("bid", "exchangeStarted", { seats: k.value.seats.map((s) => seatName(view, s)).join(", "), count: k.value.cardsEach });
    case "cardsChosen":
      return line("bid", "cardsChosen", { who: { seat: k.value.seat } }, k.value.seat);
    case "cardsPassed":
      return line("bid", "cardsPassed", { from: { seat: k.value.fromSeat }, to: { seat: k.value.toSeat }, cards: { cards: k.value.cards.map(cardCode) } }, k.value.fromSeat);
    case "trumpNamed":
      return line("bid", "trumpNamed", { who: { seat: k.value.seat }, suit: { suit: k.value.suit } }, k.value.seat);
    case "cardsDrawn": {
      const { kept, discarded } = k.value;
      return line("info", "drawn", { kept: kept ? { card: cardCode(kept) } : "?", gone: discarded ? { card: cardCode(discarded) } : "?" });
    }
    case "drawTaken":
      return line("info", "draw", { who: { seat: k.value.seat } }, k.value.seat);
    case "cardPlayed":
      return line("card", "play", { who: { seat: k.value.seat }, card: k.value.card ? { card: cardCode(k.value.card) } : "?" }, k.value.seat);
    case "trickWon":
      return line("trick", "trick", { who: { seat: k.value.winner }, number: k.value.trickNumber }, k.value.winner);
    case "handScored":
      return {
        ...line("score", "handScored", { hand: k.value.handNumber + 1 }),
        sides: k.value.sides.map((s) => [s.side, s.handPoints, s.score] as const),
      };
    case "matchEnded":
      return line("score", "matchEnded", { side: { side: k.value.winner }, scores: k.value.scores.join(" : ") });
    case "seatControlChanged": {
      const c = k.value.control;
      const why = k.value.reason === "turn_timer" ? "Timer" : k.value.reason === "left" ? "Left" : "";
      const seat = k.value.seat;
      if (c === SeatControl.HUMAN) return line("info", "seatTaken", { who: { seat } }, seat);
      if (c === SeatControl.BOT_STANDING_IN) return line("info", `standIn${why}`, { who: { seat } }, seat);
      return line("info", c === SeatControl.OPEN ? "seatEmpty" : "seatBot", { who: { seat } });
    }
    case "chatMessage":
      return line("chat", "chat", { who: { seat: k.value.seat }, text: k.value.text });
    default:
      return undefined;
  }
}
