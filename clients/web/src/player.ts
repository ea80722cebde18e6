// The player behind the page: a display name (localStorage), a player
// credential from the web server's POST /api/guest (development: `make run`'s
// stand-in for a game's identity provider), kept in localStorage with its
// expiry and renewed before it runs out or when the server refuses it as
// expired; and a PlayerClient (LobbyService) on the page's gRPC-Web transport.
//
// A renewal sends the current credential along (POST /api/guest {renew}), so
// the guest stays the same player (id, tables, ratings); only a credential
// this server cannot renew (another launcher's key, expired for over a week)
// makes a new guest under the same name.
import { Code, PlayerClient, SpadesError, TableState, type SpadesClient, type Table, type Watch } from "@spades/client";
import { apiCall, makeClient } from "./api.js";
import { HttpProblem } from "./errors.js";
import { t } from "./i18n.js";
import { loadSeat, loadTransport, saveSeat } from "./storage.js";

export interface Identity {
  readonly playerId: string;
  readonly name: string;
  readonly credential: string;
  readonly expiresAtMs: number;
}

const IDENTITY_KEY = "spades.player";
const NAME_KEY = "spades.name";
const WAITING_KEY = "spades.waiting";
const TICKET_KEY = "spades.ticket";
/** Renew this long before the credential expires. */
const RENEW_BEFORE_MS = 120_000;
/** The guest endpoint's limit on names. */
export const MAX_NAME = 32;

function local(): Storage | undefined {
  try {
    return window.localStorage;
  } catch {
    return undefined;
  }
}

function session(): Storage | undefined {
  try {
    return window.sessionStorage;
  } catch {
    return undefined;
  }
}

function readJson<T>(store: Storage | undefined, key: string): T | undefined {
  const raw = store?.getItem(key);
  if (raw == null) return undefined;
  try {
    return JSON.parse(raw) as T;
  } catch {
    return undefined;
  }
}

function writeJson(store: Storage | undefined, key: string, value: unknown): void {
  try {
    if (value === undefined) store?.removeItem(key);
    else store?.setItem(key, JSON.stringify(value));
  } catch {
    // full or disabled: it lasts as long as the page
  }
}

/** The name the player gave last (prefills the name form). */
export function savedName(): string | undefined {
  const n = local()?.getItem(NAME_KEY);
  return n == null || n.trim() === "" ? undefined : n;
}

function loadIdentity(): Identity | undefined {
  const s = readJson<Identity>(local(), IDENTITY_KEY);
  if (s === undefined || typeof s.credential !== "string" || typeof s.playerId !== "string" || typeof s.expiresAtMs !== "number") {
    return undefined;
  }
  return s;
}

/** POST /api/guest: a guest's credential; with `renew` (the current one), for the same player. */
async function fetchGuest(name: string, renew?: string): Promise<Identity> {
  const g = (await apiCall("/api/guest", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(renew !== undefined ? { name, renew } : { name }),
  })) as Partial<Identity> | undefined;
  if (typeof g?.credential !== "string" || typeof g.playerId !== "string" || typeof g.expiresAtMs !== "number") {
    throw new HttpProblem({ title: t("lobby:identity.refusedTitle"), text: t("lobby:identity.noCredential"), reason: "", code: "", rule: undefined, transient: false });
  }
  return { credential: g.credential, playerId: g.playerId, name: typeof g.name === "string" ? g.name : name, expiresAtMs: g.expiresAtMs };
}

/** Refusals of the credential itself, which a new one cures. */
const CREDENTIAL_REASONS = new Set(["CREDENTIAL_EXPIRED", "CREDENTIAL_NOT_YET_VALID", "BAD_SIGNATURE", "UNKNOWN_KEY", "MALFORMED_CREDENTIAL", "CREDENTIAL_REQUIRED"]);

export function isCredentialRefusal(e: unknown): boolean {
  return e instanceof SpadesError && e.code === Code.Unauthenticated && CREDENTIAL_REASONS.has(e.reason);
}

/**
 * The page's player: their identity, renewed as needed, and their
 * PlayerClient, whose credential is a function (so each call, and each
 * reconnection of a watch, sends the current one).
 */
export class PlayerSession {
  private identity: Identity | undefined = loadIdentity();
  private renewing: Promise<Identity> | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly listeners = new Set<() => void>();
  readonly lobby: PlayerClient;

  constructor(readonly client: SpadesClient) {
    this.lobby = client.player(() => this.credential());
    this.schedule();
  }

  /** The identity, if the player has one (it may be about to be renewed). */
  get current(): Identity | undefined {
    return this.identity;
  }

  subscribe(f: () => void): () => void {
    this.listeners.add(f);
    return () => this.listeners.delete(f);
  }

  /** Becomes a (new) guest under this name. */
  async signIn(name: string): Promise<Identity> {
    const clean = name.trim().slice(0, MAX_NAME);
    try {
      local()?.setItem(NAME_KEY, clean);
    } catch {
      // disabled: asked again next visit
    }
    const id = await fetchGuest(clean);
    this.set(id);
    return id;
  }

  /** A fresh credential for the same player (a new guest only when the old one cannot be renewed: another server's, or long expired). */
  renew(): Promise<Identity> {
    this.renewing ??= (async () => {
      try {
        const name = this.identity?.name ?? savedName() ?? "";
        const old = this.identity?.credential;
        let id: Identity;
        try {
          id = await fetchGuest(name, old);
        } catch (e) {
          if (old === undefined || !(e instanceof HttpProblem) || e.problem.code !== "INVALID_ARGUMENT") throw e;
          id = await fetchGuest(name); // not renewable here: a new guest
        }
        this.set(id);
        return id;
      } finally {
        this.renewing = undefined;
      }
    })();
    return this.renewing;
  }

  /** The credential to send now, renewed first when it is about to run out. */
  async credential(): Promise<string> {
    const id = this.identity;
    if (id === undefined) {
      throw new SpadesError(Code.Unauthenticated, t("lobby:identity.noName"), { reason: "CREDENTIAL_REQUIRED" });
    }
    if (id.expiresAtMs - Date.now() < RENEW_BEFORE_MS) {
      return (await this.renew()).credential;
    }
    return id.credential;
  }

  /** Runs a lobby call; when the server refuses the credential (expired...), renews it and runs the call once more. */
  async call<T>(f: (lobby: PlayerClient) => Promise<T>): Promise<T> {
    try {
      return await f(this.lobby);
    } catch (e) {
      if (!isCredentialRefusal(e) || this.identity === undefined) throw e;
      await this.renew();
      return f(this.lobby);
    }
  }

  private set(id: Identity): void {
    this.identity = id;
    writeJson(local(), IDENTITY_KEY, id);
    this.schedule();
    for (const f of this.listeners) f();
  }

  private schedule(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    const id = this.identity;
    if (id === undefined) return;
    const due = Math.max(0, id.expiresAtMs - RENEW_BEFORE_MS - Date.now());
    // Browsers cap timers at 2^31-1 ms; a guest's lives 30 minutes.
    this.timer = setTimeout(() => void this.renew().catch(() => undefined), Math.min(due, 2 ** 31 - 1));
  }
}

let sharedClient: SpadesClient | undefined;
let sharedSession: PlayerSession | undefined;

/** The page's one SpadesClient (App passes its own; otherwise one is made). */
export function setSharedClient(client: SpadesClient): void {
  if (sharedClient === undefined) sharedClient = client;
}

function theClient(): SpadesClient {
  sharedClient ??= makeClient();
  return sharedClient;
}

/** The page's player session (one per page). */
export function playerSession(): PlayerSession {
  sharedSession ??= new PlayerSession(theClient());
  return sharedSession;
}

// -- following a table or a ticket: a stream, or long polls --------------------

/** Whether this page reads changes with long polls (the player's connection choice, or this tab's fallback). */
export function usePolls(): boolean {
  return loadTransport().transport === "poll";
}

/**
 * Follows a watch (a stream, or long polls when chosen) and calls `onItem`
 * for each version. A stream that fails other than by a refusal is replaced
 * by the long-poll variant; a refused credential is renewed and the watch
 * opened again. Returns a function that stops it.
 */
export function follow<T>(
  open: (mode: "stream" | "poll") => Watch<T>,
  onItem: (item: T) => void,
  onError: (e: unknown) => void,
): () => void {
  let stopped = false;
  let current: Watch<T> | undefined;
  const run = async (mode: "stream" | "poll", renewed: boolean): Promise<void> => {
    current = open(mode);
    try {
      for await (const item of current) {
        if (stopped) return;
        onItem(item);
      }
    } catch (e) {
      if (stopped) return;
      if (isCredentialRefusal(e) && !renewed) {
        await playerSession().renew();
        return run(mode, true);
      }
      const refusal = e instanceof SpadesError && e.reason !== "" && e.code !== Code.Unavailable;
      if (mode === "stream" && !refusal) {
        return run("poll", renewed);
      }
      onError(e);
    }
  };
  void run(usePolls() ? "poll" : "stream", false);
  return () => {
    stopped = true;
    current?.close();
  };
}

// -- the waiting room's seat, and the ticket, kept in this tab ---------------------

/** A seat at a table not dealt yet: its token plays it once the table has started. */
export interface WaitingSeat {
  readonly tableId: string;
  readonly seat: number;
  readonly token: string;
  /** A rematch table: the finished match and this tab's seat token in it (Rematch is asked with that token). */
  readonly rematchOf?: { readonly matchId: string; readonly token: string };
}

export function saveWaiting(w: WaitingSeat | undefined): void {
  writeJson(session(), WAITING_KEY, w);
}

export function loadWaiting(tableId: string): WaitingSeat | undefined {
  const w = readJson<WaitingSeat>(session(), WAITING_KEY);
  return w !== undefined && w.tableId === tableId && typeof w.token === "string" ? w : undefined;
}

/** The quick play ticket this tab follows, if any. */
export function savedTicket(): string | undefined {
  const v = session()?.getItem(TICKET_KEY);
  return v == null || v === "" ? undefined : v;
}

export function saveTicket(id: string | undefined): void {
  try {
    if (id === undefined) session()?.removeItem(TICKET_KEY);
    else session()?.setItem(TICKET_KEY, id);
  } catch {
    // disabled: a reload forgets the ticket (the server keeps it)
  }
}

/** Takes the seat of a started table: the play page will open it. Returns the route to go to. */
export function seatAt(matchId: string, seat: number, token: string): string {
  saveSeat({ matchId, seat, token, lastSeq: "0", log: [], lobby: true });
  saveWaiting(undefined);
  return `#/play/${encodeURIComponent(matchId)}`;
}

// -- rematch ------------------------------------------------------------------

export type RematchOutcome =
  | { readonly kind: "started"; readonly matchId: string; readonly seat: number; readonly token: string; readonly route: string }
  | { readonly kind: "waiting"; readonly tableId: string; readonly seat: number; readonly token: string; readonly route: string };

/**
 * Asks for (or accepts) the rematch of a finished match, with this tab's
 * seat token in it (Rematch takes the seat token, not the player
 * credential). Started at once (every human accepted): the new seat is saved
 * and the route is the new match's; otherwise the route is the waiting room,
 * which follows the rematch until the others accept.
 */
export async function rematch(matchId: string): Promise<RematchOutcome> {
  const saved = loadSeat(matchId);
  if (saved === undefined) {
    throw new HttpProblem({ title: t("lobby:rematch.noSeatTitle"), text: t("lobby:rematch.noSeat"), reason: "", code: "", rule: undefined, transient: false });
  }
  const res = await theClient().seat(saved.token).rematch();
  const table = res.table;
  if (table === undefined) {
    throw new SpadesError(Code.Internal, "Rematch answered without its table");
  }
  if (table.state === TableState.STARTED) {
    const id = table.matchId || table.tableId;
    return { kind: "started", matchId: id, seat: res.seat, token: res.seatToken, route: seatAt(id, res.seat, res.seatToken) };
  }
  saveWaiting({ tableId: table.tableId, seat: res.seat, token: res.seatToken, rematchOf: { matchId, token: saved.token } });
  return { kind: "waiting", tableId: table.tableId, seat: res.seat, token: res.seatToken, route: `#/table/${encodeURIComponent(table.tableId)}` };
}

/** One Rematch long poll for the waiting room of a rematch table. */
export async function pollRematch(w: WaitingSeat, afterVersion: bigint, signal: AbortSignal): Promise<Table> {
  const old = w.rematchOf!;
  const res = await theClient().seat(old.token).rematch({ afterVersion, waitMs: 20_000 }, { signal });
  if (res.table === undefined) throw new SpadesError(Code.Internal, "Rematch answered without its table");
  return res.table;
}
