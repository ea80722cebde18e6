// A seat at the table: who sits there (name, partner, bot or person, a person
// away while a bot stands in), the dealer, the bid (nil and blind nil marked),
// tricks won, the cards still held as backs, and the turn timer on the seat
// to act.
import { BotLevel, Phase, SeatControl, type SeatView } from "@spades/client";
import { CardBack } from "../deck.js";
import { t } from "../i18n.js";
import { partnerOf, seatName, type Place } from "../model.js";
import { Countdown } from "./timer.js";

const LEVEL: Record<number, string> = {
  [BotLevel.RANDOM]: "random",
  [BotLevel.EASY]: "easy",
  [BotLevel.NORMAL]: "normal",
  [BotLevel.HARD]: "hard",
  [BotLevel.EXPERT]: "expert",
};

/** The seat's bid for the table: "nil", "blind nil", a number, or waiting. */
export function bidLabel(view: SeatView, seat: number): string {
  const b = view.bids[seat];
  if (b === undefined || !b.hasBid) {
    return view.faceDown[seat] ? t("seat.faceDown") : "—";
  }
  if (b.blind) {
    return t("bid.blindNil");
  }
  return b.tricks === 0 ? t("bid.nil") : String(b.tricks);
}

/** Who plays the seat, in words: a bot and its level, a person away, an empty seat. */
export function controlLabel(view: SeatView, seat: number): { text: string; kind: string } {
  const info = view.seats[seat];
  switch (info?.control) {
    case SeatControl.BOT:
      return { text: t("seat.bot", { level: t(`level.${LEVEL[info.botLevel] ?? "normal"}`) }), kind: "bot" };
    case SeatControl.BOT_STANDING_IN:
      return { text: t("seat.away"), kind: "away" };
    case SeatControl.OPEN:
      return { text: t("seat.open"), kind: "open" };
    case SeatControl.HUMAN:
      return { text: "", kind: "human" };
    default:
      return { text: "", kind: "unknown" };
  }
}

export interface Timing {
  readonly turnTimerMs: number;
  readonly turnSince: number;
}

export function SeatBox(props: { view: SeatView; seat: number; place: Place; timing: Timing }) {
  const { view, seat, place, timing } = props;
  const toAct = view.toAct === seat && view.phase !== Phase.MATCH_OVER;
  const cards = view.handSizes[seat] ?? 0;
  const mine = seat === view.seat;
  const partner = partnerOf(view, view.seat) === seat;
  const control = controlLabel(view, seat);
  const bid = view.bids[seat];
  const nil = bid?.hasBid === true && bid.tricks === 0;
  const name = seatName(view, seat);
  const label = [
    name,
    partner ? t("seat.partner") : "",
    control.text,
    view.dealer === seat ? t("seat.dealer") : "",
    t("seat.bidWon", { bid: bidLabel(view, seat), won: view.tricksWon[seat] ?? 0 }),
    mine ? "" : t("seat.cards", { count: cards }),
    toAct ? t("seat.toAct") : "",
  ]
    .filter((s) => s !== "")
    .join(", ");
  return (
    <div
      class={`seat seat-${place}${toAct ? " to-act" : ""}${partner ? " partner" : ""} control-${control.kind}`}
      data-seat={seat}
      data-to-act={toAct ? "true" : "false"}
      data-control={control.kind}
      {...(partner ? { "data-partner": "true" } : {})}
      role="group"
      aria-label={label}
    >
      <div class="seat-name">
        <span class="name">{name}</span>
        {view.dealer === seat ? (
          <span class="chip dealer" title={t("seat.dealer")} aria-hidden="true">
            {t("seat.dealerChip")}
          </span>
        ) : null}
      </div>
      <div class="seat-tags" aria-hidden="true">
        {partner ? <span class="tag partner-tag">{t("seat.partner")}</span> : null}
        {control.text !== "" ? <span class={`tag tag-${control.kind}`}>{control.text}</span> : null}
        {nil ? <span class={`tag nil-tag${bid?.blind ? " blind" : ""}`} data-nil={bid?.blind ? "blind" : "nil"}>{bidLabel(view, seat)}</span> : null}
      </div>
      <div class="seat-stats" aria-hidden="true">
        <span data-bid={seat}>
          {t("seat.bid")} <b>{bidLabel(view, seat)}</b>
        </span>
        <span data-tricks={seat}>
          {t("seat.won")} <b>{view.tricksWon[seat] ?? 0}</b>
        </span>
      </div>
      {!mine && cards > 0 ? (
        <div class="backs" data-backs={cards} aria-hidden="true" title={t("seat.cards", { count: cards })}>
          {Array.from({ length: Math.min(cards, 13) }, (_, i) => (
            <CardBack key={i} className="mini-back" />
          ))}
          <span class="count">{cards}</span>
        </div>
      ) : null}
      {toAct && timing.turnTimerMs > 0 ? <Countdown since={timing.turnSince} total={timing.turnTimerMs} key={`${view.asOfSeq}`} /> : null}
    </div>
  );
}
