// The table: seats around the trick, the player's hand and actions, the
// scores, this hand's tricks and the log. One drawing for players and
// spectators (a spectator's view has seat -1 and no hand).
import { useEffect, useRef, useState } from "preact/hooks";
import { BotLevel, Phase, SeatControl, Suit, type ActionInit, type Card, type HandScored, type SeatView } from "@spades/client";
import { bySuit, cardCode, cardText, isRed, rankLabel, sortHand, suitName, suitSymbol } from "./cards.js";
import type { Link, TableState } from "./controllers.js";
import type { Transport } from "./storage.js";
import { problemDetail, type Problem } from "./errors.js";
import { legalOf, type Legal } from "./legal.js";
import type { LogEntry } from "./log.js";
import { partnerships, places, playersOf, seatName, sideName, sidesOf, type Place } from "./model.js";

const LEVEL: Record<number, string> = {
  [BotLevel.RANDOM]: "random bot",
  [BotLevel.EASY]: "easy bot",
  [BotLevel.NORMAL]: "normal bot",
  [BotLevel.HARD]: "hard bot",
  [BotLevel.EXPERT]: "expert bot",
};

const PHASE: Record<number, string> = {
  [Phase.DRAW]: "Drawing",
  [Phase.BIDDING]: "Bidding",
  [Phase.EXCHANGE]: "Exchange",
  [Phase.PLAYING]: "Playing",
  [Phase.MATCH_OVER]: "Match over",
};

/** Sends an action for the seat; `key` marks what is being sent (a card code, "bid-3"). */
export type Act = (action: ActionInit, key: string) => void;

export interface TableActions {
  /** Players only. */
  act?: Act;
  dismissNotice: () => void;
  dismissScored: () => void;
  reconnect: () => void;
  leave: () => void;
  newMatch: () => void;
  rematch?: () => void;
}

export function CardFace(props: { card: Card; small?: boolean }) {
  const c = props.card;
  return (
    <span class={`face ${isRed(c) ? "red" : "black"}${props.small ? " small" : ""}`} aria-hidden="true">
      <span class="rank">{rankLabel(c)}</span>
      <span class="suit">{c.rank >= 15 ? (c.rank === 16 ? "BIG" : "LITTLE") : suitSymbol(c.suit)}</span>
    </span>
  );
}

function bidLabel(view: SeatView, seat: number): string {
  const b = view.bids[seat];
  if (b === undefined || !b.hasBid) {
    return view.faceDown[seat] ? "face down" : "—";
  }
  if (b.blind) {
    return "blind nil";
  }
  return b.tricks === 0 ? "nil" : String(b.tricks);
}

function controlLabel(view: SeatView, seat: number): string {
  const info = view.seats[seat];
  if (info === undefined) {
    return "";
  }
  switch (info.control) {
    case SeatControl.BOT:
      return LEVEL[info.botLevel] ?? "bot";
    case SeatControl.BOT_STANDING_IN:
      return "bot standing in";
    case SeatControl.OPEN:
      return "empty seat";
    case SeatControl.HUMAN:
      return seat === view.seat ? "" : "player";
    default:
      return "";
  }
}

function SeatBox(props: { view: SeatView; seat: number; place: Place }) {
  const { view, seat, place } = props;
  const toAct = view.toAct === seat && view.phase !== Phase.MATCH_OVER;
  const cards = view.handSizes[seat] ?? 0;
  return (
    <div class={`seat seat-${place}${toAct ? " to-act" : ""}`} data-seat={seat} data-to-act={toAct ? "true" : "false"}>
      <div class="seat-name">
        {seatName(view, seat)}
        {view.dealer === seat ? (
          <span class="chip" title="dealer">
            D
          </span>
        ) : null}
      </div>
      <div class="seat-meta">{controlLabel(view, seat)}</div>
      <div class="seat-stats">
        <span title="bid" data-bid={seat}>
          bid <b>{bidLabel(view, seat)}</b>
        </span>
        <span title="tricks taken" data-tricks={seat}>
          won <b>{view.tricksWon[seat] ?? 0}</b>
        </span>
        {seat !== view.seat ? <span title="cards in hand">{cards} cards</span> : null}
      </div>
    </div>
  );
}

/** The trick in progress, each card in front of its player; between tricks, the last one, dimmed. */
function Center(props: { view: SeatView; where: Map<number, Place> }) {
  const { view, where } = props;
  const n = playersOf(view);
  const live = view.trick.length > 0;
  const last = view.tricks.at(-1);
  const cards = live ? view.trick : (last?.cards ?? []);
  const leader = live ? view.leader : (last?.leader ?? 0);
  const caption = live
    ? `${seatName(view, view.leader)} led`
    : last !== undefined
      ? `Trick ${view.tricks.length} to ${seatName(view, last.winner)}`
      : view.phase === Phase.PLAYING
        ? `${seatName(view, view.toAct)} to lead`
        : (PHASE[view.phase] ?? "");
  return (
    <div class={`center${live ? "" : " settled"}`} data-trick={live ? "live" : last !== undefined ? "last" : "empty"}>
      {cards.map((c, i) => {
        const seat = (leader + i) % n;
        return (
          <div class={`played at-${where.get(seat) ?? "top"}`} key={cardCode(c)} data-card={cardCode(c)} data-seat={seat} aria-label={`${seatName(view, seat)}: ${cardText(c)}`}>
            <CardFace card={c} />
          </div>
        );
      })}
      <div class="caption">{caption}</div>
    </div>
  );
}

function Hand(props: {
  view: SeatView;
  legal: Legal;
  selected: ReadonlySet<string>;
  sending: string | undefined;
  onCard: (c: Card) => void;
}) {
  const { view, legal, selected, sending, onCard } = props;
  if (!view.handVisible) {
    const n = view.handSizes[view.seat] ?? 0;
    return (
      <div class="hand face-down" data-hand="face-down" aria-label="your cards, face down">
        {Array.from({ length: n }, (_, i) => (
          <span class="card back" key={i} />
        ))}
      </div>
    );
  }
  const passing = legal.passCount > 0;
  // Cards are dimmed only when a choice among them is asked for.
  const choosing = passing || legal.play.size > 0;
  const sorted = sortHand(view.hand, view.trump);
  return (
    <div class="hand" data-hand="visible">
      {bySuit(sorted).map((group) => (
        <div class="suit-group" key={group[0]!.suit}>
          {group.map((c) => {
            const code = cardCode(c);
            const ok = passing ? legal.passable.has(code) : legal.play.has(code);
            const cls = ["card", choosing ? (ok ? "legal" : "illegal") : "", selected.has(code) ? "selected" : "", sending === code ? "sending" : ""].join(" ");
            return (
              <button
                type="button"
                class={cls}
                key={code}
                data-card={code}
                data-legal={ok ? "true" : "false"}
                aria-disabled={ok ? "false" : "true"}
                aria-pressed={passing ? (selected.has(code) ? "true" : "false") : undefined}
                aria-label={cardText(c)}
                onClick={() => onCard(c)}
              >
                <CardFace card={c} />
              </button>
            );
          })}
        </div>
      ))}
    </div>
  );
}

function ActionBar(props: {
  view: SeatView;
  legal: Legal;
  selected: ReadonlySet<string>;
  sending: string | undefined;
  act: Act;
  clearSelection: () => void;
}) {
  const { view, legal, selected, sending, act } = props;
  const busy = sending !== undefined;
  const rows = [];
  if (legal.draws.length > 0) {
    const top = view.stockTop;
    rows.push(
      <div class="prompt" key="draw">
        <p>
          Draw: the stock's top card is {top !== undefined ? <b>{cardText(top)}</b> : "hidden"} ({view.stockSize} left).
        </p>
        {legal.draws.includes(true) ? (
          <button type="button" data-action="draw-keep" disabled={busy} onClick={() => act({ kind: { case: "draw", value: { keep: true } } }, "draw-keep")}>
            Keep it
          </button>
        ) : null}
        {legal.draws.includes(false) ? (
          <button type="button" data-action="draw-next" disabled={busy} onClick={() => act({ kind: { case: "draw", value: { keep: false } } }, "draw-next")}>
            Discard it, take the next
          </button>
        ) : null}
      </div>,
    );
  }
  if (legal.blindNil || legal.look) {
    rows.push(
      <div class="prompt" key="blind">
        <p>Your cards are face down. Bid blind nil without looking, or look at them.</p>
        {legal.blindNil ? (
          <button type="button" class="strong" data-action="blind-nil" disabled={busy} onClick={() => act({ kind: { case: "blindNil", value: {} } }, "blind-nil")}>
            Blind nil
          </button>
        ) : null}
        {legal.look ? (
          <button type="button" data-action="look" disabled={busy} onClick={() => act({ kind: { case: "look", value: {} } }, "look")}>
            Look at my cards
          </button>
        ) : null}
      </div>,
    );
  }
  if (legal.bids.length > 0) {
    rows.push(
      <div class="prompt" key="bid">
        <p>Your bid: how many tricks will you take?</p>
        <div class="bids">
          {legal.bids.map((t) => (
            <button
              type="button"
              key={t}
              class={t === 0 ? "nil" : ""}
              data-action={`bid-${t}`}
              disabled={busy}
              onClick={() => act({ kind: { case: "bid", value: { tricks: t } } }, `bid-${t}`)}
            >
              {t === 0 ? "Nil" : t}
            </button>
          ))}
        </div>
      </div>,
    );
  }
  if (legal.decisions.length > 0) {
    rows.push(
      <div class="prompt" key="decide">
        <p>You bid blind nil: exchange cards with your partner?</p>
        {legal.decisions.includes(true) ? (
          <button type="button" data-action="exchange-take" disabled={busy} onClick={() => act({ kind: { case: "exchangeDecision", value: { exchange: true } } }, "exchange-take")}>
            Take the exchange
          </button>
        ) : null}
        {legal.decisions.includes(false) ? (
          <button type="button" data-action="exchange-decline" disabled={busy} onClick={() => act({ kind: { case: "exchangeDecision", value: { exchange: false } } }, "exchange-decline")}>
            Decline
          </button>
        ) : null}
      </div>,
    );
  }
  if (legal.passCount > 0) {
    const chosen = view.hand.filter((c) => selected.has(cardCode(c)));
    rows.push(
      <div class="prompt" key="pass">
        <p>
          Choose {legal.passCount} card{legal.passCount === 1 ? "" : "s"} to pass to your partner ({chosen.length} chosen).
        </p>
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
          Pass {chosen.map(cardText).join(" ") || "cards"}
        </button>
      </div>,
    );
  }
  if (legal.trumps.length > 0) {
    rows.push(
      <div class="prompt" key="trump">
        <p>You bid highest: name this hand's trump.</p>
        {legal.trumps.map((s) => (
          <button type="button" key={s} data-action={`trump-${suitName(s)}`} disabled={busy} onClick={() => act({ kind: { case: "nameTrump", value: { suit: s } } }, `trump-${s}`)}>
            {suitSymbol(s)} {suitName(s)}
          </button>
        ))}
      </div>,
    );
  }
  if (legal.play.size > 0) {
    rows.push(
      <div class="prompt quiet" key="play">
        <p>Your turn: play a card.</p>
      </div>,
    );
  }
  if (rows.length === 0 && view.phase !== Phase.MATCH_OVER) {
    const waitingFor =
      view.phase === Phase.EXCHANGE ? "the exchange" : view.toAct >= 0 ? seatName(view, view.toAct) : "the table";
    rows.push(
      <div class="prompt quiet" key="wait">
        <p>Waiting for {waitingFor}…</p>
      </div>,
    );
  }
  return (
    <section class="actions" aria-live="polite" data-actions={legal.any ? "yours" : "waiting"}>
      {rows}
    </section>
  );
}

function Scoreboard(props: { view: SeatView }) {
  const { view } = props;
  const sides = sidesOf(view);
  return (
    <section class="scores" data-scores>
      <h2>Scores</h2>
      <table>
        <thead>
          <tr>
            <th>Hand</th>
            {Array.from({ length: sides }, (_, s) => (
              <th key={s}>{sideName(view, s)}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {view.results.map((r, i) => (
            <tr key={i} data-result={i}>
              <td>{i + 1}</td>
              {r.sides.map((s) => (
                <td key={s.side}>
                  {s.handPoints >= 0 ? "+" : ""}
                  {s.handPoints} <small>({s.tricks}/{s.contract})</small>
                </td>
              ))}
            </tr>
          ))}
        </tbody>
        <tfoot>
          <tr>
            <th>Total</th>
            {Array.from({ length: sides }, (_, s) => (
              <th key={s} data-score={s}>
                {view.scores[s] ?? 0}
                {view.bags[s] ? <small> · {view.bags[s]} bags</small> : null}
              </th>
            ))}
          </tr>
        </tfoot>
      </table>
      {view.ruleset !== undefined ? <p class="fine">Game to {view.ruleset.targetScore}</p> : null}
    </section>
  );
}

/** This hand's finished tricks, each card with who played it. */
function History(props: { view: SeatView }) {
  const { view } = props;
  const n = playersOf(view);
  if (view.tricks.length === 0) {
    return null;
  }
  return (
    <section class="history" data-history>
      <h2>This hand's tricks</h2>
      <ol>
        {view.tricks.map((t, i) => (
          <li key={i} data-trick-number={i + 1}>
            {t.cards.map((c, j) => {
              const seat = (t.leader + j) % n;
              return (
                <span class={`mini${seat === t.winner ? " won" : ""}${isRed(c) ? " red" : ""}`} key={j} data-card={cardCode(c)} data-seat={seat} title={seatName(view, seat)}>
                  {cardText(c)}
                </span>
              );
            })}
            <span class="winner">→ {seatName(view, t.winner)}</span>
          </li>
        ))}
      </ol>
    </section>
  );
}

function Log(props: { log: readonly LogEntry[] }) {
  const end = useRef<HTMLLIElement>(null);
  useEffect(() => {
    end.current?.scrollIntoView({ block: "nearest" });
  }, [props.log.length]);
  return (
    <section class="log">
      <h2>Table talk</h2>
      <ol data-log>
        {props.log.map((e) => (
          <li key={e.seq} data-seq={e.seq} class={`log-${e.kind}`}>
            {e.text}
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
  return (
    <div class="problem" role="alert" data-problem={p.reason || p.code || "error"}>
      <div>
        <strong>{p.title}:</strong> {p.text}
        {p.rule !== undefined && p.rule !== "" ? <div class="rule">Rule: {p.rule}</div> : null}
        {detail !== "" ? <div class="fine">{detail}</div> : null}
      </div>
      <div class="problem-buttons">
        {props.action ? (
          <button type="button" onClick={props.action.run}>
            {props.action.label}
          </button>
        ) : null}
        {props.onClose ? (
          <button type="button" class="close" aria-label="dismiss" onClick={props.onClose}>
            ✕
          </button>
        ) : null}
      </div>
    </div>
  );
}

function ScoredDialog(props: { view: SeatView; scored: HandScored; onClose: () => void }) {
  const { view, scored } = props;
  return (
    <div class="overlay" role="dialog" aria-label={`Hand ${scored.handNumber + 1} result`} data-dialog="hand-result">
      <div class="dialog">
        <h2>Hand {scored.handNumber + 1}</h2>
        <table>
          <thead>
            <tr>
              <th />
              {scored.sides.map((s) => (
                <th key={s.side}>{sideName(view, s.side)}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            <Row label="Bid / took" cells={scored.sides.map((s) => `${s.contract} / ${s.tricks}`)} />
            <Row label="Contract" cells={scored.sides.map((s) => signed(s.contractPoints))} />
            {scored.sides.some((s) => s.nilPoints !== 0) ? <Row label="Nil" cells={scored.sides.map((s) => signed(s.nilPoints))} /> : null}
            <Row label="Bags" cells={scored.sides.map((s) => `${s.bagsTaken}${s.bagPenalty ? ` (${s.bagPenalty})` : ""}`)} />
            <Row label="Hand" cells={scored.sides.map((s) => signed(s.handPoints))} strong />
            <Row label="Score" cells={scored.sides.map((s) => String(s.score))} strong />
          </tbody>
        </table>
        <button type="button" class="strong" data-action="continue" onClick={props.onClose}>
          Continue
        </button>
      </div>
    </div>
  );
}

function Row(props: { label: string; cells: string[]; strong?: boolean }) {
  return (
    <tr class={props.strong ? "strong" : ""}>
      <th>{props.label}</th>
      {props.cells.map((c, i) => (
        <td key={i}>{c}</td>
      ))}
    </tr>
  );
}

function signed(n: number): string {
  return `${n > 0 ? "+" : ""}${n}`;
}

function LinkBadge(props: { link: Link; transport: Transport; fellBack: boolean }) {
  const text = { connecting: "connecting…", live: "live", reconnecting: "reconnecting…", failed: "disconnected" }[props.link];
  const poll = props.transport === "poll";
  const title = !poll
    ? "events on a stream"
    : props.fellBack
      ? "events by long-poll: the stream delivered nothing (a proxy that holds streamed answers back?), so this tab switched"
      : "events by long-poll, as chosen";
  return (
    <span
      class={`link link-${props.link}`}
      data-link={props.link}
      data-transport={props.transport}
      {...(props.fellBack ? { "data-fallback": "true" } : {})}
      title={title}
    >
      {text}
      {poll ? <small>{props.fellBack ? " · long-poll (auto)" : " · long-poll"}</small> : null}
    </span>
  );
}

function MatchOver(props: { view: SeatView; newMatch: () => void }) {
  const { view } = props;
  const mine = view.seat >= 0 ? (partnerships(view) ? view.seat % 2 : view.seat) : -1;
  const verdict = mine < 0 ? `${sideName(view, view.winner)} win` : view.winner === mine ? "You win!" : `${sideName(view, view.winner)} win`;
  return (
    <div class="match-over" data-match-over>
      <h2>{verdict}</h2>
      <p>Final score: {view.scores.join(" to ")}</p>
      <button type="button" class="strong" onClick={props.newMatch}>
        New match
      </button>
    </div>
  );
}

export function Table(props: { state: TableState; matchId: string; actions: TableActions; spectator: boolean }) {
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
          <ProblemBox problem={state.linkProblem} action={{ label: "Try again", run: actions.reconnect }} />
        ) : (
          <p>Opening the table…</p>
        )}
      </main>
    );
  }
  const n = playersOf(view);
  const bottom = view.seat >= 0 ? view.seat : 0;
  const where = places(n, bottom);
  const act = actions.act;
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
  const trump = view.trump !== Suit.SPADES && view.trump !== Suit.UNSPECIFIED ? `${suitSymbol(view.trump)} ${suitName(view.trump)}` : "♠ spades";
  return (
    <main class={`page table-page${spectator ? " spectator" : ""}`} data-phase={PHASE[view.phase] ?? "starting"} data-seq={String(view.asOfSeq)} data-hand-number={view.handNumber}>
      <header class="bar">
        <div class="title">
          <a href="#/" class="home" title="back to the lobby">
            ♠
          </a>
          <span>
            {spectator ? "Watching" : "Match"} <code data-match-id>{matchId}</code>
          </span>
        </div>
        <div class="facts">
          <span>Hand {view.handNumber + 1}</span>
          <span>{PHASE[view.phase] ?? "Starting"}</span>
          <span>trump {trump}</span>
          {view.spadesBroken ? <span>broken</span> : null}
          <LinkBadge link={state.link} transport={state.transport} fellBack={state.fellBack} />
          {spectator ? null : (
            <button type="button" class="link-button" onClick={actions.leave}>
              Leave
            </button>
          )}
        </div>
      </header>
      {state.link === "failed" && state.linkProblem !== undefined ? (
        <ProblemBox problem={state.linkProblem} action={{ label: "Reconnect", run: actions.reconnect }} />
      ) : null}
      {state.notice !== undefined ? <ProblemBox problem={state.notice} onClose={actions.dismissNotice} /> : null}
      <div class={`felt players-${n}`}>
        {Array.from({ length: n }, (_, s) => (s === view.seat ? null : <SeatBox view={view} seat={s} place={where.get(s) ?? "top"} key={s} />))}
        <Center view={view} where={where} />
      </div>
      {view.phase === Phase.MATCH_OVER ? <MatchOver view={view} newMatch={actions.newMatch} /> : null}
      {spectator || act === undefined ? null : (
        <>
          <div class="me">
            <SeatBox view={view} seat={view.seat} place="bottom" />
          </div>
          <ActionBar view={view} legal={legal} selected={selected} sending={state.sending} act={act} clearSelection={() => setSelected(new Set())} />
          <Hand view={view} legal={legal} selected={selected} sending={state.sending} onCard={onCard} />
        </>
      )}
      <div class="panels">
        <Scoreboard view={view} />
        <History view={view} />
        <Log log={state.log} />
      </div>
      {state.scored !== undefined ? <ScoredDialog view={view} scored={state.scored} onClose={actions.dismissScored} /> : null}
    </main>
  );
}
