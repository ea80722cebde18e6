// "Practice against bots": a new match against bots (preset, variants, bot
// levels) through the web server's POST /api/new-match; under "Advanced",
// the seed and how the page's events come (stream or long-poll). And the
// form to watch a match by its id.
import { useState } from "preact/hooks";
import { BotLevel } from "@spades/client";
import { newMatch, type NewMatchRequest } from "../api.js";
import { problemOf, type Problem } from "../errors.js";
import { t } from "../i18n.js";
import { savedName } from "../player.js";
import { loadTransport, saveTransport, type Transport } from "../storage.js";
import { ProblemBox } from "../table.js";
import { PresetRules } from "../table/rules-panel.js";
import { BOT_LEVELS, PRESET_IDS, go, presetName } from "./common.js";

/** The bots' names (compass points, in the page's language), clockwise from the player's left, per table size. */
const BOT_NAMES: Record<number, string[]> = {
  2: ["north"],
  3: ["west", "east"],
  4: ["west", "north", "east"],
  5: ["west", "northwest", "northeast", "east"],
};

/** The bots' seats, clockwise from the player's left, per table size. */
const SEAT_KEYS: Record<number, string[]> = {
  2: ["opposite"],
  3: ["left", "right"],
  4: ["left", "partner", "right"],
  5: ["left", "farLeft", "farRight", "right"],
};

export function Practice(props: { onSeat: (matchId: string, seat: number, token: string) => void; defaultName: string | undefined }) {
  const [name, setName] = useState(props.defaultName ?? savedName() ?? t("lobby:identity.defaultName"));
  const [preset, setPreset] = useState("classic");
  const [players, setPlayers] = useState(4);
  const [levels, setLevels] = useState<number[]>([BotLevel.NORMAL, BotLevel.NORMAL, BotLevel.NORMAL, BotLevel.NORMAL]);
  const [target, setTarget] = useState(500);
  const [blindNil, setBlindNil] = useState(false);
  const [auctionTrump, setAuctionTrump] = useState(false);
  const [suicide, setSuicide] = useState(false);
  const [deucesHigh, setDeucesHigh] = useState(false);
  const [seed, setSeed] = useState("");
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Problem | undefined>(undefined);
  const [connection, setConnection] = useState(loadTransport);
  // Open from the start when this tab fell back to long-poll by itself (the fold says so); the player's to close after.
  const [advancedOpen] = useState(() => loadTransport().automatic);
  const choose = (tr: Transport): void => {
    saveTransport(tr);
    setConnection(loadTransport());
  };

  const cutthroat = preset === "german";
  const seatCount = cutthroat ? players : 4;
  const bots = SEAT_KEYS[seatCount] ?? SEAT_KEYS[4]!;

  const start = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    setProblem(undefined);
    const req: NewMatchRequest = {
      name: name.trim() || t("lobby:identity.defaultName"),
      preset,
      players: seatCount,
      botLevels: bots.map((_, i) => levels[i] ?? BotLevel.NORMAL),
      botNames: (BOT_NAMES[seatCount] ?? BOT_NAMES[4]!).map((k) => t(`compass.${k}`)),
      targetScore: target,
      ...(blindNil ? { blindNil } : {}),
      ...(auctionTrump ? { auctionTrump } : {}),
      ...(suicide ? { suicide } : {}),
      ...(deucesHigh ? { deucesHigh } : {}),
      ...(seed.trim() !== "" ? { seed: seed.trim() } : {}),
    };
    try {
      const m = await newMatch(req);
      props.onSeat(m.matchId, m.seat, m.token);
    } catch (err) {
      setProblem(problemOf(err));
      setBusy(false);
    }
  };

  return (
    <form class="card-panel" onSubmit={(e) => void start(e)} data-form="new-match" aria-labelledby="practice-title">
      <h2 id="practice-title">{t("lobby:practice.title")}</h2>
      <label>
        {t("lobby:identity.name")}
        <input value={name} maxLength={64} onInput={(e) => setName(e.currentTarget.value)} name="name" autoComplete="nickname" />
      </label>
      <fieldset>
        <legend>{t("lobby:rules")}</legend>
        {PRESET_IDS.map((p) => (
          <label class="choice" key={p}>
            <input type="radio" name="preset" value={p} checked={preset === p} onChange={() => setPreset(p)} />
            <span>
              <b>{presetName(p)}</b> <small>{t(`lobby:presets.${p}.about`)}</small>
            </span>
          </label>
        ))}
        <PresetRules preset={preset} />
      </fieldset>
      {cutthroat ? (
        <label>
          {t("lobby:practice.players")}
          <select name="players" value={String(players)} onChange={(e) => setPlayers(Number(e.currentTarget.value))}>
            {[2, 3, 4, 5].map((n) => (
              <option value={String(n)} key={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
      ) : null}
      <fieldset>
        <legend>{t("lobby:practice.bots")}</legend>
        {bots.map((word, i) => (
          <label key={i} class="inline">
            {t(`lobby:practice.seat.${word}`)}
            <select
              name={`bot-${i}`}
              value={String(levels[i] ?? BotLevel.NORMAL)}
              onChange={(e) => {
                const next = [...levels];
                next[i] = Number(e.currentTarget.value);
                setLevels(next);
              }}
            >
              {BOT_LEVELS.map((l) => (
                <option value={String(l.level)} key={l.level}>
                  {t(`lobby:botLevel.${l.key}`)}
                </option>
              ))}
            </select>
          </label>
        ))}
      </fieldset>
      <fieldset>
        <legend>{t("lobby:practice.variants")}</legend>
        <label class="choice">
          <input type="checkbox" name="blindNil" checked={blindNil} onChange={(e) => setBlindNil(e.currentTarget.checked)} />
          <span>
            {t("lobby:practice.blindNil")} <small>{t("lobby:practice.blindNilHelp")}</small>
          </span>
        </label>
        <label class="choice">
          <input type="checkbox" name="auctionTrump" checked={auctionTrump} onChange={(e) => setAuctionTrump(e.currentTarget.checked)} />
          <span>
            {t("lobby:practice.auctionTrump")} <small>{t("lobby:practice.auctionTrumpHelp")}</small>
          </span>
        </label>
        <label class="choice">
          <input type="checkbox" name="suicide" checked={suicide} onChange={(e) => setSuicide(e.currentTarget.checked)} />
          <span>
            {t("lobby:practice.suicide")} <small>{t("lobby:practice.suicideHelp")}</small>
          </span>
        </label>
        <label class="choice">
          <input type="checkbox" name="deucesHigh" checked={deucesHigh} onChange={(e) => setDeucesHigh(e.currentTarget.checked)} />
          <span>
            {t("lobby:practice.deucesHigh")} <small>{t("lobby:practice.deucesHighHelp")}</small>
          </span>
        </label>
        <label>
          {t("lobby:practice.target")}
          <select name="target" value={String(target)} onChange={(e) => setTarget(Number(e.currentTarget.value))}>
            {[100, 200, 300, 500].map((v) => (
              <option value={String(v)} key={v}>
                {v}
              </option>
            ))}
          </select>
        </label>
      </fieldset>
      <details class="advanced" data-fold="advanced" open={advancedOpen}>
        <summary>{t("lobby:practice.advanced")}</summary>
        <label>
          {t("lobby:practice.seed")} <small>{t("lobby:practice.seedHelp")}</small>
          <input name="seed" inputMode="numeric" value={seed} maxLength={20} onInput={(e) => setSeed(e.currentTarget.value)} />
        </label>
        <div data-form="connection">
          <fieldset>
            <legend>{t("lobby:connection.legend")}</legend>
            <label class="choice">
              <input type="radio" name="transport" value="stream" checked={connection.transport === "stream"} onChange={() => choose("stream")} />
              <span>
                <b>{t("lobby:connection.stream")}</b> <small>{t("lobby:connection.streamHelp")}</small>
              </span>
            </label>
            <label class="choice">
              <input type="radio" name="transport" value="poll" checked={connection.transport === "poll"} onChange={() => choose("poll")} />
              <span>
                <b>{t("lobby:connection.poll")}</b> <small>{t("lobby:connection.pollHelp")}</small>
              </span>
            </label>
            {connection.automatic ? (
              <p class="note" data-fallback>
                {t("lobby:connection.fellBack")}
              </p>
            ) : null}
          </fieldset>
        </div>
      </details>
      {problem !== undefined ? <ProblemBox problem={problem} onClose={() => setProblem(undefined)} /> : null}
      <button type="submit" class="strong" disabled={busy} data-action="start">
        {busy ? t("lobby:practice.dealing") : t("lobby:practice.deal")}
      </button>
    </form>
  );
}

/** A match to watch, by its id. */
export function WatchForm() {
  const [watchId, setWatchId] = useState("");
  return (
    <form
      class="card-panel"
      data-form="watch"
      aria-labelledby="watch-title"
      onSubmit={(e) => {
        e.preventDefault();
        const id = watchId.trim().replace(/^.*#\/(watch|play)\//, "");
        if (id !== "") go(`#/watch/${encodeURIComponent(id)}`);
      }}
    >
      <h2 id="watch-title">{t("lobby:watch.title")}</h2>
      <label>
        {t("lobby:watch.matchId")}
        <input name="match" value={watchId} maxLength={200} onInput={(e) => setWatchId(e.currentTarget.value)} autoComplete="off" spellcheck={false} />
      </label>
      <button type="submit" data-action="watch">
        {t("lobby:watch.button")}
      </button>
    </form>
  );
}
