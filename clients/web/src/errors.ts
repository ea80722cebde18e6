// Every failure as something a person can read: a title, a sentence, and the
// server's reason and rule for whoever reports it.
import { Code, SpadesError } from "@spades/client";

export interface Problem {
  /** A short title: "Not allowed", "Connection lost". */
  readonly title: string;
  /** What happened, in a sentence. */
  readonly text: string;
  /** The server's ErrorInfo reason (`MUST_FOLLOW_SUIT`), when there is one. */
  readonly reason: string;
  /** The gRPC code's name (`FAILED_PRECONDITION`), when there is one. */
  readonly code: string;
  /** The broken rule's sentence (ErrorInfo metadata "rule"), for the rules' refusals. */
  readonly rule: string | undefined;
  /** True when trying again may work (the connection's fault, not the request's). */
  readonly transient: boolean;
}

/** Sentences for the reasons a player meets most; the server's message or rule covers the rest. */
const REASON_TEXT: Record<string, string> = {
  NOT_YOUR_TURN: "It is not your turn.",
  WRONG_PHASE: "That is not possible at this point of the hand.",
  MATCH_OVER: "The match is over.",
  STALE_SEQUENCE: "The table moved on before your action arrived; look again and decide.",
  RATE_LIMITED: "Too many actions at once; wait a moment.",
  UNAUTHENTICATED: "This seat's token is not known to the server (the match may be gone).",
  WRONG_MATCH: "This token belongs to another match.",
  MATCH_NOT_FOUND: "There is no match with that id on this server.",
  INVALID_RULESET: "These table rules cannot be played together.",
  TOO_MANY_MATCHES: "The server holds as many matches as it can; try again later.",
  TOO_MANY_STREAMS: "Too many people are watching this match.",
  SHUTTING_DOWN: "The server is restarting.",
};

const TITLE: Partial<Record<Code, string>> = {
  [Code.FailedPrecondition]: "Not allowed",
  [Code.InvalidArgument]: "Not accepted",
  [Code.Unauthenticated]: "Not signed in to this seat",
  [Code.PermissionDenied]: "Not permitted",
  [Code.NotFound]: "Not found",
  [Code.ResourceExhausted]: "Slow down",
  [Code.Unavailable]: "Connection lost",
  [Code.DeadlineExceeded]: "The server did not answer in time",
  [Code.Internal]: "Server error",
  [Code.Canceled]: "Cancelled",
};

export function sentence(s: string): string {
  const t = s.trim();
  if (t === "") {
    return t;
  }
  // An option's name (auction_trump=true ...) keeps its spelling.
  const first = /^\w*[_=]/.test(t) ? t : t[0]!.toUpperCase() + t.slice(1);
  return /[.!?]$/.test(first) ? first : `${first}.`;
}

/** Any thrown value as a Problem. */
export function problemOf(e: unknown): Problem {
  if (e instanceof SpadesError) {
    const rule = e.rule;
    const known = REASON_TEXT[e.reason];
    // A rule's refusal says what was wrong in its message (and the rule beside
    // it); the other reasons read better in the page's own words.
    const text = (rule === undefined ? known : undefined) ?? (sentence(e.message) || known || "The server refused.");
    const transient = e.code === Code.Unavailable || e.code === Code.DeadlineExceeded || (e.reason === "" && e.code === Code.Unknown);
    return {
      title: TITLE[e.code] ?? "Refused",
      text: e.reason === "" && e.code === Code.Unavailable ? "The server cannot be reached." : text,
      reason: e.reason,
      code: e.codeName,
      rule,
      transient,
    };
  }
  if (e instanceof HttpProblem) {
    return e.problem;
  }
  const message = e instanceof Error ? e.message : String(e);
  return { title: "Something went wrong", text: sentence(message) || "An unexpected error.", reason: "", code: "", rule: undefined, transient: false };
}

/** A refusal of the page's own endpoint (/api/...), carried as a Problem. */
export class HttpProblem extends Error {
  constructor(readonly problem: Problem) {
    super(problem.text);
  }
}

/** The small print under a problem: `MUST_FOLLOW_SUIT · FAILED_PRECONDITION`. */
export function problemDetail(p: Problem): string {
  return [...new Set([p.reason, p.code])].filter((s) => s !== "").join(" · ");
}
