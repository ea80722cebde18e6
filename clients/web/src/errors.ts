// Every failure as something a person can read, in the page's language: a
// title, one plain sentence for the reason (the reasons namespace has one for
// every reason the server can send), and, for whoever reports it, the
// server's own words, reason, code and broken rule in a details fold.
import { Code, SpadesError } from "@spades/client";
import { has, t } from "./i18n.js";

export interface Problem {
  /** A short title: "Not allowed", "Connection lost". */
  readonly title: string;
  /** What happened, in a sentence, in the page's language. */
  readonly text: string;
  /** The server's ErrorInfo reason (`MUST_FOLLOW_SUIT`), when there is one. */
  readonly reason: string;
  /** The gRPC code's name (`FAILED_PRECONDITION`), when there is one. */
  readonly code: string;
  /** The broken rule's sentence as the server wrote it (ErrorInfo metadata "rule"), for the details. */
  readonly rule: string | undefined;
  /** The server's message as sent (English), for the details; empty when it adds nothing. */
  readonly serverText?: string;
  /** True when trying again may work (the connection's fault, not the request's). */
  readonly transient: boolean;
}

const TITLE_KEY: Partial<Record<Code, string>> = {
  [Code.FailedPrecondition]: "notAllowed",
  [Code.InvalidArgument]: "notAccepted",
  [Code.Unauthenticated]: "notSignedIn",
  [Code.PermissionDenied]: "notPermitted",
  [Code.NotFound]: "notFound",
  [Code.AlreadyExists]: "alreadyExists",
  [Code.ResourceExhausted]: "slowDown",
  [Code.Unavailable]: "connectionLost",
  [Code.DeadlineExceeded]: "tooSlow",
  [Code.Internal]: "serverError",
  [Code.Canceled]: "cancelled",
  [Code.Aborted]: "tryAgain",
};

export function sentence(s: string): string {
  const text = s.trim();
  if (text === "") {
    return text;
  }
  // An option's name (auction_trump=true ...) keeps its spelling.
  const first = /^\w*[_=]/.test(text) ? text : text[0]!.toUpperCase() + text.slice(1);
  return /[.!?]$/.test(first) ? first : `${first}.`;
}

/** The plain sentence for a reason, or undefined when the page has none. */
export function reasonText(reason: string): string | undefined {
  return reason !== "" && has(`reasons:${reason}`) ? t(`reasons:${reason}`) : undefined;
}

/** Any thrown value as a Problem. */
export function problemOf(e: unknown): Problem {
  if (e instanceof SpadesError) {
    const unreachable = e.reason === "" && e.code === Code.Unavailable;
    const known = reasonText(e.reason);
    const message = sentence(e.message);
    const text = unreachable
      ? t("reasons:_connection")
      : (known ?? (message !== "" ? t("reasons:_unknown", { message }) : t("problem.refused")));
    const transient = e.code === Code.Unavailable || e.code === Code.DeadlineExceeded || (e.reason === "" && e.code === Code.Unknown);
    return {
      title: t(`problem.title.${TITLE_KEY[e.code] ?? "refused"}`),
      text,
      reason: e.reason,
      code: e.codeName,
      rule: e.rule,
      serverText: message,
      transient,
    };
  }
  if (e instanceof HttpProblem) {
    return e.problem;
  }
  const message = e instanceof Error ? e.message : String(e);
  return {
    title: t("problem.title.unexpected"),
    text: t("problem.unexpected"),
    reason: "",
    code: "",
    rule: undefined,
    serverText: sentence(message),
    transient: false,
  };
}

/** A refusal of the page's own endpoint (/api/...), carried as a Problem. */
export class HttpProblem extends Error {
  constructor(readonly problem: Problem) {
    super(problem.text);
  }
}

/** The small print of a problem: `MUST_FOLLOW_SUIT · FAILED_PRECONDITION`. */
export function problemDetail(p: Problem): string {
  return [...new Set([p.reason, p.code])].filter((s) => s !== "").join(" · ");
}
