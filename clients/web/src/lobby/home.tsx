// The lobby (#/): who is playing, Play now, Open a table, Join a friend's
// table, the open tables, Watch a match, and Practice against bots.
import { t, useLanguage } from "../i18n.js";
import { savedMatchId } from "../storage.js";
import { LobbyHeader } from "./common.js";
import { IdentityBar, NameForm, useIdentity } from "./identity.js";
import { Practice, WatchForm } from "./practice.js";
import { QuickPlay } from "./quickplay.js";
import { JoinByCode, OpenTableForm, OpenTables } from "./tables.js";

export function Lobby(props: { onSeat: (matchId: string, seat: number, token: string) => void }) {
  useLanguage();
  const identity = useIdentity();
  const saved = savedMatchId();
  return (
    <main class="page lobby" data-page="lobby">
      <LobbyHeader title={t("lobby:title")} />
      {saved !== undefined ? (
        <p class="resume">
          <a href={`#/play/${encodeURIComponent(saved)}`} data-action="resume">
            {t("lobby:resume", { match: saved })}
          </a>
        </p>
      ) : null}
      {identity === undefined ? <NameForm /> : <IdentityBar identity={identity} key={identity.playerId} />}
      <div class="lobby-grid">
        <QuickPlay identity={identity} />
        <OpenTableForm identity={identity} />
        <JoinByCode />
        <OpenTables identity={identity} />
        <WatchForm />
        <Practice onSeat={props.onSeat} defaultName={identity?.name} />
      </div>
    </main>
  );
}
