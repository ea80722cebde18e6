// Tables: open one (rules, public or private, rated, turn timer, bots for
// the empty seats), join a friend's by its code, and the public tables
// waiting for players (ListTables, then WatchLobby or PollLobby).
import { useEffect, useState } from "preact/hooks";
import { TableVisibility, Unattended, type Table, type WatchLobbyResponse } from "@spades/client";
import { problemOf, type Problem } from "../errors.js";
import { t } from "../i18n.js";
import { follow, playerSession, saveWaiting, type Identity } from "../player.js";
import { ProblemBox } from "../table.js";
import { PresetChoice, go, presetName, seatsTaken, type PresetId } from "./common.js";

const TIMERS = [0, 30_000, 60_000] as const;

export function timerLabel(ms: number): string {
  return ms === 0 ? t("lobby:timer.none") : t("lobby:timer.seconds", { count: Math.round(ms / 1000) });
}

export function OpenTableForm(props: { identity: Identity | undefined }) {
  const [preset, setPreset] = useState<PresetId>("classic");
  const [priv, setPriv] = useState(true);
  const [rated, setRated] = useState(false);
  const [timer, setTimer] = useState<number>(0);
  const [bots, setBots] = useState(true);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Problem | undefined>(undefined);
  const disabled = props.identity === undefined;

  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    setProblem(undefined);
    try {
      const res = await playerSession().call((lobby) =>
        lobby.openTable({
          ruleset: { preset },
          visibility: priv ? TableVisibility.INVITE_ONLY : TableVisibility.PUBLIC,
          rated,
          turnTimerMs: timer,
          unattended: bots ? Unattended.FILL_WITH_BOTS : Unattended.CLOSE,
        }),
      );
      const table = res.table!;
      saveWaiting({ tableId: table.tableId, seat: res.seat, token: res.seatToken });
      go(`#/table/${encodeURIComponent(table.tableId)}`);
    } catch (err) {
      setProblem(problemOf(err));
      setBusy(false);
    }
  };

  return (
    <form class="card-panel" data-form="open-table" onSubmit={(e) => void submit(e)} aria-labelledby="open-title">
      <h2 id="open-title">{t("lobby:open.title")}</h2>
      <p>{t("lobby:open.intro")}</p>
      {disabled ? <p class="note">{t("lobby:needName")}</p> : null}
      <PresetChoice name="tablePreset" preset={preset} onChange={setPreset} disabled={disabled} />
      <fieldset disabled={disabled}>
        <legend>{t("lobby:open.who")}</legend>
        <label class="choice">
          <input type="radio" name="visibility" value="private" checked={priv} onChange={() => setPriv(true)} />
          <span>
            {t("lobby:open.private")} <small>{t("lobby:open.privateHelp")}</small>
          </span>
        </label>
        <label class="choice">
          <input type="radio" name="visibility" value="public" checked={!priv} onChange={() => setPriv(false)} />
          <span>
            {t("lobby:open.public")} <small>{t("lobby:open.publicHelp")}</small>
          </span>
        </label>
      </fieldset>
      <fieldset disabled={disabled}>
        <legend>{t("lobby:open.options")}</legend>
        <label class="choice">
          <input type="checkbox" name="rated" checked={rated} onChange={(e) => setRated(e.currentTarget.checked)} />
          <span>
            {t("lobby:rated")} <small>{t("lobby:open.ratedHelp")}</small>
          </span>
        </label>
        <label class="choice">
          <input type="checkbox" name="allowBots" checked={bots} onChange={(e) => setBots(e.currentTarget.checked)} />
          <span>
            {t("lobby:open.bots")} <small>{t("lobby:open.botsHelp")}</small>
          </span>
        </label>
        <label>
          {t("lobby:open.timer")}
          <select name="turnTimer" value={String(timer)} onChange={(e) => setTimer(Number(e.currentTarget.value))}>
            {TIMERS.map((ms) => (
              <option value={String(ms)} key={ms}>
                {timerLabel(ms)}
              </option>
            ))}
          </select>
        </label>
      </fieldset>
      {problem !== undefined ? <ProblemBox problem={problem} onClose={() => setProblem(undefined)} /> : null}
      <button type="submit" class="strong" disabled={disabled || busy} data-action="open-table">
        {busy ? t("lobby:open.opening") : t("lobby:open.button")}
      </button>
    </form>
  );
}

/** An invite code typed in (or pasted: a whole invite link works too). */
export function JoinByCode() {
  const [code, setCode] = useState("");
  return (
    <form
      class="card-panel"
      data-form="join-code"
      aria-labelledby="join-title"
      onSubmit={(e) => {
        e.preventDefault();
        const c = code.trim().replace(/^.*#\/join\//, "");
        if (c !== "") go(`#/join/${encodeURIComponent(c)}`);
      }}
    >
      <h2 id="join-title">{t("lobby:join.title")}</h2>
      <label>
        {t("lobby:join.code")}
        <input name="inviteCode" value={code} maxLength={200} autoComplete="off" autoCapitalize="characters" spellcheck={false} onInput={(e) => setCode(e.currentTarget.value)} />
        <small>{t("lobby:join.codeHelp")}</small>
      </label>
      <button type="submit" data-action="join-code">
        {t("lobby:join.button")}
      </button>
    </form>
  );
}

/** The public tables waiting for players, kept up to date. */
export function OpenTables(props: { identity: Identity | undefined }) {
  const [tables, setTables] = useState<Map<string, Table> | undefined>(undefined);
  const [problem, setProblem] = useState<Problem | undefined>(undefined);
  const [joining, setJoining] = useState<string | undefined>(undefined);
  const [round, setRound] = useState(0);
  const signedIn = props.identity !== undefined;

  useEffect(() => {
    if (!signedIn) return;
    let stop: (() => void) | undefined;
    let cancelled = false;
    setProblem(undefined);
    void (async () => {
      try {
        const { tables: list, version } = await playerSession().call((lobby) => lobby.listAllTables());
        if (cancelled) return;
        const map = new Map(list.map((x) => [x.tableId, x] as const));
        setTables(new Map(map));
        stop = follow<WatchLobbyResponse>(
          (mode) =>
            mode === "stream" ? playerSession().lobby.watchLobby({ afterVersion: version }) : playerSession().lobby.pollLobby({ afterVersion: version }),
          (batch) => {
            if (batch.reset) {
              stop?.();
              setRound((r) => r + 1); // list again
              return;
            }
            for (const x of batch.tables) map.set(x.tableId, x);
            for (const id of batch.removedTableIds) map.delete(id);
            setTables(new Map(map));
          },
          (e) => setProblem(problemOf(e)),
        );
        if (cancelled) stop();
      } catch (e) {
        if (!cancelled) setProblem(problemOf(e));
      }
    })();
    return () => {
      cancelled = true;
      stop?.();
    };
  }, [signedIn, round]);

  const join = async (tableId: string): Promise<void> => {
    setJoining(tableId);
    setProblem(undefined);
    try {
      const res = await playerSession().call((lobby) => lobby.joinTable({ tableId }));
      saveWaiting({ tableId, seat: res.seat, token: res.seatToken });
      go(`#/table/${encodeURIComponent(tableId)}`);
    } catch (e) {
      setProblem(problemOf(e));
      setJoining(undefined);
    }
  };

  const list = tables === undefined ? [] : [...tables.values()].sort((a, b) => Number(a.createdMs - b.createdMs));
  return (
    <section class="card-panel" data-open-tables aria-labelledby="tables-title">
      <h2 id="tables-title">{t("lobby:tables.title")}</h2>
      {!signedIn ? (
        <p class="note">{t("lobby:needName")}</p>
      ) : tables === undefined && problem === undefined ? (
        <p role="status">{t("lobby:loading")}</p>
      ) : list.length === 0 ? (
        <p class="empty" data-empty>
          {t("lobby:tables.none")}
        </p>
      ) : (
        <ul class="table-list">
          {list.map((x) => {
            const total = x.seats.length;
            const taken = seatsTaken(x);
            const host = x.seats.find((s) => s.playerId !== "" && s.playerId === x.hostPlayerId);
            return (
              <li key={x.tableId} data-table-id={x.tableId}>
                <div>
                  <b>{presetName(x.ruleset?.preset || "classic")}</b>
                  {host !== undefined ? <span> · {t("lobby:tables.host", { name: host.name })}</span> : null}
                  <div class="facts">
                    <span data-seats-taken={taken} data-seats-total={total}>
                      {t("lobby:tables.seats", { count: total, taken })}
                    </span>
                    <span>{x.rated ? t("lobby:tables.rated") : t("lobby:tables.unrated")}</span>
                    <span>{timerLabel(x.turnTimerMs)}</span>
                  </div>
                </div>
                <button
                  type="button"
                  onClick={() => void join(x.tableId)}
                  disabled={joining !== undefined}
                  data-action="join-table"
                  aria-label={t("lobby:tables.joinLabel", { rules: presetName(x.ruleset?.preset || "classic"), name: host?.name ?? "" })}
                >
                  {t("lobby:tables.join")}
                </button>
              </li>
            );
          })}
        </ul>
      )}
      {problem !== undefined ? <ProblemBox problem={problem} onClose={() => setProblem(undefined)} action={{ label: t("lobby:retry"), run: () => setRound((r) => r + 1) }} /> : null}
    </section>
  );
}
