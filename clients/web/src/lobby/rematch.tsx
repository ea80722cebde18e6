// #/rematch/<match>: asks for (or accepts) the rematch of a finished match
// with this tab's seat in it, then goes to the new match or its waiting room.
// A page of its own so that a reload asks again (Rematch is idempotent) and a
// refusal has somewhere to show.
import { useEffect, useState } from "preact/hooks";
import { problemOf, type Problem } from "../errors.js";
import { t, useLanguage } from "../i18n.js";
import { rematch } from "../player.js";
import { ProblemBox } from "../table.js";
import { LobbyHeader } from "./common.js";

export function RematchPage(props: { matchId: string }) {
  useLanguage();
  const [problem, setProblem] = useState<Problem | undefined>(undefined);
  const [round, setRound] = useState(0);
  useEffect(() => {
    let cancelled = false;
    setProblem(undefined);
    rematch(props.matchId).then(
      (outcome) => !cancelled && window.location.replace(outcome.route),
      (e: unknown) => !cancelled && setProblem(problemOf(e)),
    );
    return () => {
      cancelled = true;
    };
  }, [props.matchId, round]);
  return (
    <main class="page lobby" data-page="rematch">
      <LobbyHeader title={t("lobby:rematch.title")} />
      {problem === undefined ? <p role="status">{t("lobby:rematch.asking")}</p> : null}
      {problem !== undefined ? (
        <ProblemBox problem={problem} onClose={() => setProblem(undefined)} {...(problem.transient ? { action: { label: t("lobby:retry"), run: () => setRound((r) => r + 1) } } : {})} />
      ) : null}
      <p>
        <a href={`#/play/${encodeURIComponent(props.matchId)}`}>{t("lobby:rematch.back")}</a> · <a href="#/">{t("lobby:backToLobby")}</a>
      </p>
    </main>
  );
}
