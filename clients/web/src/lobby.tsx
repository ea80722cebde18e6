// The lobby: a new match against bots (preset, variants, bot levels), or a
// match to watch by its id.
import { useState } from "preact/hooks";
import { BotLevel } from "@spades/client";
import { newMatch, type NewMatchRequest } from "./api.js";
import { problemOf, type Problem } from "./errors.js";
import { loadTransport, saveTransport, type Transport } from "./storage.js";
import { ProblemBox } from "./table.js";

const PRESETS: { id: string; name: string; about: string }[] = [
  { id: "classic", name: "Classic", about: "Partners, 500 to win, nil, 10 bags cost 100." },
  { id: "polish", name: "Polish", about: "Dealer leads, blind nil with an optional exchange, spades broken by trumping." },
  { id: "german", name: "German", about: "Every player alone, jokers, no nil, a set scores zero." },
  { id: "bulgarian", name: "Bulgarian", about: "Two of clubs leads, blind nil at any score, the thirteen bid doubles." },
];

const LEVELS: { level: BotLevel; name: string }[] = [
  { level: BotLevel.RANDOM, name: "Random" },
  { level: BotLevel.EASY, name: "Easy" },
  { level: BotLevel.NORMAL, name: "Normal" },
  { level: BotLevel.HARD, name: "Hard" },
  { level: BotLevel.EXPERT, name: "Expert" },
];

const SEAT_WORDS: Record<number, string[]> = {
  2: ["Opposite"],
  3: ["Left", "Right"],
  4: ["Left", "Partner", "Right"],
  5: ["Left", "Far left", "Far right", "Right"],
};

export function Lobby(props: { onSeat: (matchId: string, seat: number, token: string) => void; savedMatch: string | undefined }) {
  const [name, setName] = useState("Player");
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
  const [watchId, setWatchId] = useState("");
  const [connection, setConnection] = useState(loadTransport);
  const choose = (t: Transport): void => {
    saveTransport(t);
    setConnection(loadTransport());
  };

  const cutthroat = preset === "german";
  const seatCount = cutthroat ? players : 4;
  const bots = SEAT_WORDS[seatCount] ?? SEAT_WORDS[4]!;

  const start = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    setProblem(undefined);
    const req: NewMatchRequest = {
      name: name.trim() || "Player",
      preset,
      players: seatCount,
      botLevels: bots.map((_, i) => levels[i] ?? BotLevel.NORMAL),
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
    <main class="page lobby">
      <h1>
        <span class="logo">♠</span> Spades
      </h1>
      {props.savedMatch !== undefined ? (
        <p class="resume">
          <a href={`#/play/${props.savedMatch}`} data-action="resume">
            Back to your table ({props.savedMatch})
          </a>
        </p>
      ) : null}
      <form class="card-panel" onSubmit={(e) => void start(e)} data-form="new-match">
        <h2>Play against bots</h2>
        <label>
          Your name
          <input value={name} maxLength={64} onInput={(e) => setName(e.currentTarget.value)} name="name" />
        </label>
        <fieldset>
          <legend>Rules</legend>
          {PRESETS.map((p) => (
            <label class="choice" key={p.id}>
              <input type="radio" name="preset" value={p.id} checked={preset === p.id} onChange={() => setPreset(p.id)} />
              <span>
                <b>{p.name}</b> <small>{p.about}</small>
              </span>
            </label>
          ))}
        </fieldset>
        {cutthroat ? (
          <label>
            Players
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
          <legend>Bots</legend>
          {bots.map((word, i) => (
            <label key={i} class="inline">
              {word}
              <select
                name={`bot-${i}`}
                value={String(levels[i] ?? BotLevel.NORMAL)}
                onChange={(e) => {
                  const next = [...levels];
                  next[i] = Number(e.currentTarget.value);
                  setLevels(next);
                }}
              >
                {LEVELS.map((l) => (
                  <option value={String(l.level)} key={l.level}>
                    {l.name}
                  </option>
                ))}
              </select>
            </label>
          ))}
        </fieldset>
        <fieldset>
          <legend>Variants</legend>
          <label class="choice">
            <input type="checkbox" name="blindNil" checked={blindNil} onChange={(e) => setBlindNil(e.currentTarget.checked)} />
            <span>
              Blind nil from the first hand <small>(bid nil before looking at your cards)</small>
            </span>
          </label>
          <label class="choice">
            <input type="checkbox" name="auctionTrump" checked={auctionTrump} onChange={(e) => setAuctionTrump(e.currentTarget.checked)} />
            <span>
              Auction trump <small>(the highest bidder names trump)</small>
            </span>
          </label>
          <label class="choice">
            <input type="checkbox" name="suicide" checked={suicide} onChange={(e) => setSuicide(e.currentTarget.checked)} />
            <span>
              Suicide <small>(one partner bids nil, the other at least 4)</small>
            </span>
          </label>
          <label class="choice">
            <input type="checkbox" name="deucesHigh" checked={deucesHigh} onChange={(e) => setDeucesHigh(e.currentTarget.checked)} />
            <span>
              Deuces high <small>(with jokers: 2♦ and 2♠ are top spades)</small>
            </span>
          </label>
          <label>
            Game to
            <select name="target" value={String(target)} onChange={(e) => setTarget(Number(e.currentTarget.value))}>
              {[100, 200, 300, 500].map((t) => (
                <option value={String(t)} key={t}>
                  {t}
                </option>
              ))}
            </select>
          </label>
          <label>
            Seed <small>(optional: the same seed deals the same cards)</small>
            <input name="seed" inputMode="numeric" value={seed} maxLength={20} onInput={(e) => setSeed(e.currentTarget.value)} />
          </label>
        </fieldset>
        {problem !== undefined ? <ProblemBox problem={problem} onClose={() => setProblem(undefined)} /> : null}
        <button type="submit" class="strong" disabled={busy} data-action="start">
          {busy ? "Dealing…" : "Deal"}
        </button>
      </form>
      <form
        class="card-panel"
        data-form="watch"
        onSubmit={(e) => {
          e.preventDefault();
          const id = watchId.trim();
          if (id !== "") {
            window.location.hash = `#/watch/${encodeURIComponent(id)}`;
          }
        }}
      >
        <h2>Watch a match</h2>
        <label>
          Match id
          <input name="match" value={watchId} maxLength={64} onInput={(e) => setWatchId(e.currentTarget.value)} autoComplete="off" />
        </label>
        <button type="submit" data-action="watch">
          Watch
        </button>
      </form>
      <form class="card-panel" data-form="connection" onSubmit={(e) => e.preventDefault()}>
        <h2>Connection</h2>
        <fieldset>
          <legend>How the table's events come</legend>
          <label class="choice">
            <input type="radio" name="transport" value="stream" checked={connection.transport === "stream"} onChange={() => choose("stream")} />
            <span>
              <b>Stream</b> <small>(each event as it happens, on one call: the default)</small>
            </span>
          </label>
          <label class="choice">
            <input type="radio" name="transport" value="poll" checked={connection.transport === "poll"} onChange={() => choose("poll")} />
            <span>
              <b>Long-poll</b>{" "}
              <small>
                (for networks whose proxy holds streamed answers back; <code>?transport=poll</code> in the address does the same)
              </small>
            </span>
          </label>
          {connection.automatic ? (
            <p class="note" data-fallback>
              This tab switched to long-poll by itself: a stream delivered nothing that the server had sent.
            </p>
          ) : null}
        </fieldset>
      </form>
    </main>
  );
}
