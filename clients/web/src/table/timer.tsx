// The turn timer's countdown on the seat to act: seconds left, as a bar and a
// number (announced once, when ten seconds remain, not every second).
import { useEffect, useState } from "preact/hooks";
import { t } from "../i18n.js";

export function Countdown(props: { since: number; total: number }) {
  // The first drawing's time stands in for an unknown start (a reload between events).
  const [mounted] = useState(Date.now());
  const [, tick] = useState(0);
  useEffect(() => {
    const id = setInterval(() => tick((n) => n + 1), 250);
    return () => clearInterval(id);
  }, []);
  const start = props.since > 0 ? props.since : mounted;
  const left = Math.min(props.total, Math.max(0, props.total - (Date.now() - start)));
  const seconds = Math.ceil(left / 1000);
  const share = props.total > 0 ? left / props.total : 0;
  return (
    <div class={`countdown${seconds <= 10 ? " low" : ""}`} data-countdown={seconds} role="timer" aria-label={t("timer.left", { count: seconds })}>
      <span class="bar" style={{ width: `${Math.round(share * 100)}%` }} />
      <span class="secs" aria-hidden="true">
        {seconds}
      </span>
    </div>
  );
}
