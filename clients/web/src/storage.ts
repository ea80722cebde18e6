// What survives a reload of the tab: the seat's token, the last sequence
// number the page saw, and the log. sessionStorage: per tab, gone with it,
// never sent anywhere (the token stays out of the URL and the history).
import type { LogEntry } from "./log.js";

export interface SavedSeat {
  readonly matchId: string;
  readonly seat: number;
  readonly token: string;
  /** The last sequence number the page has seen on its stream ("0" before any). */
  lastSeq: string;
  /** True for a seat at a lobby table (quick play, an invitation, a rematch), which can ask for a rematch. */
  readonly lobby?: boolean;
  log: LogEntry[];
}

const KEY = "spades.seat";
const LOG_LIMIT = 300;

function store(): Storage | undefined {
  try {
    return window.sessionStorage;
  } catch {
    return undefined; // storage disabled: the page works, a reload starts over
  }
}

export function loadSeat(matchId: string): SavedSeat | undefined {
  const raw = store()?.getItem(KEY);
  if (raw == null) {
    return undefined;
  }
  try {
    const s = JSON.parse(raw) as SavedSeat;
    if (s.matchId !== matchId || typeof s.token !== "string" || !/^\d+$/.test(s.lastSeq) || !Array.isArray(s.log)) {
      return undefined;
    }
    // Lines saved by an older page (plain text) are dropped: the log is a nicety.
    s.log = s.log.filter((e) => typeof e === "object" && e !== null && typeof e.msg === "string" && typeof e.values === "object");
    return s;
  } catch {
    return undefined;
  }
}

export function saveSeat(s: SavedSeat): void {
  if (s.log.length > LOG_LIMIT) {
    s.log = s.log.slice(-LOG_LIMIT);
  }
  try {
    store()?.setItem(KEY, JSON.stringify(s));
  } catch {
    // full or disabled: a reload will start the log afresh
  }
}

export function forgetSeat(): void {
  store()?.removeItem(KEY);
}

/** The match id of the saved seat, if any (for "back to your table"). */
export function savedMatchId(): string | undefined {
  const raw = store()?.getItem(KEY);
  if (raw == null) {
    return undefined;
  }
  try {
    return (JSON.parse(raw) as SavedSeat).matchId;
  } catch {
    return undefined;
  }
}

/**
 * How the page reads a table's events: "stream" (StreamEvents or Spectate,
 * one call that carries each event as it happens: the default) or "poll"
 * (PollEvents long polls, for an HTTP stack or a proxy that buffers a
 * streamed response until it ends).
 */
export type Transport = "stream" | "poll";

/** The player's choice (the lobby, or ?transport= in the URL), kept in localStorage: it is about the network, not one tab. */
const TRANSPORT_KEY = "spades.transport";
/** Set when this tab fell back to long-poll by itself (controllers.ts), in sessionStorage: this tab only. */
const FALLBACK_KEY = "spades.transport.fallback";

function localStore(): Storage | undefined {
  try {
    return window.localStorage;
  } catch {
    return undefined;
  }
}

/** `?transport=poll` (or `long-poll`), `?transport=stream`; undefined when the URL does not say. */
export function transportFromUrl(search: string): Transport | undefined {
  const v = new URLSearchParams(search).get("transport")?.trim().toLowerCase();
  if (v === "poll" || v === "long-poll" || v === "longpoll") {
    return "poll";
  }
  if (v === "stream") {
    return "stream";
  }
  return undefined;
}

export interface TransportSetting {
  readonly transport: Transport;
  /** True when "poll" is this tab's automatic fallback rather than the player's choice. */
  readonly automatic: boolean;
}

/** The mode to use now: the player's choice of stream, or poll, chosen or fallen back to. */
export function loadTransport(): TransportSetting {
  let chosen: Transport = "stream";
  try {
    chosen = localStore()?.getItem(TRANSPORT_KEY) === "poll" ? "poll" : "stream";
  } catch {
    // unreadable: the default
  }
  if (chosen === "poll") {
    return { transport: "poll", automatic: false };
  }
  let fellBack = false;
  try {
    fellBack = store()?.getItem(FALLBACK_KEY) === "poll";
  } catch {
    // unreadable: no fallback remembered
  }
  return fellBack ? { transport: "poll", automatic: true } : { transport: "stream", automatic: false };
}

/** The player's choice; it replaces this tab's automatic fallback, if any. */
export function saveTransport(t: Transport): void {
  try {
    localStore()?.setItem(TRANSPORT_KEY, t);
    store()?.removeItem(FALLBACK_KEY);
  } catch {
    // full or disabled: the choice lasts as long as the page
  }
}

/** This tab switched to long-poll by itself: a reload does not wait for the stream to stall again. */
export function saveFallback(): void {
  try {
    store()?.setItem(FALLBACK_KEY, "poll");
  } catch {
    // disabled: a reload starts with the stream again, and falls back again
  }
}
