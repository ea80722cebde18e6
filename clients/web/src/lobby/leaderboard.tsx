// #/leaderboard[/<pool>]: a rating pool's leaderboard a page at a time, best
// first (GetLeaderboard), with the page around the player.
import { useEffect, useState } from "preact/hooks";
import { SpadesError, type GetLeaderboardResponse } from "@spades/client";
import { problemOf, type Problem } from "../errors.js";
import { t, useLanguage } from "../i18n.js";
import { playerSession } from "../player.js";
import { ProblemBox } from "../table.js";
import { LobbyHeader, PRESET_IDS, decimal, go, presetName } from "./common.js";
import { NameForm, useIdentity } from "./identity.js";

type Page = { pageToken?: string; aroundPlayerId?: string };

const PAGE_SIZE = 20;

export function Leaderboard(props: { pool: string }) {
  useLanguage();
  const identity = useIdentity();
  const pool = props.pool || "classic";
  const [page, setPage] = useState<Page>({});
  const [board, setBoard] = useState<GetLeaderboardResponse | undefined>(undefined);
  const [empty, setEmpty] = useState<string | undefined>(undefined);
  const [problem, setProblem] = useState<Problem | undefined>(undefined);
  const [notice, setNotice] = useState<string | undefined>(undefined);

  useEffect(() => {
    if (identity === undefined) return;
    let cancelled = false;
    setProblem(undefined);
    playerSession()
      .call((lobby) => lobby.leaderboard({ pool, pageSize: PAGE_SIZE, ...page }))
      .then(
        (b) => {
          if (cancelled) return;
          setBoard(b);
          setEmpty(undefined);
        },
        (e: unknown) => {
          if (cancelled) return;
          if (e instanceof SpadesError && e.reason === "PLAYER_NOT_RATED") {
            setNotice(t("lobby:leaderboard.notRated"));
            setPage({});
          } else if (e instanceof SpadesError && e.reason === "POOL_NOT_FOUND") {
            setBoard(undefined);
            setEmpty(t("lobby:leaderboard.noPool"));
          } else {
            setProblem(problemOf(e));
          }
        },
      );
    return () => {
      cancelled = true;
    };
  }, [pool, page.pageToken, page.aroundPlayerId, identity === undefined]);

  const me = identity?.playerId;
  return (
    <main class="page lobby leaderboard" data-page="leaderboard" data-pool={pool}>
      <LobbyHeader title={t("lobby:leaderboard.title")} />
      {identity === undefined ? <NameForm intro={t("lobby:identity.introBoard")} /> : null}
      <section class="card-panel" aria-labelledby="board-title">
        <h2 id="board-title">{t("lobby:leaderboard.pool", { pool: presetName(pool) })}</h2>
        <label>
          {t("lobby:leaderboard.choosePool")}
          <select
            name="pool"
            value={pool}
            onChange={(e) => {
              setPage({});
              setNotice(undefined);
              go(`#/leaderboard/${encodeURIComponent(e.currentTarget.value)}`);
            }}
          >
            {[...PRESET_IDS, ...(PRESET_IDS.includes(pool as never) ? [] : [pool])].map((p) => (
              <option value={p} key={p}>
                {presetName(p)}
              </option>
            ))}
          </select>
        </label>
        {board !== undefined ? (
          <p class="note">
            {t("lobby:leaderboard.total", { count: board.totalPlayers })} {t("lobby:leaderboard.minGames", { count: board.minGames })}
          </p>
        ) : null}
        {notice !== undefined ? (
          <p class="note" role="status">
            {notice}
          </p>
        ) : null}
        {empty !== undefined || (board !== undefined && board.entries.length === 0) ? (
          <p class="empty" data-empty>
            {empty ?? t("lobby:leaderboard.empty")}
          </p>
        ) : board !== undefined ? (
          <div class="scroll-x">
            <table class="board" data-board>
              <caption class="sr-only">{t("lobby:leaderboard.pool", { pool: presetName(pool) })}</caption>
              <thead>
                <tr>
                  <th scope="col">{t("lobby:leaderboard.rank")}</th>
                  <th scope="col">{t("lobby:leaderboard.player")}</th>
                  <th scope="col">{t("lobby:leaderboard.rating")}</th>
                  <th scope="col">{t("lobby:leaderboard.games")}</th>
                  <th scope="col">{t("lobby:leaderboard.wins")}</th>
                </tr>
              </thead>
              <tbody>
                {board.entries.map((e) => (
                  <tr key={e.playerId} class={e.playerId === me ? "mine" : ""} data-player={e.playerId}>
                    <td>{e.rank}</td>
                    <td>
                      <a href={`#/profile/${encodeURIComponent(e.playerId)}`}>{e.name || e.playerId}</a>
                      {e.playerId === me ? <span class="tag">{t("lobby:seat.you")}</span> : null}
                    </td>
                    <td>{decimal(e.rating?.conservative ?? 0)}</td>
                    <td>{e.rating?.games ?? 0}</td>
                    <td>{e.rating?.wins ?? 0}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : problem === undefined && identity !== undefined ? (
          <p role="status">{t("lobby:loading")}</p>
        ) : null}
        {problem !== undefined ? <ProblemBox problem={problem} onClose={() => setProblem(undefined)} /> : null}
        <div class="row">
          <button type="button" disabled={board === undefined || board.previousPageToken === ""} onClick={() => board && setPage({ pageToken: board.previousPageToken })} data-action="page-prev">
            {t("lobby:leaderboard.previous")}
          </button>
          <button type="button" disabled={board === undefined || board.nextPageToken === ""} onClick={() => board && setPage({ pageToken: board.nextPageToken })} data-action="page-next">
            {t("lobby:leaderboard.next")}
          </button>
          <button type="button" disabled={me === undefined} onClick={() => me && (setNotice(undefined), setPage({ aroundPlayerId: me }))} data-action="around-me">
            {t("lobby:leaderboard.aroundMe")}
          </button>
          <button type="button" disabled={page.pageToken === undefined && page.aroundPlayerId === undefined} onClick={() => setPage({})} data-action="page-top">
            {t("lobby:leaderboard.top")}
          </button>
        </div>
      </section>
      <p>
        <a href="#/">{t("lobby:backToLobby")}</a>
      </p>
    </main>
  );
}
