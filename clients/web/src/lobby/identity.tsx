// The player's identity in the lobby: the name form (first visit, or a new
// name), and the bar that shows who is playing, with their id to give a friend.
import { useEffect, useState } from "preact/hooks";
import { problemOf, type Problem } from "../errors.js";
import { t } from "../i18n.js";
import { MAX_NAME, playerSession, savedName, type Identity } from "../player.js";
import { ProblemBox } from "../table.js";
import { CopyButton } from "./common.js";

/** The player's identity, re-rendering when it changes (signed in, renewed). */
export function useIdentity(): Identity | undefined {
  const session = playerSession();
  const [id, setId] = useState(session.current);
  useEffect(() => {
    setId(session.current);
    return session.subscribe(() => setId(session.current));
  }, [session]);
  return id;
}

/** Asks for a display name and gets a guest credential for it. */
export function NameForm(props: { intro?: string; onDone?: () => void; onCancel?: () => void }) {
  const [name, setName] = useState(savedName() ?? t("lobby:identity.defaultName"));
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Problem | undefined>(undefined);
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    if (name.trim() === "") {
      setProblem({ title: t("lobby:identity.nameTitle"), text: t("lobby:identity.nameEmpty"), reason: "", code: "", rule: undefined, transient: false });
      return;
    }
    setBusy(true);
    setProblem(undefined);
    try {
      await playerSession().signIn(name);
      props.onDone?.();
    } catch (err) {
      setProblem(problemOf(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card-panel identity" data-form="identity" onSubmit={(e) => void submit(e)}>
      <h2>{t("lobby:identity.title")}</h2>
      <p>{props.intro ?? t("lobby:identity.intro")}</p>
      <label>
        {t("lobby:identity.name")}
        <input
          name="playerName"
          value={name}
          maxLength={MAX_NAME}
          autoComplete="nickname"
          required
          onInput={(e) => setName(e.currentTarget.value)}
        />
      </label>
      {problem !== undefined ? <ProblemBox problem={problem} onClose={() => setProblem(undefined)} /> : null}
      <div class="row">
        <button type="submit" class="strong" disabled={busy} data-action="sign-in">
          {busy ? t("lobby:identity.signingIn") : t("lobby:identity.signIn")}
        </button>
        {props.onCancel !== undefined ? (
          <button type="button" onClick={props.onCancel} data-action="cancel-name">
            {t("lobby:identity.cancel")}
          </button>
        ) : null}
      </div>
    </form>
  );
}

/** Who is playing: the name, the id (to give a friend who wants to be partners), and a way to change the name. */
export function IdentityBar(props: { identity: Identity }) {
  const [editing, setEditing] = useState(false);
  if (editing) {
    return <NameForm intro={t("lobby:identity.changeIntro")} onDone={() => setEditing(false)} onCancel={() => setEditing(false)} />;
  }
  const id = props.identity;
  return (
    <section class="card-panel identity" data-identity={id.playerId} aria-labelledby="identity-title">
      <h2 id="identity-title">{t("lobby:identity.playingAs", { name: id.name })}</h2>
      <p class="player-id">
        {t("lobby:identity.yourId")} <code data-player-id>{id.playerId}</code>
      </p>
      <div class="row">
        <CopyButton text={id.playerId} label={t("lobby:identity.copyId")} what="player-id" />
        <a class="button-link" href={`#/profile/${encodeURIComponent(id.playerId)}`}>
          {t("lobby:identity.profile")}
        </a>
        <button type="button" onClick={() => setEditing(true)} data-action="change-name">
          {t("lobby:identity.changeName")}
        </button>
      </div>
      <p class="note">{t("lobby:identity.idNote")}</p>
    </section>
  );
}
