// What the seat may do now, as buttons: the actions the server lists
// (SeatView.legal_actions), sorted by legal.ts. Cards are played from the hand.
import { useEffect, useRef } from "preact/hooks";
import { Phase, type ActionInit, type SeatView } from "@spades/client";
import { cardCode, cardText, suitName, suitSymbol } from "../cards.js";
import { t } from "../i18n.js";
import type { Legal } from "../legal.js";
import { seatName } from "../model.js";
import { focusIsFree } from "./hand.js";

/** Sends an action for the seat; `key` marks what is being sent (a card code, "bid-3"). */
export type Act = (action: ActionInit, key: string) => void;

export function ActionBar(props: {
  view: SeatView;
  legal: Legal;
  selected: ReadonlySet<string>;
  sending: string | undefined;
  act: Act;
  clearSelection: () => void;
  holding: boolean;
}) {
  const { view, legal, selected, sending, act } = props;
  const busy = sending !== undefined;
  const box = useRef<HTMLElement>(null);
  const decision = legal.bids.length > 0 || legal.blindNil || legal.draws.length > 0 || legal.decisions.length > 0 || legal.trumps.length > 0;
  // A decision to make: its first button takes the focus (unless it is busy elsewhere).
  useEffect(() => {
    if (!decision || !focusIsFree()) return;
    box.current?.querySelector<HTMLButtonElement>("button:not([disabled])")?.focus({ preventScroll: true });
  }, [decision, view.handNumber, legal.bids.length]);

  const rows = [];
  if (legal.draws.length > 0) {
    const top = view.stockTop;
    rows.push(
      <div class="prompt" key="draw">
        <p>{top !== undefined ? t("act.drawTop", { card: cardText(top), count: view.stockSize }) : t("act.drawHidden", { count: view.stockSize })}</p>
        {legal.draws.includes(true) ? (
          <button type="button" data-action="draw-keep" disabled={busy} onClick={() => act({ kind: { case: "draw", value: { keep: true } } }, "draw-keep")}>
            {t("act.keep")}
          </button>
        ) : null}
        {legal.draws.includes(false) ? (
          <button type="button" data-action="draw-next" disabled={busy} onClick={() => act({ kind: { case: "draw", value: { keep: false } } }, "draw-next")}>
            {t("act.discard")}
          </button>
        ) : null}
      </div>,
    );
  }
  if (legal.blindNil || legal.look) {
    rows.push(
      <div class="prompt" key="blind">
        <p>{t("act.blindPrompt")}</p>
        {legal.blindNil ? (
          <button type="button" class="strong" data-action="blind-nil" disabled={busy} onClick={() => act({ kind: { case: "blindNil", value: {} } }, "blind-nil")}>
            {t("bid.blindNilButton")}
          </button>
        ) : null}
        {legal.look ? (
          <button type="button" data-action="look" disabled={busy} onClick={() => act({ kind: { case: "look", value: {} } }, "look")}>
            {t("act.look")}
          </button>
        ) : null}
      </div>,
    );
  }
  if (legal.bids.length > 0) {
    rows.push(
      <div class="prompt" key="bid">
        <p id="bid-prompt">{t("act.bidPrompt")}</p>
        <div class="bids" role="group" aria-labelledby="bid-prompt">
          {legal.bids.map((n) => (
            <button
              type="button"
              key={n}
              class={n === 0 ? "nil" : ""}
              data-action={`bid-${n}`}
              disabled={busy}
              aria-label={n === 0 ? t("bid.nilLong") : t("bid.tricks", { count: n })}
              onClick={() => act({ kind: { case: "bid", value: { tricks: n } } }, `bid-${n}`)}
            >
              {n === 0 ? t("bid.nilButton") : n}
            </button>
          ))}
        </div>
      </div>,
    );
  }
  if (legal.decisions.length > 0) {
    rows.push(
      <div class="prompt" key="decide">
        <p>{t("act.exchangePrompt")}</p>
        {legal.decisions.includes(true) ? (
          <button type="button" data-action="exchange-take" disabled={busy} onClick={() => act({ kind: { case: "exchangeDecision", value: { exchange: true } } }, "exchange-take")}>
            {t("act.exchangeTake")}
          </button>
        ) : null}
        {legal.decisions.includes(false) ? (
          <button type="button" data-action="exchange-decline" disabled={busy} onClick={() => act({ kind: { case: "exchangeDecision", value: { exchange: false } } }, "exchange-decline")}>
            {t("act.exchangeDecline")}
          </button>
        ) : null}
      </div>,
    );
  }
  if (legal.passCount > 0) {
    const chosen = view.hand.filter((c) => selected.has(cardCode(c)));
    rows.push(
      <div class="prompt" key="pass">
        <p>{t("act.passPrompt", { count: legal.passCount, chosen: chosen.length })}</p>
        <button
          type="button"
          class="strong"
          data-action="pass"
          disabled={busy || chosen.length !== legal.passCount}
          onClick={() => {
            act({ kind: { case: "passCards", value: { cards: chosen } } }, "pass");
            props.clearSelection();
          }}
        >
          {chosen.length > 0 ? t("act.passThese", { cards: chosen.map(cardText).join(" ") }) : t("act.pass")}
        </button>
      </div>,
    );
  }
  if (legal.trumps.length > 0) {
    rows.push(
      <div class="prompt" key="trump">
        <p>{t("act.trumpPrompt")}</p>
        {legal.trumps.map((s) => (
          <button type="button" key={s} data-action={`trump-${["none", "clubs", "diamonds", "hearts", "spades"][s] ?? s}`} disabled={busy} onClick={() => act({ kind: { case: "nameTrump", value: { suit: s } } }, `trump-${s}`)}>
            {suitSymbol(s)} {suitName(s)}
          </button>
        ))}
      </div>,
    );
  }
  if (legal.play.size > 0) {
    rows.push(
      <div class="prompt quiet" key="play">
        <p>{t("act.playPrompt")}</p>
      </div>,
    );
  }
  if (rows.length === 0 && view.phase !== Phase.MATCH_OVER) {
    const text = props.holding
      ? t("act.handOver")
      : view.phase === Phase.EXCHANGE
        ? t("act.waitExchange")
        : view.toAct >= 0
          ? t("act.waitFor", { who: seatName(view, view.toAct) })
          : t("act.waitTable");
    rows.push(
      <div class="prompt quiet" key="wait">
        <p>{text}</p>
      </div>,
    );
  }
  return (
    <section class="actions" ref={box} data-actions={legal.any ? "yours" : "waiting"} aria-label={t("act.label")}>
      {rows}
    </section>
  );
}
