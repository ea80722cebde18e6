// The table: the sides' counters, the seats around the trick, the player's
// hand and actions, the hand's result, the scores, this hand's tricks and the
// log. One drawing for players and spectators (a spectator's view has seat -1
// and no hand); its parts live in table/.
import { useEffect, useRef, useState } from "preact/hooks";
import { Phase, Suit, type Card } from "@spades/client";
import { cardCode, suitName, suitSymbol } from "./cards.js";
import type { Link, TableState } from "./controllers.js";
import type { Transport } from "./storage.js";
import { problemDetail, type Problem } from "./errors.js";
import { LANGUAGES, language, setLanguage, t, useLanguage, type Language } from "./i18n.js";
import { legalOf } from "./legal.js";
import { logText, type LogEntry } from "./log.js";
import { places, playersOf } from "./model.js";
import { ActionBar, type Act } from "./table/actions.js";
import { Hand } from "./table/hand.js";
import { Announcer } from "./table/live.js";
import { MatchOver, ScoredDialog } from "./table/result.js";
import { History, Scoreboard, SidesBar } from "./table/scores.js";
import { RulesPanel } from "./table/rules-panel.js";
import { SeatBox } from "./table/seat.js";
import { Center, LastTrick } from "./table/trick.js";

export type { Act };

export interface TableActions {
  /** Players only. */
  act?: Act;
  dismissNotice: () => void;
  dismissScored: () => void;
  reconnect: () => void;
  leave: () => void;
  newMatch: () => void;
  /** A new match with the same people (lobby tables); absent where there is none. */
  rematch?: () => void;
}

const PHASE_KEY: Record<number, string> = {
  [Phase.DRAW]: "draw",
  [Phase.BIDDING]: "bidding",
  [Phase.EXCHANGE]: "exchange",
  [Phase.PLAYING]: "playing",
  [Phase.MATCH_OVER]: "over",
};

/** The English phase name the tests and styles key on (data-phase); never shown. */
const PHASE_ID: Record<number, string> = {
  [Phase.DRAW]: "Drawing",
  [Phase.BIDDING]: "Bidding",
  [Phase.EXCHANGE]: "Exchange",
  [Phase.PLAYING]: "Playing",
  [Phase.MATCH_OVER]: "Match over",
};

/** A match's short code for people: the first eight characters of its id. */
export function shortCode(matchId: string): string {
  return matchId.replace(/[^0-9a-zA-Z]/g, "").slice(0, 8).toUpperCase();
}

function Log(props: { log: readonly LogEntry[]; view: import("@spades/client").SeatView }) {
  const end = useRef<HTMLLIElement>(null);
  useEffect(() => {
    end.current?.scrollIntoView({ block: "nearest" });
  }, [props.log.length]);
  return (
    <section class="log">
      <h2>{t("log.title")}</h2>
      {/* It scrolls: a tab stop, so the keyboard can scroll it too. */}
      <ol data-log tabIndex={0} aria-label={t("log.title")}>
        {props.log.map((e) => (
          <li key={e.seq} data-seq={e.seq} class={`log-${e.kind}`}>
            {logText(props.view, e)}
          </li>
        ))}
        <li ref={end} class="log-end" aria-hidden="true" />
      </ol>
    </section>
  );
}

export function ProblemBox(props: { problem: Problem; onClose?: () => void; action?: { label: string; run: () => void } }) {
  const p = props.problem;
  const detail = problemDetail(p);
  const more = [p.serverText ?? "", p.rule ?? "", detail].some((s) => s !== "");
  return (
    <div class="problem" role="alert" data-problem={p.reason || p.code || "error"}>
      <div>
        <strong>{p.title}:</strong> {p.text}
        {more ? (
          <details class="fine">
            <summary>{t("problem.details")}</summary>
            {p.serverText ? <div data-server-text>{p.serverText}</div> : null}
            {p.rule ? <div class="rule">{t("problem.rule", { rule: p.rule })}</div> : null}
            {detail !== "" ? <div data-codes>{detail}</div> : null}
          </details>
        ) : null}
      </div>
      <div class="problem-buttons">
        {props.action ? (
          <button type="button" onClick={props.action.run}>
            {props.action.label}
          </button>
        ) : null}
        {props.onClose ? (
          <button type="button" class="close" aria-label={t("problem.dismiss")} onClick={props.onClose}>
            ✕
          </button>
        ) : null}
      </div>
    </div>
  );
}

function LinkBadge(props: { link: Link; transport: Transport; fellBack: boolean }) {
  const poll = props.transport === "poll";
  const title = !poll ? t("link.streamTitle") : props.fellBack ? t("link.autoPollTitle") : t("link.pollTitle");
  return (
    <span
      class={`link link-${props.link}`}
      data-link={props.link}
      data-transport={props.transport}
      {...(props.fellBack ? { "data-fallback": "true" } : {})}
      title={title}
    >
      {t(`link.${props.link}`)}
      {poll ? <small>{props.fellBack ? ` · ${t("link.pollAuto")}` : ` · ${t("link.poll")}`}</small> : null}
    </span>
  );
}

export function LanguagePicker() {
  const lng = useLanguage();
  return (
    <label class="language">
      <span class="sr-only">{t("language")}</span>
      <select data-action="language" value={lng} onChange={(e) => void setLanguage(e.currentTarget.value as Language)}>
        {LANGUAGES.map((l) => (
          <option value={l.code} key={l.code} lang={l.code}>
            {l.name}
          </option>
        ))}
      </select>
    </label>
  );
}

function MatchCode(props: { matchId: string }) {
  const [copied, setCopied] = useState(false);
  const link = `${window.location.origin}${window.location.pathname}#/watch/${encodeURIComponent(props.matchId)}`;
  return (
    <span class="match-code">
      <code data-match-id={props.matchId} title={props.matchId}>
        {shortCode(props.matchId)}
      </code>
      <button
        type="button"
        class="link-button"
        data-action="copy-watch-link"
        onClick={() => {
          void navigator.clipboard?.writeText(link).then(
            () => setCopied(true),
            () => setCopied(false),
          );
        }}
      >
        {copied ? t("header.copied") : t("header.copyLink")}
      </button>
    </span>
  );
}

export function Table(props: { state: TableState; matchId: string; actions: TableActions; spectator: boolean }) {
  useLanguage();
  const { state, actions, spectator, matchId } = props;
  const view = state.view;
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const legal = legalOf(spectator ? undefined : view);
  // A selection for the exchange outlives no change of what may be passed.
  const passKey = [...legal.passable].join(",");
  useEffect(() => setSelected(new Set()), [passKey]);

  if (view === undefined) {
    return (
      <main class="page loading">
        {state.linkProblem !== undefined ? (
          <ProblemBox problem={state.linkProblem} action={{ label: t("link.tryAgain"), run: actions.reconnect }} />
        ) : (
          <p>{t("table.opening")}</p>
        )}
      </main>
    );
  }
  const n = playersOf(view);
  const bottom = view.seat >= 0 ? view.seat : 0;
  const where = places(n, bottom);
  const act = actions.act;
  const timing = { turnTimerMs: state.turnTimerMs, turnSince: state.turnSince };
  const onCard = (c: Card): void => {
    const code = cardCode(c);
    if (legal.passCount > 0) {
      if (!legal.passable.has(code)) {
        return;
      }
      const next = new Set(selected);
      if (next.has(code)) {
        next.delete(code);
      } else if (next.size < legal.passCount) {
        next.add(code);
      }
      setSelected(next);
      return;
    }
    // The server judges every card: one the page shows as not playable is
    // sent too, and its refusal says which rule forbids it.
    act?.({ kind: { case: "playCard", value: { card: c } } }, code);
  };
  const trump = view.trump !== Suit.UNSPECIFIED ? view.trump : Suit.SPADES;
  const phase = PHASE_KEY[view.phase];
  return (
    <main
      class={`page table-page${spectator ? " spectator" : ""}${state.holding ? " holding" : ""}`}
      data-phase={PHASE_ID[view.phase] ?? "starting"}
      data-seq={String(view.asOfSeq)}
      data-hand-number={view.handNumber}
      data-holding={state.holding ? "true" : "false"}
      lang={language()}
    >
      <header class="bar">
        <div class="title">
          <a href="#/" class="home" aria-label={t("header.lobby")}>
            ♠
          </a>
          <span>{spectator ? t("header.watching") : t("header.match")}</span>
          <MatchCode matchId={matchId} />
        </div>
        <div class="facts">
          <span>{t("header.hand", { number: view.handNumber + 1 })}</span>
          <span>{phase !== undefined ? t(`phase.${phase}`) : t("phase.starting")}</span>
          <span data-trump={suitName(trump)}>
            {t("header.trump")} {suitSymbol(trump)} {suitName(trump)}
          </span>
          {view.spadesBroken ? <span>{t("header.broken")}</span> : null}
          <LinkBadge link={state.link} transport={state.transport} fellBack={state.fellBack} />
          <a href="#/leaderboard" class="link-button" data-action="leaderboard">
            {t("header.leaderboard")}
          </a>
          {spectator ? null : (
            <a href="#/profile" class="link-button" data-action="profile">
              {t("header.profile")}
            </a>
          )}
          <LanguagePicker />
          {spectator ? null : (
            <button type="button" class="link-button" data-action="leave" onClick={actions.leave}>
              {t("header.leave")}
            </button>
          )}
        </div>
      </header>
      {state.link === "failed" && state.linkProblem !== undefined ? (
        <ProblemBox problem={state.linkProblem} action={{ label: t("link.reconnect"), run: actions.reconnect }} />
      ) : null}
      {state.notice !== undefined ? <ProblemBox problem={state.notice} onClose={actions.dismissNotice} /> : null}
      <SidesBar view={view} />
      <div class={`felt players-${n}`}>
        {Array.from({ length: n }, (_, s) => (s === view.seat ? null : <SeatBox view={view} seat={s} place={where.get(s) ?? "top"} key={s} timing={timing} />))}
        <Center view={view} where={where} />
        <LastTrick view={view} />
      </div>
      {state.scored !== undefined ? <ScoredDialog view={view} scored={state.scored} onClose={actions.dismissScored} /> : null}
      {view.phase === Phase.MATCH_OVER && !state.holding ? <MatchOver view={view} newMatch={actions.newMatch} rematch={spectator ? undefined : actions.rematch} /> : null}
      {spectator || act === undefined ? null : (
        <>
          <div class="me">
            <SeatBox view={view} seat={view.seat} place="bottom" timing={timing} />
          </div>
          <ActionBar view={view} legal={legal} selected={selected} sending={state.sending} act={act} clearSelection={() => setSelected(new Set())} holding={state.holding} />
          <Hand view={view} legal={legal} selected={selected} sending={state.sending} onCard={onCard} />
        </>
      )}
      <div class="panels">
        <Scoreboard view={view} />
        <History view={view} />
        <RulesPanel ruleset={view.ruleset} />
        <Log log={state.log} view={view} />
      </div>
      <Announcer view={view} log={state.log} myTurn={legal.any} />
    </main>
  );
}
