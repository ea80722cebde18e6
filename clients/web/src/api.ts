// How the page reaches the service: the TypeScript client over connect-web's
// gRPC-Web transport (binary protobuf, Envoy's grpc_web filter), on the
// page's own origin; and the page's one call that needs the operator
// credential, POST /api/new-match, which the web server makes for it.
//
// Why gRPC-Web and not the Connect protocol: through Envoy's
// connect_grpc_bridge a Connect error's details keep their Any type URL
// ("type.googleapis.com/google.rpc.ErrorInfo"), which connect-es's
// findDetails does not match (SpadesError.from now reads both), and the
// message arrives percent-encoded. gRPC-Web carries the google.rpc.Status
// trailer as the server sent it, and has neither quirk.
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { MatchSummarySchema, SpadesClient, type MatchSummary } from "@spades/client";
import { HttpProblem, reasonText, sentence } from "./errors.js";
import { t } from "./i18n.js";

/** The service's client, through Envoy on this page's origin. */
export function makeClient(): SpadesClient {
  const transport = createGrpcWebTransport({ baseUrl: window.location.origin, useBinaryFormat: true });
  return new SpadesClient({
    transport,
    timeoutMs: 10_000,
    retry: { initialDelayMs: 250, maxDelayMs: 5_000, maxAttempts: 8, jitter: 0.5 },
  });
}

/** What the lobby asks for; the web server checks it and makes the match with bots in every other seat. */
export interface NewMatchRequest {
  name: string;
  preset: string;
  players: number;
  /** A BotLevel per bot seat, clockwise from the seat left of the player. */
  botLevels: number[];
  /** The bots' names, in the same order (the page's language); the server's English compass points when absent. */
  botNames?: string[];
  targetScore?: number;
  blindNil?: boolean;
  auctionTrump?: boolean;
  suicide?: boolean;
  deucesHigh?: boolean;
  jokers?: boolean;
  seed?: string;
}

export interface NewMatch {
  readonly matchId: string;
  readonly seat: number;
  readonly token: string;
}

interface ApiError {
  error?: { title?: string; message?: string; reason?: string; code?: string; rule?: string };
}

/** A call of the web server's own API (/api/...): its JSON answer, or an HttpProblem in the page's language. */
export async function apiCall(path: string, init: RequestInit): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(path, { ...init, signal: AbortSignal.timeout(15_000), credentials: "same-origin" });
  } catch (e) {
    throw new HttpProblem({
      title: t("problem.title.connectionLost"),
      text: t("problem.webServerUnreachable"),
      reason: "",
      code: "",
      rule: undefined,
      transient: true,
    });
  }
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    body = undefined;
  }
  if (!res.ok) {
    const err = (body as ApiError | undefined)?.error;
    throw new HttpProblem({
      title: t(res.status === 404 ? "problem.title.notFound" : res.status >= 500 ? "problem.title.serverError" : "problem.title.refused"),
      text: reasonText(err?.reason ?? "") ?? t("reasons:_unknown", { message: sentence(err?.message ?? `${res.status} ${res.statusText}`) }),
      serverText: sentence(err?.message ?? ""),
      reason: err?.reason ?? "",
      code: err?.code ?? String(res.status),
      rule: err?.rule,
      transient: res.status >= 500 || res.status === 429,
    });
  }
  return body;
}

/** Creates a match against bots (POST /api/new-match); returns the player's seat token only. */
export async function newMatch(req: NewMatchRequest): Promise<NewMatch> {
  const body = (await apiCall("/api/new-match", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(req),
  })) as Partial<NewMatch>;
  if (typeof body.matchId !== "string" || typeof body.token !== "string" || typeof body.seat !== "number") {
    throw new HttpProblem({ title: t("problem.title.serverError"), text: t("problem.noSeatToken"), reason: "", code: "", rule: undefined, transient: false });
  }
  return { matchId: body.matchId, seat: body.seat, token: body.token };
}

/** A match's public summary (seats, names, rules, scores), for spectators; undefined when the web server has none. */
export async function matchSummary(matchId: string): Promise<MatchSummary> {
  const body = await apiCall(`/api/match/${encodeURIComponent(matchId)}`, { method: "GET" });
  return fromJson(MatchSummarySchema, body as JsonValue, { ignoreUnknownFields: true });
}
