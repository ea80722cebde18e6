// The player's hand: real cards, sorted by suit, the playable ones raised.
// By keyboard it is one tab stop: the arrow keys move between the cards that
// may be played (all of them while choosing cards to pass), Home and End jump,
// Enter or Space plays; when the turn comes to the player, the first playable
// card takes the focus unless the focus is busy elsewhere (a field, a panel).
import { useEffect, useRef, useState } from "preact/hooks";
import type { Card, SeatView } from "@spades/client";
import { cardCode, cardName, sortHand } from "../cards.js";
import { CardBack, CardFace } from "../deck.js";
import { t } from "../i18n.js";
import type { Legal } from "../legal.js";
import { topTrump } from "./rules.js";

/** True when the focus is nowhere in particular, or already on the table's controls: taking it is no theft. */
export function focusIsFree(): boolean {
  const a = document.activeElement;
  return a === null || a === document.body || a.closest("[data-hand], [data-actions]") !== null;
}

export function Hand(props: {
  view: SeatView;
  legal: Legal;
  selected: ReadonlySet<string>;
  sending: string | undefined;
  onCard: (c: Card) => void;
}) {
  const { view, legal, selected, sending, onCard } = props;
  const box = useRef<HTMLDivElement>(null);
  const passing = legal.passCount > 0;
  const choosing = passing || legal.play.size > 0;
  const sorted = view.handVisible ? sortHand(view.hand, view.trump) : [];
  const usable = (c: Card): boolean => (passing ? legal.passable.has(cardCode(c)) : legal.play.has(cardCode(c)));
  const stops = sorted.filter((c) => !choosing || usable(c));
  const [focusCode, setFocusCode] = useState<string | undefined>(undefined);
  const current = stops.find((c) => cardCode(c) === focusCode) ?? stops[0];
  const playKey = [...legal.play].join(",");

  // The turn comes: the first playable card takes the focus (see focusIsFree).
  useEffect(() => {
    if (legal.play.size === 0 || !focusIsFree()) return;
    const first = box.current?.querySelector<HTMLButtonElement>('button[data-legal="true"]');
    first?.focus({ preventScroll: true });
  }, [playKey]);

  if (!view.handVisible) {
    const n = view.handSizes[view.seat] ?? 0;
    return (
      <div class="hand face-down" data-hand="face-down" role="img" aria-label={t("hand.faceDown", { count: n })}>
        {Array.from({ length: n }, (_, i) => (
          <span class="card back" key={i}>
            <CardBack />
          </span>
        ))}
      </div>
    );
  }

  const move = (e: KeyboardEvent): void => {
    const i = stops.findIndex((c) => current !== undefined && cardCode(c) === cardCode(current));
    let next = -1;
    if (e.key === "ArrowRight" || e.key === "ArrowDown") next = Math.min(stops.length - 1, i + 1);
    else if (e.key === "ArrowLeft" || e.key === "ArrowUp") next = Math.max(0, i - 1);
    else if (e.key === "Home") next = 0;
    else if (e.key === "End") next = stops.length - 1;
    if (next < 0) return;
    e.preventDefault();
    const c = stops[next];
    if (c === undefined) return;
    setFocusCode(cardCode(c));
    box.current?.querySelector<HTMLButtonElement>(`button[data-card="${cardCode(c)}"]`)?.focus();
  };

  return (
    <div class={`hand cards-${sorted.length}`} data-hand="visible" ref={box} role="group" aria-label={t("hand.label", { count: sorted.length })} onKeyDown={move}>
      {sorted.map((c) => {
        const code = cardCode(c);
        const ok = usable(c);
        const isStop = current !== undefined && cardCode(current) === code;
        const cls = ["card", choosing ? (ok ? "legal" : "illegal") : "", selected.has(code) ? "selected" : "", sending === code ? "sending" : ""].join(" ");
        const label = `${cardName(c)}${choosing && !ok ? `, ${t(passing ? "hand.notPassable" : "hand.notPlayable")}` : ""}`;
        return (
          <button
            type="button"
            class={cls}
            key={code}
            data-card={code}
            data-suit={String(c.suit)}
            data-legal={ok ? "true" : "false"}
            tabIndex={isStop ? 0 : -1}
            aria-disabled={ok ? "false" : "true"}
            aria-pressed={passing ? (selected.has(code) ? "true" : "false") : undefined}
            onFocus={() => setFocusCode(code)}
            onClick={() => onCard(c)}
          >
            <CardFace card={c} trump={view.trump} topTrump={topTrump(view, c)} />
            {/* The name as text, not aria-label: the face's corner letters are drawn, not the button's label (WCAG 2.5.3). */}
            <span class="sr-only">{label}</span>
          </button>
        );
      })}
    </div>
  );
}
