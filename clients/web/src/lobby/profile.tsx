// #/profile[/<player>]: a player's ratings per pool (with rank) and record
// over finished lobby matches (GetProfile); the player's own by default.
import { useEffect, useState } from "preact/hooks";
import { SpadesError, type PlayerProfile, type PlayerStats } from "@spades/client";
import { problemOf, type Problem } from "../errors.js";
import { language, t, useLanguage } from "../i18n.js";
import { playerSession } from "../player.js";
import { ProblemBox } from "../table.js";
import { CopyButton, LobbyHeader, decimal, percent, presetName } from "./common.js";
import { NameForm, useIdentity } from "./identity.js";

function Record(props: { stats: PlayerStats | undefined; title: string; id: string }) {
  const s = props.stats;
  if (s === undefined || s.matches === 0) {
    return (
      <section class="record" aria-labelledby={props.id}>
        <h3 id={props.id}>{props.title}</h3>
        <p class="empty">{t("lobby:profile.noMatches")}</p>
      </section>
    );
  }
  const rows: [string, string][] = [
    [t("lobby:profile.matches"), String(s.matches)],
    [t("lobby:profile.wins"), `${s.wins} (${percent(s.matches > 0 ? s.wins / s.matches : 0)})`],
    [t("lobby:profile.hands"), String(s.hands)],
    [t("lobby:profile.contractsMade"), s.contracts > 0 ? `${percent(s.contractsMadeShare)} (${s.contractsMade}/${s.contracts})` : "—"],
    [t("lobby:profile.sets"), String(s.sets)],
    [t("lobby:profile.meanBid"), `${decimal(s.meanBid)} / ${decimal(s.meanTricks)}`],
    [t("lobby:profile.bags"), `${s.bags} (${t("lobby:profile.perHand", { value: decimal(s.bagsPerHand, 2) })})`],
    [t("lobby:profile.nils"), `${s.nilsMade}/${s.nilsBid}`],
    [t("lobby:profile.blindNils"), `${s.blindNilsMade}/${s.blindNilsBid}`],
  ];
  return (
    <section class="record" aria-labelledby={props.id} data-record={props.id}>
      <h3 id={props.id}>{props.title}</h3>
      <dl class="stats">
        {rows.map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </div>
        ))}
      </dl>
    </section>
  );
}

export function Profile(props: { playerId: string }) {
  useLanguage();
  const identity = useIdentity();
  const [profile, setProfile] = useState<PlayerProfile | undefined>(undefined);
  const [missing, setMissing] = useState(false);
  const [problem, setProblem] = useState<Problem | undefined>(undefined);
  const own = props.playerId === "" || props.playerId === identity?.playerId;

  useEffect(() => {
    if (identity === undefined) return;
    let cancelled = false;
    setProblem(undefined);
    setMissing(false);
    setProfile(undefined);
    playerSession()
      .call((lobby) => lobby.profile(props.playerId))
      .then(
        (p) => !cancelled && setProfile(p),
        (e: unknown) => {
          if (cancelled) return;
          if (e instanceof SpadesError && e.reason === "PLAYER_NOT_FOUND") setMissing(true);
          else setProblem(problemOf(e));
        },
      );
    return () => {
      cancelled = true;
    };
  }, [props.playerId, identity?.playerId]);

  const name = profile?.name || (own ? identity?.name : undefined) || props.playerId;
  const id = profile?.playerId || (own ? identity?.playerId : props.playerId) || "";
  return (
    <main class="page lobby profile" data-page="profile" data-player={id}>
      <LobbyHeader title={name ? t("lobby:profile.titleOf", { name }) : t("lobby:profile.title")} />
      {identity === undefined ? <NameForm intro={t("lobby:identity.introProfile")} /> : null}
      {identity !== undefined && profile === undefined && !missing && problem === undefined ? <p role="status">{t("lobby:loading")}</p> : null}
      {id !== "" ? (
        <p class="player-id profile-id">
          {t("lobby:profile.id")} <code>{id}</code> <CopyButton text={id} label={t("lobby:identity.copyId")} what="profile-id" />
        </p>
      ) : null}
      {missing ? (
        <section class="card-panel" data-empty>
          <h2>{t("lobby:profile.ratings")}</h2>
          <p class="empty">{own ? t("lobby:profile.noneOwn") : t("lobby:profile.none")}</p>
        </section>
      ) : null}
      {profile !== undefined ? (
        <>
          <section class="card-panel" aria-labelledby="ratings-title" data-ratings>
            <h2 id="ratings-title">{t("lobby:profile.ratings")}</h2>
            {profile.ratings.length === 0 ? (
              <p class="empty">{t("lobby:profile.noRatings")}</p>
            ) : (
              <div class="scroll-x">
                <table class="board">
                  <thead>
                    <tr>
                      <th scope="col">{t("lobby:profile.pool")}</th>
                      <th scope="col">{t("lobby:leaderboard.rating")}</th>
                      <th scope="col">{t("lobby:leaderboard.rank")}</th>
                      <th scope="col">{t("lobby:leaderboard.games")}</th>
                      <th scope="col">{t("lobby:profile.winsLosses")}</th>
                    </tr>
                  </thead>
                  <tbody>
                    {profile.ratings.map((r) => (
                      <tr key={r.pool} data-pool={r.pool}>
                        <td>
                          <a href={`#/leaderboard/${encodeURIComponent(r.pool)}`}>{presetName(r.pool)}</a>
                        </td>
                        <td>
                          {decimal(r.conservative)} <small>({decimal(r.mu)} ± {decimal(r.sigma)})</small>
                        </td>
                        <td>{r.rank > 0 ? `#${r.rank}` : t("lobby:profile.unranked")}</td>
                        <td>{r.games}</td>
                        <td>
                          {r.wins}–{r.losses}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </section>
          <section class="card-panel" aria-labelledby="record-title">
            <h2 id="record-title">{t("lobby:profile.record")}</h2>
            {Number(profile.lastPlayedMs) > 0 ? (
              <p class="note">
                {t("lobby:profile.lastPlayed", {
                  when: new Intl.DateTimeFormat(language(), { dateStyle: "medium", timeStyle: "short" }).format(new Date(Number(profile.lastPlayedMs))),
                })}
              </p>
            ) : null}
            <div class="records">
              <Record stats={profile.withHumans} title={t("lobby:profile.withHumans")} id="record-humans" />
              <Record stats={profile.withBots} title={t("lobby:profile.withBots")} id="record-bots" />
            </div>
          </section>
        </>
      ) : null}
      {problem !== undefined ? <ProblemBox problem={problem} onClose={() => setProblem(undefined)} /> : null}
      <p>
        <a href="#/">{t("lobby:backToLobby")}</a>
      </p>
    </main>
  );
}
