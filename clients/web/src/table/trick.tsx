// The middle of the table: the trick in progress, each card in front of its
// player, sliding in from that player's side; a finished trick slides toward
// its winner and stays, dimmed, until the next card is led (so the last trick
// of a hand is seen). The previous trick can be reviewed at any time.
import { useState } from "preact/hooks";
import { Phase, type SeatView, type Trick } from "@spades/client";
import { cardCode, cardName } from "../cards.js";
import { CardFace } from "../deck.js";
import { t } from "../i18n.js";
import { playersOf, seatName, type Place } from "../model.js";
import { topTrump } from "./rules.js";

export function Center(props: { view: SeatView; where: Map<number, Place> }) {
  const { view, where } = props;
  const n = playersOf(view);
  const live = view.trick.length > 0;
  const last = view.tricks.at(-1);
  const cards = live ? view.trick : (last?.cards ?? []);
  const leader = live ? view.leader : (last?.leader ?? 0);
  const toward = !live && last !== undefined ? (where.get(last.winner) ?? "top") : undefined;
  const caption = live
    ? t("trick.led", { who: seatName(view, view.leader) })
    : last !== undefined
      ? t("trick.wonBy", { number: view.tricks.length, who: seatName(view, last.winner) })
      : view.phase === Phase.PLAYING && view.toAct >= 0
        ? t("trick.toLead", { who: seatName(view, view.toAct) })
        : "";
  return (
    <div
      class={`center${live ? "" : " settled"}${toward !== undefined ? ` toward-${toward}` : ""}`}
      data-trick={live ? "live" : last !== undefined ? "last" : "empty"}
      role="group"
      aria-label={t("trick.label")}
    >
      {cards.map((c, i) => {
        const seat = (leader + i) % n;
        const won = !live && last !== undefined && seat === last.winner;
        return (
          <div
            class={`played at-${where.get(seat) ?? "top"}${won ? " won" : ""}`}
            key={cardCode(c)}
            data-card={cardCode(c)}
            data-seat={seat}
            role="img"
            aria-label={t("trick.played", { who: seatName(view, seat), card: cardName(c) })}
          >
            <CardFace card={c} trump={view.trump} topTrump={topTrump(view, c)} />
          </div>
        );
      })}
      <div class="caption" aria-hidden="true">
        {caption}
      </div>
    </div>
  );
}

/** The previous finished trick, on demand: who played what, who won it. */
export function LastTrick(props: { view: SeatView }) {
  const { view } = props;
  const [open, setOpen] = useState(false);
  const n = playersOf(view);
  // While a trick is being played the last finished one is tricks.at(-1); between tricks it is on the table already, so show the one before.
  const trick: Trick | undefined = view.trick.length > 0 ? view.tricks.at(-1) : view.tricks.at(-2);
  const number = view.trick.length > 0 ? view.tricks.length : view.tricks.length - 1;
  if (trick === undefined) {
    return null;
  }
  return (
    <div class="last-trick">
      <button type="button" class="link-button" aria-expanded={open ? "true" : "false"} data-action="last-trick" onClick={() => setOpen(!open)}>
        {open ? t("trick.hideLast") : t("trick.showLast")}
      </button>
      {open ? (
        <ol class="last-trick-cards" data-last-trick={number} aria-label={t("trick.number", { number })}>
          {trick.cards.map((c, i) => {
            const seat = (trick.leader + i) % n;
            return (
              <li key={cardCode(c)} class={seat === trick.winner ? "won" : ""} data-card={cardCode(c)}>
                <CardFace card={c} trump={view.trump} topTrump={topTrump(view, c)} />
                <span>
                  {seatName(view, seat)}
                  {seat === trick.winner ? ` · ${t("trick.winner")}` : ""}
                </span>
                <span class="sr-only">{cardName(c)}</span>
              </li>
            );
          })}
        </ol>
      ) : null}
    </div>
  );
}
