// "Play now": quick play for a preset, alone or with a friend as partner,
// rated or not; the ticket while it waits (WatchTicket, or GetTicket long
// polls), with Cancel; once placed, the seat is saved and the table opens.
import { useEffect, useRef, useState } from "preact/hooks";
import { SpadesError, TicketState, type Ticket } from "@spades/client";
import { newActionId } from "../controllers.js";
import { problemOf, type Problem } from "../errors.js";
import { t } from "../i18n.js";
import { follow, playerSession, saveTicket, savedTicket, seatAt, type Identity } from "../player.js";
import { ProblemBox } from "../table.js";
import { PresetChoice, go, presetName, type PresetId } from "./common.js";

export function QuickPlay(props: { identity: Identity | undefined }) {
  const [preset, setPreset] = useState<PresetId>("classic");
  const [withFriend, setWithFriend] = useState(false);
  const [partner, setPartner] = useState("");
  const [rated, setRated] = useState(false);
  const [busy, setBusy] = useState(false);
  const [ticket, setTicket] = useState<Ticket | undefined>(undefined);
  const [problem, setProblem] = useState<Problem | undefined>(undefined);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const stop = useRef<(() => void) | undefined>(undefined);
  const [now, setNow] = useState(Date.now());
  const cancelButton = useRef<HTMLButtonElement>(null);

  const followTicket = (id: string): void => {
    stop.current?.();
    saveTicket(id);
    stop.current = follow<Ticket>(
      (mode) => (mode === "stream" ? playerSession().lobby.watchTicket(id) : playerSession().lobby.pollTicket(id)),
      (tk) => {
        setTicket(tk);
        if (tk.state === TicketState.PLACED && tk.placement !== undefined) {
          saveTicket(undefined);
          const p = tk.placement;
          go(seatAt(p.matchId, p.seat, p.seatToken));
        } else if (tk.state === TicketState.CANCELLED) {
          saveTicket(undefined);
          setTicket(undefined);
          setNotice(tk.cancelReason === "partner_did_not_join" ? t("lobby:playNow.partnerDidNotJoin") : t("lobby:playNow.cancelled"));
        }
      },
      (e) => {
        setProblem(problemOf(e));
        setTicket(undefined);
        saveTicket(undefined);
      },
    );
  };

  // A ticket this tab was following before a reload.
  useEffect(() => {
    const id = savedTicket();
    if (id !== undefined && props.identity !== undefined) followTicket(id);
    return () => stop.current?.();
  }, [props.identity?.playerId]);

  // The form gives way to the ticket: keyboard focus goes to its Cancel button, not to the page's start.
  useEffect(() => {
    if (ticket !== undefined) cancelButton.current?.focus();
  }, [ticket?.ticketId]);

  useEffect(() => {
    if (ticket === undefined) return;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [ticket !== undefined]);

  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    setProblem(undefined);
    setNotice(undefined);
    const friend = partner.trim();
    if (withFriend && friend === "") {
      setProblem({ title: t("lobby:playNow.partnerTitle"), text: t("lobby:playNow.partnerMissing"), reason: "", code: "", rule: undefined, transient: false });
      return;
    }
    setBusy(true);
    // One request id for this press: the client's retries, and the call made
    // again after a renewed credential, resend it, so an answer lost on the
    // way gives back the ticket it made rather than a second one. The next
    // press is another ask, with a new id.
    const requestId = newActionId();
    try {
      const tk = await playerSession().call((lobby) =>
        lobby.quickPlay({ ruleset: { preset }, rated, requestId, ...(withFriend ? { partnerPlayerId: friend } : {}) }),
      );
      setTicket(tk);
      followTicket(tk.ticketId);
    } catch (err) {
      // A ticket held already (a lost answer, another tab): follow it.
      if (err instanceof SpadesError && err.reason === "ALREADY_QUEUED" && err.metadata["ticket_id"]) {
        followTicket(err.metadata["ticket_id"]);
      } else {
        setProblem(problemOf(err));
      }
    } finally {
      setBusy(false);
    }
  };

  const cancel = async (): Promise<void> => {
    setProblem(undefined);
    try {
      const tk = await playerSession().call((lobby) => lobby.cancelTicket(ticket?.ticketId ?? ""));
      stop.current?.();
      saveTicket(undefined);
      setTicket(undefined);
      setNotice(tk.state === TicketState.CANCELLED ? t("lobby:playNow.cancelled") : undefined);
    } catch (err) {
      setProblem(problemOf(err));
    }
  };

  if (ticket !== undefined) {
    const waitingForPartner = ticket.state === TicketState.WAITING_FOR_PARTNER;
    const botsIn = Number(ticket.botsAtMs) > 0 ? Math.max(0, Math.ceil((Number(ticket.botsAtMs) - now) / 1000)) : undefined;
    return (
      <section class="card-panel" data-ticket={ticket.ticketId} data-ticket-state={TicketState[ticket.state]} aria-labelledby="playnow-title">
        <h2 id="playnow-title">{t("lobby:playNow.title")}</h2>
        <p role="status" aria-live="polite">
          <span class="spinner" aria-hidden="true" />{" "}
          {waitingForPartner
            ? t("lobby:playNow.waitingForPartner", { partner: ticket.partnerPlayerId })
            : t("lobby:playNow.searching", { rules: presetName(ticket.ruleset?.preset ?? "classic") })}
        </p>
        <p class="note">
          {ticket.rated ? t("lobby:playNow.ratedTicket") : t("lobby:playNow.unratedTicket")}
          {botsIn !== undefined && !waitingForPartner ? ` ${t("lobby:playNow.botsIn", { count: botsIn })}` : ""}
        </p>
        {problem !== undefined ? <ProblemBox problem={problem} onClose={() => setProblem(undefined)} /> : null}
        <button type="button" ref={cancelButton} onClick={() => void cancel()} data-action="cancel-ticket">
          {t("lobby:playNow.cancel")}
        </button>
      </section>
    );
  }

  const disabled = props.identity === undefined;
  return (
    <form class="card-panel" data-form="quick-play" onSubmit={(e) => void submit(e)} aria-labelledby="playnow-title">
      <h2 id="playnow-title">{t("lobby:playNow.title")}</h2>
      <p>{t("lobby:playNow.intro")}</p>
      {disabled ? <p class="note">{t("lobby:needName")}</p> : null}
      <PresetChoice name="qpPreset" preset={preset} onChange={setPreset} disabled={disabled} />
      <fieldset disabled={disabled}>
        <legend>{t("lobby:playNow.partner")}</legend>
        <label class="choice">
          <input type="radio" name="qpParty" value="alone" checked={!withFriend} onChange={() => setWithFriend(false)} />
          <span>{t("lobby:playNow.alone")}</span>
        </label>
        <label class="choice">
          <input type="radio" name="qpParty" value="friend" checked={withFriend} onChange={() => setWithFriend(true)} />
          <span>{t("lobby:playNow.withFriend")}</span>
        </label>
        {withFriend ? (
          <label>
            {t("lobby:playNow.partnerId")}
            <input name="partnerId" value={partner} maxLength={128} autoComplete="off" spellcheck={false} onInput={(e) => setPartner(e.currentTarget.value)} />
            <small>{t("lobby:playNow.partnerHelp")}</small>
          </label>
        ) : null}
      </fieldset>
      <label class="choice">
        <input type="checkbox" name="qpRated" checked={rated} disabled={disabled} onChange={(e) => setRated(e.currentTarget.checked)} />
        <span>
          {t("lobby:rated")} <small>{t("lobby:ratedHelp")}</small>
        </span>
      </label>
      {notice !== undefined ? (
        <p class="note" role="status">
          {notice}
        </p>
      ) : null}
      {problem !== undefined ? <ProblemBox problem={problem} onClose={() => setProblem(undefined)} /> : null}
      <button type="submit" class="strong" disabled={disabled || busy} data-action="play-now">
        {busy ? t("lobby:playNow.asking") : t("lobby:playNow.button")}
      </button>
    </form>
  );
}
