// What the lobby's pages share: the header (links, language), the presets,
// a copy button, the seat words, and small formatting helpers.
import { useState } from "preact/hooks";
import { BotLevel, TableSeatState, type Table } from "@spades/client";
import { language, t } from "../i18n.js";
import { LanguagePicker } from "../table.js";
import { PresetRules } from "../table/rules-panel.js";
import "./lobby.css";

export const PRESET_IDS = ["classic", "polish", "german", "bulgarian"] as const;
export type PresetId = (typeof PRESET_IDS)[number];

export function presetName(id: string): string {
  return (PRESET_IDS as readonly string[]).includes(id) || id === "all" ? t(`lobby:presets.${id}.name`) : id;
}

export function go(hash: string): void {
  window.location.hash = hash;
}

/** The page's header: the title, the links to the lobby, leaderboard and profile, and the language. */
export function LobbyHeader(props: { title?: string }) {
  return (
    <header class="lobby-header">
      <p class="brand">
        <a href="#/" data-action="home">
          <span class="logo" aria-hidden="true">
            ♠
          </span>{" "}
          {t("lobby:brand")}
        </a>
      </p>
      <nav aria-label={t("lobby:nav.label")}>
        <a href="#/leaderboard" data-action="leaderboard">
          {t("lobby:nav.leaderboard")}
        </a>
        <a href="#/profile" data-action="profile">
          {t("lobby:nav.profile")}
        </a>
        <LanguagePicker />
      </nav>
      {props.title !== undefined ? <h1>{props.title}</h1> : null}
    </header>
  );
}

/** A button that copies a text and says so (with a fallback: the text is selected for a manual copy). */
export function CopyButton(props: { text: string; label: string; what: string }) {
  const [done, setDone] = useState<"copied" | "failed" | undefined>(undefined);
  const copy = async (): Promise<void> => {
    try {
      await navigator.clipboard.writeText(props.text);
      setDone("copied");
    } catch {
      setDone("failed");
    }
    setTimeout(() => setDone(undefined), 2500);
  };
  return (
    <button type="button" class="copy" data-action={`copy-${props.what}`} data-copy={props.text} onClick={() => void copy()}>
      {done === "copied" ? t("lobby:copy.copied") : done === "failed" ? t("lobby:copy.failed") : props.label}
    </button>
  );
}

/** A seat's name as the lobby shows it. */
export function seatLabel(table: Table, seat: number): string {
  const s = table.seats[seat];
  if (s === undefined || s.state === TableSeatState.OPEN) return t("lobby:seat.open");
  if (s.state === TableSeatState.BOT) return s.name || t("lobby:seat.bot");
  return s.name || s.playerId;
}

/** The seats taken (players and bots) of a table. */
export function seatsTaken(table: Table): number {
  return table.seats.filter((s) => s.state !== TableSeatState.OPEN).length;
}

/** Where a seat sits from another's point of view (partners opposite at four). */
export function seatWord(n: number, from: number, seat: number): string {
  const d = (((seat - from) % n) + n) % n;
  if (d === 0) return t("lobby:seat.you");
  if (n === 4) return t(`lobby:seat.rel4_${d}`);
  return t("lobby:seat.number", { n: seat + 1 });
}

export const BOT_LEVELS: { level: BotLevel; key: string }[] = [
  { level: BotLevel.RANDOM, key: "random" },
  { level: BotLevel.EASY, key: "easy" },
  { level: BotLevel.NORMAL, key: "normal" },
  { level: BotLevel.HARD, key: "hard" },
  { level: BotLevel.EXPERT, key: "expert" },
];

export function percent(share: number): string {
  return new Intl.NumberFormat(language(), { style: "percent", maximumFractionDigits: 0 }).format(share);
}

export function decimal(n: number, digits = 1): string {
  return new Intl.NumberFormat(language(), { maximumFractionDigits: digits, minimumFractionDigits: digits }).format(n);
}

/** The four presets as chips, the chosen one's line and its rules (Play now, Open a table). */
export function PresetChoice(props: { name: string; preset: PresetId; onChange: (preset: PresetId) => void; disabled: boolean }) {
  const { name, preset } = props;
  return (
    <fieldset disabled={props.disabled}>
      <legend>{t("lobby:rules")}</legend>
      <div class="chips">
        {PRESET_IDS.map((p) => (
          <label class="chip-choice" key={p}>
            <input type="radio" name={name} value={p} checked={preset === p} onChange={() => props.onChange(p)} />
            <span>{presetName(p)}</span>
          </label>
        ))}
      </div>
      <p class="note">{t(`lobby:presets.${preset}.about`)}</p>
      <PresetRules preset={preset} />
    </fieldset>
  );
}
