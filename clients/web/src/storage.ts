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
