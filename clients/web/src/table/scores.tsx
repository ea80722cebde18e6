// The score, always on the table: each side's combined bid against the tricks
// it has won this hand, its bags toward the penalty, its score and the target;
// the per-hand history below, in the same order of columns as the hand's
// result (bid, won, hand points, score); and this hand's tricks.
import type { SeatView } from "@spades/client";
import { cardCode, cardName, cardText, isRed } from "../cards.js";
import { t } from "../i18n.js";
import { playersOf, seatName, sideName, sideOf, sideSeats, sidesOf } from "../model.js";
import { bagLimit } from "./rules.js";

/** A side's bid this hand (nil counts 0; undefined until one of its seats has bid) and tricks won. */
export function sideBidWon(view: SeatView, side: number): { bid: number | undefined; won: number } {
  let bid: number | undefined;
  let won = 0;
  for (const s of sideSeats(view, side)) {
    const b = view.bids[s];
    if (b?.hasBid) bid = (bid ?? 0) + b.tricks;
    won += view.tricksWon[s] ?? 0;
  }
  return { bid, won };
}

export function signed(n: number): string {
  return `${n > 0 ? "+" : ""}${n}`;
}

export function SidesBar(props: { view: SeatView }) {
  const { view } = props;
  const sides = sidesOf(view);
  const limit = bagLimit(view);
  const target = view.ruleset?.targetScore ?? 0;
  const mine = view.seat >= 0 ? sideOf(view, view.seat) : -1;
  return (
    <section class={`sides sides-${sides}`} data-sides aria-label={t("sides.label")}>
      {Array.from({ length: sides }, (_, side) => {
        const { bid, won } = sideBidWon(view, side);
        const bags = view.bags[side] ?? 0;
        const score = view.scores[side] ?? 0;
        return (
          <div class={`side${side === mine ? " mine" : ""}`} key={side} data-side={side} data-side-bid={bid ?? ""} data-side-won={won}>
            <div class="side-name">{sideName(view, side)}</div>
            {/* Bid before won, as in the hand's result and the score history. */}
            <div class="side-count" aria-hidden="true">
              <span class="label">{t("seat.bid")}</span> <b class="bid">{bid ?? "–"}</b> <span class="label">{t("seat.won")}</span> <b class="won">{won}</b>
            </div>
            <span class="sr-only">{t("sides.bidWon", { bid: bid ?? "–", won })}</span>
            <div class="side-meta">
              <span title={t("sides.score")}>
                {t("sides.scoreShort", { score, target })}
              </span>
              {limit > 0 ? <span class="bags">{t("sides.bagsOf", { bags, limit })}</span> : <span class="bags">{t("sides.bags", { count: bags })}</span>}
            </div>
          </div>
        );
      })}
    </section>
  );
}

export function Scoreboard(props: { view: SeatView }) {
  const { view } = props;
  const sides = sidesOf(view);
  return (
    <section class="scores" data-scores>
      <h2>{t("scores.title")}</h2>
      <div class="table-scroll">
        <table>
          <thead>
            <tr>
              <th scope="col">{t("scores.hand")}</th>
              {Array.from({ length: sides }, (_, s) => (
                <th scope="col" key={s}>
                  {sideName(view, s)}
                </th>
              ))}
            </tr>
            <tr class="sub">
              <th />
              {Array.from({ length: sides }, (_, s) => (
                <th key={s} class="cols">
                  {t("scores.columns")}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {view.results.map((r, i) => (
              <tr key={i} data-result={i}>
                <th scope="row">{i + 1}</th>
                {r.sides.map((s) => (
                  <td key={s.side}>
                    <span class="bw">
                      {s.contract}/{s.tricks}
                    </span>{" "}
                    <span class="pts">{signed(s.handPoints)}</span> <b>{s.score}</b>
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
          <tfoot>
            <tr>
              <th scope="row">{t("scores.total")}</th>
              {Array.from({ length: sides }, (_, s) => (
                <th key={s} data-score={s}>
                  {view.scores[s] ?? 0}
                  {view.bags[s] ? <small> · {t("sides.bags", { count: view.bags[s] })}</small> : null}
                </th>
              ))}
            </tr>
          </tfoot>
        </table>
      </div>
      {view.ruleset !== undefined ? <p class="fine">{t("rules:target", { score: view.ruleset.targetScore })}</p> : null}
    </section>
  );
}

/** This hand's finished tricks, each card with who played it. */
export function History(props: { view: SeatView }) {
  const { view } = props;
  const n = playersOf(view);
  if (view.tricks.length === 0) {
    return null;
  }
  return (
    <section class="history" data-history>
      <h2>{t("history.title")}</h2>
      <ol>
        {view.tricks.map((tr, i) => (
          <li key={i} data-trick-number={i + 1}>
            {tr.cards.map((c, j) => {
              const seat = (tr.leader + j) % n;
              return (
                <span
                  class={`mini${seat === tr.winner ? " won" : ""}${isRed(c) ? " red" : ""}`}
                  key={j}
                  data-card={cardCode(c)}
                  data-seat={seat}
                  title={seatName(view, seat)}
                  aria-label={t("trick.played", { who: seatName(view, seat), card: cardName(c) })}
                >
                  {cardText(c)}
                </span>
              );
            })}
            <span class="winner">→ {seatName(view, tr.winner)}</span>
          </li>
        ))}
      </ol>
    </section>
  );
}
