// A hand's result (shown under the table, so its last trick stays in view)
// and the match's end, with a rematch, the leaderboard and a new match.
import { useEffect, useRef } from "preact/hooks";
import type { HandScored, SeatView } from "@spades/client";
import { t } from "../i18n.js";
import { partnerships, sideName } from "../model.js";
import { signed } from "./scores.js";

function Row(props: { label: string; cells: string[]; strong?: boolean; name: string }) {
  return (
    <tr class={props.strong ? "strong" : ""} data-row={props.name}>
      <th scope="row">{props.label}</th>
      {props.cells.map((c, i) => (
        <td key={i}>{c}</td>
      ))}
    </tr>
  );
}

export function ScoredDialog(props: { view: SeatView; scored: HandScored; onClose: () => void }) {
  const { view, scored } = props;
  const button = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    const a = document.activeElement;
    if (a === null || a === document.body || a.closest("[data-hand], [data-actions]") !== null) {
      button.current?.focus({ preventScroll: true });
    }
  }, [scored.handNumber]);
  const title = t("result.title", { hand: scored.handNumber + 1 });
  return (
    <section class="result" role="dialog" aria-modal="false" aria-label={title} data-dialog="hand-result" data-scored={scored.handNumber}>
      <h2>{title}</h2>
      <div class="table-scroll">
        <table>
          <thead>
            <tr>
              <th />
              {scored.sides.map((s) => (
                <th scope="col" key={s.side}>
                  {sideName(view, s.side)}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            <Row name="bid-won" label={t("result.bidWon")} cells={scored.sides.map((s) => `${s.contract} / ${s.tricks}`)} />
            <Row name="contract" label={t("result.contract")} cells={scored.sides.map((s) => signed(s.contractPoints))} />
            {scored.sides.some((s) => s.nilPoints !== 0) ? <Row name="nil" label={t("result.nil")} cells={scored.sides.map((s) => signed(s.nilPoints))} /> : null}
            <Row name="bags" label={t("result.bags")} cells={scored.sides.map((s) => `${s.bagsTaken}${s.bagPenalty ? ` (${signed(s.bagPenalty)})` : ""}`)} />
            <Row name="hand" label={t("result.hand")} cells={scored.sides.map((s) => signed(s.handPoints))} strong />
            <Row name="score" label={t("result.score")} cells={scored.sides.map((s) => String(s.score))} strong />
          </tbody>
        </table>
      </div>
      <button type="button" class="strong" data-action="continue" ref={button} onClick={props.onClose}>
        {t("result.continue")}
      </button>
    </section>
  );
}

export function MatchOver(props: { view: SeatView; newMatch: () => void; rematch: (() => void) | undefined }) {
  const { view } = props;
  const mine = view.seat >= 0 ? (partnerships(view) ? view.seat % 2 : view.seat) : -1;
  const verdict = mine >= 0 && view.winner === mine ? t("over.youWin") : t("over.sideWins", { side: sideName(view, view.winner) });
  return (
    <section class="match-over" data-match-over aria-live="polite">
      <h2>{verdict}</h2>
      <p>{t("over.final", { scores: view.scores.join(" : ") })}</p>
      <div class="buttons">
        {props.rematch !== undefined ? (
          <button type="button" class="strong" data-action="rematch" onClick={props.rematch}>
            {t("over.rematch")}
          </button>
        ) : null}
        <button type="button" data-action="new-match" onClick={props.newMatch}>
          {t("over.newMatch")}
        </button>
        <a href="#/leaderboard" class="button-link" data-action="leaderboard">
          {t("over.leaderboard")}
        </a>
      </div>
    </section>
  );
}
