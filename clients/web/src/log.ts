// The table's story, one line per event: bids, cards, tricks, scores.
import { SeatControl, type MatchEvent, type SeatView } from "@spades/client";
import { cardText, suitName } from "./cards.js";
import { seatName, sideName } from "./model.js";

export interface LogEntry {
  /** The event's sequence number (each appears once in a log). */
  readonly seq: string;
  readonly text: string;
  /** For styling: "bid", "card", "trick", "score", "chat", "info". */
  readonly kind: string;
}

function bidText(tricks: number, blind: boolean): string {
  if (blind) {
    return "blind nil";
  }
  return tricks === 0 ? "nil" : String(tricks);
}

function verb(view: SeatView, seat: number, you: string, other: string): string {
  return seat === view.seat ? you : other;
}

/** The log line of an event, or undefined for the events not worth a line. */
export function describe(view: SeatView, event: MatchEvent): LogEntry | undefined {
  const k = event.kind;
  const who = (seat: number): string => seatName(view, seat);
  const line = (text: string, kind: string): LogEntry => ({ seq: String(event.seq), text, kind });
  switch (k.case) {
    case "handStarted": {
      const down = k.value.faceDown.map(who);
      return line(
        `Hand ${k.value.handNumber + 1}: ${who(k.value.dealer)} ${verb(view, k.value.dealer, "deal", "deals")}` +
          (down.length > 0 ? `; face down: ${down.join(", ")}` : ""),
        "info",
      );
    }
    case "handShown":
      return line(`You see your ${k.value.cards.length} cards`, "info");
    case "lookedAtCards":
      return line(`${who(k.value.seat)} ${verb(view, k.value.seat, "look", "looks")} at the cards`, "bid");
    case "bidMade":
      return line(`${who(k.value.seat)} ${verb(view, k.value.seat, "bid", "bids")} ${bidText(k.value.tricks, k.value.blind)}`, "bid");
    case "biddingClosed":
      return line(`Bidding closed; contracts ${k.value.contracts.join(" / ")}`, "bid");
    case "exchangeDecided":
      return line(
        `${who(k.value.seat)} ${k.value.exchange ? verb(view, k.value.seat, "take", "takes") : verb(view, k.value.seat, "decline", "declines")} the exchange`,
        "bid",
      );
    case "exchangeStarted":
      return line(`Exchange: ${k.value.seats.map(who).join(", ")} pass ${k.value.cardsEach} cards each`, "bid");
    case "cardsChosen":
      return line(`${who(k.value.seat)} ${verb(view, k.value.seat, "choose", "chooses")} cards to pass`, "bid");
    case "cardsPassed":
      return line(`${who(k.value.fromSeat)} passed ${k.value.cards.map(cardText).join(" ")} to ${who(k.value.toSeat)}`, "bid");
    case "trumpNamed":
      return line(`${who(k.value.seat)} ${verb(view, k.value.seat, "name", "names")} ${suitName(k.value.suit)} trump`, "bid");
    case "cardsDrawn": {
      const kept = k.value.kept;
      const gone = k.value.discarded;
      return line(`You keep ${kept ? cardText(kept) : "?"} and discard ${gone ? cardText(gone) : "?"}`, "info");
    }
    case "drawTaken":
      return line(`${who(k.value.seat)} ${verb(view, k.value.seat, "draw", "draws")}`, "info");
    case "cardPlayed":
      return line(`${who(k.value.seat)} ${verb(view, k.value.seat, "play", "plays")} ${k.value.card ? cardText(k.value.card) : "?"}`, "card");
    case "trickWon":
      return line(`${who(k.value.winner)} ${verb(view, k.value.winner, "win", "wins")} trick ${k.value.trickNumber}`, "trick");
    case "handScored":
      return line(
        `Hand ${k.value.handNumber + 1} scored: ` +
          k.value.sides.map((s) => `${sideName(view, s.side)} ${s.handPoints >= 0 ? "+" : ""}${s.handPoints} (${s.score})`).join(", "),
        "score",
      );
    case "matchEnded":
      return line(`Match over: ${sideName(view, k.value.winner)} ${k.value.scores.join(" to ")}`, "score");
    case "seatControlChanged": {
      const c = k.value.control;
      const why = k.value.reason === "turn_timer" ? " (out of time)" : k.value.reason === "left" ? " (left)" : "";
      const seat = k.value.seat;
      if (c === SeatControl.HUMAN) {
        return line(seat === view.seat ? "You take your seat" : `${who(seat)} takes the seat`, "info");
      }
      if (c === SeatControl.BOT_STANDING_IN) {
        return line(`A bot plays for ${seat === view.seat ? "you" : who(seat)}${why}`, "info");
      }
      return line(`${who(seat)}'s seat is ${c === SeatControl.OPEN ? "empty" : "a bot's"}${why}`, "info");
    }
    case "chatMessage":
      return line(`${who(k.value.seat)}: ${k.value.text}`, "chat");
    default:
      return undefined;
  }
}
