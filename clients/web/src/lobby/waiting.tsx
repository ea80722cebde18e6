// The waiting room of a table (#/table/<id>): its seats, the invite link and
// code, Start now (the host: bots take the open seats), Leave; it follows the
// table (WatchTable, or GetTable long polls; a rematch table with Rematch
// long polls) and, once the table has started, takes the seat to the match.
// And the page of an invite link (#/join/<code>): the name if none, then a seat.
import { useEffect, useRef, useState } from "preact/hooks";
import { TableKind, TableSeatState, TableState, TableVisibility, Unattended, type Table } from "@spades/client";
import { problemOf, type Problem } from "../errors.js";
import { t, useLanguage } from "../i18n.js";
import { follow, loadWaiting, playerSession, pollRematch, saveWaiting, seatAt, type WaitingSeat } from "../player.js";
import { ProblemBox } from "../table.js";
import { CopyButton, LobbyHeader, go, presetName, seatLabel, seatWord, seatsTaken } from "./common.js";
import { NameForm, useIdentity } from "./identity.js";
import { timerLabel } from "./tables.js";

function inviteLink(code: string): string {
  return `${window.location.origin}${window.location.pathname}#/join/${encodeURIComponent(code)}`;
}

function countdown(deadlineMs: bigint, now: number): string {
  const s = Math.max(0, Math.ceil((Number(deadlineMs) - now) / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

/** The seats, as a list (who sits, who hosts, which are open), from `me`'s point of view. */
function Seats(props: { table: Table; me: number | undefined; onSit?: (seat: number) => void }) {
  const { table, me } = props;
  const n = table.seats.length;
  return (
    <ol class="seats" data-seats>
      {table.seats.map((s, i) => {
        const open = s.state === TableSeatState.OPEN;
        const host = s.playerId !== "" && s.playerId === table.hostPlayerId;
        const rel = me !== undefined ? seatWord(n, me, i) : undefined;
        return (
          <li key={i} data-seat={i} data-seat-state={open ? "open" : s.state === TableSeatState.BOT ? "bot" : "player"} class={open ? "open" : i === me ? "mine" : ""}>
            <span class="seat-no">{t("lobby:seat.number", { n: i + 1 })}</span>
            <span class="seat-who">
              {open ? <i>{t("lobby:seat.open")}</i> : <b>{seatLabel(table, i)}</b>}
              {rel !== undefined && i !== me ? <small> · {rel}</small> : null}
            </span>
            <span class="tags">
              {i === me ? <span class="tag">{t("lobby:seat.you")}</span> : null}
              {host ? <span class="tag">{t("lobby:seat.host")}</span> : null}
              {s.state === TableSeatState.BOT ? <span class="tag">{t("lobby:seat.bot")}</span> : null}
              {table.kind === TableKind.REMATCH && s.state === TableSeatState.PLAYER ? (
                <span class="tag">{s.accepted ? t("lobby:seat.accepted") : t("lobby:seat.notAccepted")}</span>
              ) : null}
            </span>
            {open && props.onSit !== undefined ? (
              <button type="button" onClick={() => props.onSit!(i)} data-action={`sit-${i}`}>
                {t("lobby:join.sit")}
              </button>
            ) : null}
          </li>
        );
      })}
    </ol>
  );
}

function TableFacts(props: { table: Table }) {
  const x = props.table;
  return (
    <ul class="facts-list">
      <li>
        {t("lobby:rules")}: <b>{presetName(x.ruleset?.preset || "classic")}</b>
        {x.ruleset?.targetScore ? ` · ${t("lobby:waiting.target", { score: x.ruleset.targetScore })}` : ""}
      </li>
      <li data-rated={x.rated ? "true" : "false"}>{x.rated ? t("lobby:waiting.rated", { pool: x.ratingPool }) : t("lobby:waiting.unrated")}</li>
      <li>
        {t("lobby:open.timer")}: {timerLabel(x.turnTimerMs)}
      </li>
      <li>{x.visibility === TableVisibility.INVITE_ONLY ? t("lobby:open.private") : t("lobby:open.public")}</li>
      <li data-seats-taken={seatsTaken(x)}>{t("lobby:tables.seats", { count: x.seats.length, taken: seatsTaken(x) })}</li>
    </ul>
  );
}

export function WaitingRoom(props: { tableId: string }) {
  useLanguage();
  const identity = useIdentity();
  const [waiting] = useState<WaitingSeat | undefined>(() => loadWaiting(props.tableId));
  const [table, setTable] = useState<Table | undefined>(undefined);
  const [problem, setProblem] = useState<Problem | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const [now, setNow] = useState(Date.now());
  const [round, setRound] = useState(0);

  const onTable = (x: Table): void => {
    setTable(x);
    if (x.state === TableState.STARTED && waiting !== undefined) {
      go(seatAt(x.matchId || x.tableId, waiting.seat, waiting.token));
    }
  };

  useEffect(() => {
    if (waiting?.rematchOf !== undefined) {
      // A rematch table: followed with Rematch long polls on the finished match's seat token.
      const abort = new AbortController();
      void (async () => {
        let version = 0n;
        let failures = 0;
        while (!abort.signal.aborted) {
          try {
            const x = await pollRematch(waiting, version, abort.signal);
            failures = 0;
            version = x.version;
            onTable(x);
            if (x.state === TableState.STARTED || x.state === TableState.CLOSED) return;
          } catch (e) {
            if (abort.signal.aborted) return;
            const p = problemOf(e);
            if (!p.transient || ++failures > 5) {
              setProblem(p);
              return;
            }
            await new Promise((r) => setTimeout(r, 1000 * failures));
          }
        }
      })();
      return () => abort.abort();
    }
    if (identity === undefined) return;
    return follow<Table>(
      (mode) => (mode === "stream" ? playerSession().lobby.watchTable(props.tableId) : playerSession().lobby.pollTable(props.tableId)),
      onTable,
      (e) => setProblem(problemOf(e)),
    );
  }, [props.tableId, identity === undefined, round]);

  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);

  const run = async (f: () => Promise<unknown>): Promise<void> => {
    setBusy(true);
    setProblem(undefined);
    try {
      await f();
    } catch (e) {
      setProblem(problemOf(e));
    } finally {
      setBusy(false);
    }
  };

  const leave = (): Promise<void> =>
    run(async () => {
      if (waiting?.rematchOf !== undefined) {
        await playerSession().client.seat(waiting.rematchOf.token).rematch({ decline: true });
      } else {
        await playerSession().call((lobby) => lobby.leaveTable(props.tableId));
      }
      saveWaiting(undefined);
      go("#/");
    });

  const start = (): Promise<void> =>
    run(async () => {
      onTable(await playerSession().call((lobby) => lobby.startTable(props.tableId)));
    });

  const me = waiting?.seat;
  const isHost = table !== undefined && identity !== undefined && table.hostPlayerId !== "" && table.hostPlayerId === identity.playerId;
  const botsAllowed = table !== undefined && table.unattended !== Unattended.CLOSE;
  const open = table === undefined ? 0 : table.seats.length - seatsTaken(table);
  const toAccept = table === undefined ? 0 : table.seats.filter((s) => s.state === TableSeatState.PLAYER && !s.accepted).length;
  const state = table === undefined ? "loading" : TableState[table.state].toLowerCase();

  return (
    <main class="page lobby waiting" data-page="waiting-room" data-table-state={state} data-table-id={props.tableId}>
      <LobbyHeader title={table?.kind === TableKind.REMATCH ? t("lobby:waiting.rematchTitle") : t("lobby:waiting.title")} />
      {identity === undefined && waiting?.rematchOf === undefined ? <NameForm intro={t("lobby:identity.introTable")} /> : null}
      {waiting === undefined ? (
        <p class="note" data-no-seat>
          {t("lobby:waiting.noSeat")}
        </p>
      ) : null}
      {table === undefined && problem === undefined ? <p role="status">{t("lobby:loading")}</p> : null}
      {table !== undefined ? (
        <>
          <section class="card-panel" aria-labelledby="seats-title">
            <h2 id="seats-title">{t("lobby:waiting.seats")}</h2>
            <TableFacts table={table} />
            <Seats table={table} me={me} />
            <p role="status" aria-live="polite" data-status>
              {table.state === TableState.WAITING && table.kind === TableKind.REMATCH
                ? t("lobby:waiting.rematchWaiting", { count: toAccept, time: countdown(table.deadlineMs, now) })
                : table.state === TableState.WAITING
                ? open > 0
                  ? Number(table.deadlineMs) > 0
                    ? botsAllowed
                      ? t("lobby:waiting.botsAt", { count: open, time: countdown(table.deadlineMs, now) })
                      : t("lobby:waiting.closesAt", { count: open, time: countdown(table.deadlineMs, now) })
                    : t("lobby:waiting.waitingFor", { count: open })
                  : t("lobby:waiting.starting")
                : table.state === TableState.STARTING || table.state === TableState.STARTED
                  ? t("lobby:waiting.starting")
                  : t("lobby:waiting.closed", { reason: t(`lobby:closeReason.${table.closeReason || "other"}`, { defaultValue: table.closeReason }) })}
            </p>
          </section>
          {table.inviteCode !== "" && table.state === TableState.WAITING && table.kind !== 3 ? (
            <section class="card-panel" aria-labelledby="invite-title" data-invite>
              <h2 id="invite-title">{t("lobby:waiting.invite")}</h2>
              <p>{t("lobby:waiting.inviteIntro")}</p>
              <label>
                {t("lobby:waiting.link")}
                <input readOnly name="inviteLink" value={inviteLink(table.inviteCode)} data-invite-link onFocus={(e) => e.currentTarget.select()} />
              </label>
              <div class="row">
                <CopyButton text={inviteLink(table.inviteCode)} label={t("lobby:waiting.copyLink")} what="invite-link" />
              </div>
              <p class="code-line">
                {t("lobby:waiting.code")} <code data-invite-code>{table.inviteCode}</code>
              </p>
              <div class="row">
                <CopyButton text={table.inviteCode} label={t("lobby:waiting.copyCode")} what="invite-code" />
              </div>
            </section>
          ) : null}
          {table.state === TableState.WAITING && waiting !== undefined ? (
            <div class="row">
              {isHost ? (
                <button type="button" class="strong" disabled={busy || (!botsAllowed && open > 0)} onClick={() => void start()} data-action="start-table">
                  {open > 0 ? t("lobby:waiting.startWithBots", { count: open }) : t("lobby:waiting.start")}
                </button>
              ) : null}
              <button type="button" disabled={busy} onClick={() => void leave()} data-action="leave-table">
                {waiting.rematchOf !== undefined ? t("lobby:waiting.decline") : t("lobby:waiting.leave")}
              </button>
            </div>
          ) : null}
          {isHost && !botsAllowed && open > 0 && table.state === TableState.WAITING ? <p class="note">{t("lobby:waiting.noBotsNote")}</p> : null}
          {table.state === TableState.CLOSED ? (
            <p>
              <a href="#/">{t("lobby:backToLobby")}</a>
            </p>
          ) : null}
        </>
      ) : null}
      {problem !== undefined ? (
        <ProblemBox problem={problem} onClose={() => setProblem(undefined)} action={{ label: t("lobby:retry"), run: () => setRound((r) => r + 1) }} />
      ) : null}
      <p>
        <a href="#/">{t("lobby:backToLobby")}</a>
      </p>
    </main>
  );
}

/** #/join/<code>: the name if the player has none, the table (by its code), then a seat to take. */
export function JoinPage(props: { code: string }) {
  useLanguage();
  const identity = useIdentity();
  const [table, setTable] = useState<Table | undefined>(undefined);
  const [problem, setProblem] = useState<Problem | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const looked = useRef("");

  useEffect(() => {
    if (identity === undefined || looked.current === props.code) return;
    looked.current = props.code;
    setProblem(undefined);
    playerSession()
      .call((lobby) => lobby.getTable({ inviteCode: props.code }))
      .then(setTable, (e: unknown) => setProblem(problemOf(e)));
  }, [identity?.playerId, props.code]);

  const sit = async (seat: number | undefined): Promise<void> => {
    setBusy(true);
    setProblem(undefined);
    try {
      const res = await playerSession().call((lobby) => lobby.joinTable({ inviteCode: props.code, ...(seat !== undefined ? { seat } : {}) }));
      const x = res.table!;
      saveWaiting({ tableId: x.tableId, seat: res.seat, token: res.seatToken });
      if (x.state === TableState.STARTED) {
        window.location.replace(seatAt(x.matchId || x.tableId, res.seat, res.seatToken));
      } else {
        window.location.replace(`#/table/${encodeURIComponent(x.tableId)}`);
      }
    } catch (e) {
      setProblem(problemOf(e));
      setBusy(false);
    }
  };

  // The seat opposite the host (their partner at four), else the first open one.
  let suggested: number | undefined;
  if (table !== undefined) {
    const n = table.seats.length;
    const hostSeat = table.seats.findIndex((s) => s.playerId !== "" && s.playerId === table.hostPlayerId);
    const partner = hostSeat >= 0 && n === 4 ? (hostSeat + 2) % 4 : -1;
    suggested = table.seats[partner]?.state === TableSeatState.OPEN ? partner : table.seats.findIndex((s) => s.state === TableSeatState.OPEN);
    if (suggested < 0) suggested = undefined;
  }
  const host = table?.seats.find((s) => s.playerId !== "" && s.playerId === table.hostPlayerId);

  return (
    <main class="page lobby join" data-page="join" data-code={props.code}>
      <LobbyHeader title={t("lobby:join.pageTitle")} />
      {identity === undefined ? <NameForm intro={t("lobby:identity.introJoin")} /> : null}
      {identity !== undefined && table === undefined && problem === undefined ? <p role="status">{t("lobby:loading")}</p> : null}
      {table !== undefined ? (
        <section class="card-panel" aria-labelledby="join-seats-title">
          <h2 id="join-seats-title">{host !== undefined ? t("lobby:join.tableOf", { name: host.name }) : t("lobby:join.table")}</h2>
          <TableFacts table={table} />
          {table.state === TableState.WAITING ? (
            <>
              <p>{t("lobby:join.choose")}</p>
              <Seats table={table} me={undefined} onSit={(i) => void sit(i)} />
              {suggested !== undefined ? (
                <button type="button" class="strong" disabled={busy} onClick={() => void sit(suggested)} data-action="join-suggested">
                  {table.seats.length === 4 && host !== undefined && suggested === (table.seats.indexOf(host) + 2) % 4
                    ? t("lobby:join.asPartner", { name: host.name })
                    : t("lobby:join.sitAt", { n: suggested + 1 })}
                </button>
              ) : null}
            </>
          ) : (
            <p>{t("lobby:join.notWaiting")}</p>
          )}
        </section>
      ) : null}
      {problem !== undefined ? <ProblemBox problem={problem} onClose={() => setProblem(undefined)} /> : null}
      <p>
        <a href="#/">{t("lobby:backToLobby")}</a>
      </p>
    </main>
  );
}
