// What a screen reader hears as the game goes: each new line of the table's
// log (plays, tricks won, bids, scores) through one polite live region, and
// the player's turn. Lines that came before the page opened are not read.
import { useEffect, useRef, useState } from "preact/hooks";
import type { SeatView } from "@spades/client";
import { t } from "../i18n.js";
import { logText, type LogEntry } from "../log.js";

export function Announcer(props: { view: SeatView; log: readonly LogEntry[]; myTurn: boolean }) {
  const { view, log, myTurn } = props;
  const seen = useRef<string | undefined>(log.at(-1)?.seq);
  const [text, setText] = useState("");
  useEffect(() => {
    const start = seen.current === undefined ? 0 : log.findIndex((e) => e.seq === seen.current) + 1;
    const fresh = log.slice(start).filter((e) => e.kind !== "info" || e.msg.startsWith("standIn") || e.msg === "seatTaken");
    seen.current = log.at(-1)?.seq;
    const lines = fresh.map((e) => logText(view, e));
    if (myTurn) lines.push(t("live.yourTurn"));
    if (lines.length > 0) setText(lines.join(". "));
  }, [log.length, myTurn]);
  return (
    <div class="sr-only" role="status" aria-live="polite" aria-atomic="true" data-live>
      {text}
    </div>
  );
}
