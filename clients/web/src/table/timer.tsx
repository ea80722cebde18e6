// The turn timer's countdown on the seat to act: seconds left, as a bar and a
// number (announced once, when ten seconds remain, not every second).
import { useEffect, useState } from "preact/hooks";
import { t } from "../i18n.js";

export function Countdown(props: { since: number; total: number }) {
  const start = props.since > 0 ? props.since : Date.now();
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const id = setInterval(() => setNow(Date.now()), 250);
    return () => clearInterval(id);
  }, []);
  const left = Math.max(0, props.total - (now - start));
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
