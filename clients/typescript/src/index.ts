// The Spades client's core API: no transport and nothing Node-only here, so
// that a browser build can use it with its own transport. On Node, import
// `connect` from "@spades/client/node".
export { SpadesClient, SeatClient, type ActionInit, type CallOpts, type RematchOpts, type SpadesClientOptions } from "./client.js";
export {
  PlayerClient,
  type JoinTarget,
  type LeaderboardOptions,
  type LeaderboardPagesOptions,
  type LobbyFilterInit,
  type LobbyWatchOptions,
  type PlacementOptions,
  type PollCallOpts,
  type RulesetInit,
  type TableRef,
} from "./lobby.js";
export { Watch, type Credential, type LongPollOpts, type WatchOptions, type WatchReconnectInfo } from "./watch.js";
export { SeatSession, type ActOptions, type ReconnectInfo, type SessionOptions } from "./session.js";
export {
  EventStream,
  pollEvents,
  pollSpectate,
  spectate,
  streamEvents,
  type EventStreamOptions,
  type EventStreamTraits,
  type OpenEvents,
  type PollOptions,
  type SpectatorOptions,
} from "./events.js";
export { SpadesError, Code, codeName, type FieldViolation } from "./errors.js";
export { backoffDelay, resolveRetry, type RetryOptions } from "./backoff.js";
export { traceContext, type TraceContextApi } from "./tracing.js";
// Every message, enum and schema of spades.v1 (MatchEvent, SeatView, Suit, ...;
// and the lobby's: Table, Ticket, Placement, TableState, LobbyService, ...).
export * from "./gen/spades/v1/spades_pb.js";
export * from "./gen/spades/v1/lobby_pb.js";
