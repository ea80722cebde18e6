// The conformance runner: executes one scenario of clients/conformance/ (see
// its README) with this client against a real server, and returns the
// transcript, one canonical JSON value per line.
import { create, fromJson, type DescEnum, type JsonValue } from "@bufbuild/protobuf";
import type { OpenTableResponse, PlayerClient, SpadesClient, SeatClient, SeatSession, Ticket } from "../src/index.js";
import {
  ActionSchema,
  CreateMatchRequestSchema,
  Phase,
  RulesetSchema,
  SpadesError,
  TableKindSchema,
  TableSeatStateSchema,
  TableStateSchema,
  TableVisibility,
  TableVisibilitySchema,
  TicketState,
  TicketStateSchema,
  codeName,
  type Action,
  type MatchEvent,
  type SeatView,
} from "../src/index.js";
import { actionJson, canonicalJson, eventJson } from "../src/json.js";
import type { Server } from "./harness.js";

export interface Scenario {
  name: string;
  /** A match made by the operator (CreateMatch), the client at `seat`... */
  create?: JsonValue;
  seat?: number;
  /** ...or players in the lobby (lobby_party): the client is `me`, serve.py drives `friend`. */
  lobby?: Lobby;
  steps: Step[];
}

export interface Lobby {
  me: string;
  friend: string;
  /** proto3 JSON of a Ruleset. */
  ruleset: JsonValue;
  /** What serve.py gives the server (for reference.py); the runner does not use them. */
  seed?: string;
  botLevel?: string;
}

export type Step =
  | { do: "claim_wrong_token" | "claim" | "open" | "cut" | "send_then_cut" | "retry" | "illegal_card" | "close" }
  | { do: "play"; until: Record<string, number> }
  | { do: "friend_quickplay" | "quickplay" | "await_placement" | "open_invite_table" | "friend_join_by_code" | "await_start" };

/** The longest any one wait of a step may take (a turn, an event, a result). */
const WAIT_MS = 30_000;

export class Runner {
  private readonly events: { seq: bigint; line: string }[] = [];
  /** The sequence number of the event that ended the last `play` step. */
  private cutoff: bigint | undefined;
  private readonly outcomes: string[] = [];
  /** The sequence numbers received, by event kind. */
  private readonly kindSeqs = new Map<string, bigint[]>();
  /** Play actions refused STALE_SEQUENCE (GetView was ahead of the stream); no line. */
  staleRefusals = 0;
  private received = 0;
  private lastSeq = 0n;
  private wake: (() => void) | undefined;
  private session: SeatSession | undefined;
  private reader: Promise<void> | undefined;
  private readerError: unknown;
  private seat!: SeatClient;
  private matchId = "";
  /** The lobby scenario's player (`me`), its ticket and the table it opened. */
  private player: PlayerClient | undefined;
  private ticket: Ticket | undefined;
  private opened: OpenTableResponse | undefined;

  constructor(
    private readonly client: SpadesClient,
    private readonly server: Server,
    private readonly scenario: Scenario,
  ) {}

  async run(): Promise<string> {
    if (this.scenario.lobby !== undefined) {
      // The seat comes later, from the placement (await_placement).
      this.player = this.client.player(await this.server.credential(this.scenario.lobby.me));
    } else {
      const created = await this.client.createMatch(fromJson(CreateMatchRequestSchema, this.scenario.create ?? {}));
      const token = created.seatTokens.find((t) => t.seat === this.scenario.seat);
      if (token === undefined || created.match === undefined) {
        throw new Error(`CreateMatch returned no token for seat ${this.scenario.seat}`);
      }
      this.matchId = created.match.matchId;
      this.seat = this.client.seat(token.token);
    }
    try {
      for (const step of this.scenario.steps) {
        await this.step(step);
      }
    } finally {
      await this.session?.close();
      await this.reader;
    }
    if (this.readerError !== undefined) {
      throw this.readerError;
    }
    // Each cut must have been noticed and survived by the session itself.
    const cuts = this.scenario.steps.filter((s) => s.do === "cut" || s.do === "send_then_cut").length;
    if ((this.session?.reconnects ?? 0) < cuts) {
      throw new Error(`${cuts} cuts but the session reconnected ${this.session?.reconnects ?? 0} times`);
    }
    // The bots play on after the last `play` step: what comes later depends on
    // when the session closes, so the transcript's events stop there.
    const events = this.events.filter((e) => this.cutoff === undefined || e.seq <= this.cutoff).map((e) => e.line);
    return [...events, ...this.outcomes].map((line) => line + "\n").join("");
  }

  private async step(step: Step): Promise<void> {
    switch (step.do) {
      case "claim_wrong_token": {
        const wrong = this.client.seat(`${this.matchId}.wrong-secret`);
        const err = await refusal(wrong.claim());
        this.outcome({ step: step.do, code: codeName(err.code), reason: err.reason });
        return;
      }
      case "claim": {
        const res = await this.seat.claim();
        this.outcome({ step: step.do, seat: res.seat });
        return;
      }
      case "open": {
        const session = this.seat.open({ afterSeq: 0n, retry: { initialDelayMs: 50, maxDelayMs: 1000, maxAttempts: 10 } });
        this.session = session;
        this.reader = this.read(session);
        return;
      }
      case "play": {
        const entries = Object.entries(step.until);
        if (entries.length !== 1) {
          throw new Error(`play: "until" names one event kind, not ${entries.length}`);
        }
        const [kind, count] = entries[0] as [string, number];
        while (this.count(kind) < count) {
          const view = await this.turn();
          // GetView may be ahead of the stream: the action carries the last
          // sequence number received, and `until` is checked against those
          // same events just before it goes (nothing in between can change them).
          if (this.count(kind) >= count) {
            break;
          }
          const expectedSeq = this.lastSeq;
          try {
            await this.act("play", firstLegal(view), { expectedSeq });
          } catch (e) {
            if (!(e instanceof SpadesError) || e.reason !== "STALE_SEQUENCE") {
              throw e;
            }
            // Events up to current_seq are on their way: wait for them, then look again.
            this.staleRefusals++;
            await this.receivedThrough(BigInt(e.metadata["current_seq"] ?? "0"));
          }
        }
        this.cutoff = this.kindSeqs.get(kind)?.[count - 1];
        return;
      }
      case "cut":
        await this.server.cut();
        return;
      case "send_then_cut": {
        const action = firstLegal(await this.turn());
        const result = this.requireSession().act(action);
        await this.server.cut();
        this.acted(step.do, action, await within(result, "send_then_cut's result"));
        return;
      }
      case "retry": {
        const action = firstLegal(await this.turn());
        const actionId = crypto.randomUUID();
        await this.act("retry", action, { actionId });
        await this.act("retry_again", action, { actionId });
        return;
      }
      case "illegal_card":
        for (;;) {
          const view = await this.turn();
          const card = view.phase === Phase.PLAYING ? illegalCard(view) : undefined;
          if (card === undefined) {
            await this.act("play", firstLegal(view));
            continue;
          }
          const action = create(ActionSchema, { kind: { case: "playCard", value: { card } } });
          const err = await refusal(this.requireSession().act(action));
          this.outcome({
            step: step.do,
            action: actionJson(action),
            code: codeName(err.code),
            reason: err.reason,
            rule: err.rule ?? "",
          });
          return;
        }
      case "close":
        // The server never ends a Play call (not even after a half-close):
        // close() half-closes, waits for results still due, and cancels it.
        await this.requireSession().close();
        await this.reader;
        return;
      default:
        return this.lobbyStep(step.do);
    }
  }

  /** The steps of the lobby scenario (lobby_party). */
  private async lobbyStep(name: string): Promise<void> {
    const lobby = this.scenario.lobby;
    const player = this.player;
    if (lobby === undefined || player === undefined) {
      throw new Error(`step ${name} needs the scenario's "lobby"`);
    }
    const ruleset = fromJson(RulesetSchema, lobby.ruleset);
    switch (name) {
      case "friend_quickplay": {
        const answer = await this.server.friend({ do: "quickplay", playerId: lobby.friend, partner: lobby.me, ruleset: lobby.ruleset });
        this.outcome({ step: name, state: answer["state"] as JsonValue });
        return;
      }
      case "quickplay": {
        const ticket = await player.quickPlay({ ruleset, partnerPlayerId: lobby.friend });
        this.ticket = ticket;
        this.outcome({ step: name, state: enumName(TicketStateSchema, ticket.state), playerIds: [...ticket.playerIds] });
        return;
      }
      case "await_placement": {
        if (this.ticket === undefined) {
          throw new Error("await_placement before quickplay");
        }
        const placement = await within(player.awaitPlacement(this.ticket, { waitMs: 5_000 }), "the placement");
        const table = placement.table;
        const partner = table?.seats.find((s) => s.playerId === lobby.friend);
        if (table === undefined || partner === undefined) {
          throw new Error(`the placement's table does not seat ${lobby.friend}`);
        }
        // From here on the seat is the placement's, played like any seat token.
        this.matchId = placement.matchId;
        this.seat = this.client.seat(placement.seatToken);
        this.outcome({
          step: name,
          state: enumName(TicketStateSchema, TicketState.PLACED),
          seat: placement.seat,
          partnerSeat: partner.seat,
          kind: enumName(TableKindSchema, table.kind),
          seats: table.seats.map((s) => enumName(TableSeatStateSchema, s.state)),
        });
        return;
      }
      case "open_invite_table": {
        const opened = await player.openTable({ ruleset, botSeats: [1, 3], visibility: TableVisibility.INVITE_ONLY });
        const table = opened.table!;
        this.opened = opened;
        this.outcome({
          step: name,
          seat: opened.seat,
          state: enumName(TableStateSchema, table.state),
          visibility: enumName(TableVisibilitySchema, table.visibility),
          inviteCodeLength: [...table.inviteCode].length,
        });
        return;
      }
      case "friend_join_by_code": {
        const code = this.opened?.table?.inviteCode;
        if (code === undefined) {
          throw new Error("friend_join_by_code before open_invite_table");
        }
        const answer = await this.server.friend({ do: "join", playerId: lobby.friend, code, seat: 2 });
        this.outcome({ step: name, seat: answer["seat"] as JsonValue, state: answer["state"] as JsonValue });
        return;
      }
      case "await_start": {
        const opened = this.opened;
        if (opened?.table === undefined) {
          throw new Error("await_start before open_invite_table");
        }
        const table = await within(player.awaitStart(opened.table.tableId, { waitMs: 5_000 }), "the table's start");
        const view = await this.client.seat(opened.seatToken).getView();
        this.outcome({
          step: name,
          state: enumName(TableStateSchema, table.state),
          seats: table.seats.map((s) => enumName(TableSeatStateSchema, s.state)),
          viewSeat: view.seat,
        });
        return;
      }
      default:
        throw new Error(`unknown step ${name}`);
    }
  }

  private async read(session: SeatSession): Promise<void> {
    try {
      for await (const event of session) {
        this.record(event);
      }
    } catch (e) {
      this.readerError = e;
    } finally {
      this.notify();
    }
  }

  private record(event: MatchEvent): void {
    if (event.seq <= this.lastSeq) {
      this.readerError ??= new Error(`event ${event.seq} after ${this.lastSeq}: sequence numbers must increase`);
    }
    this.lastSeq = event.seq;
    this.events.push({ seq: event.seq, line: canonicalJson({ event: eventJson(event) }) });
    const kind = event.kind.case ?? "";
    const seqs = this.kindSeqs.get(kind) ?? [];
    seqs.push(event.seq);
    this.kindSeqs.set(kind, seqs);
    this.received++;
    this.notify();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  /** Waits until more than `seen` events have been received; false after `ms`. */
  private async nextEvent(seen: number, ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (this.received <= seen) {
      if (this.readerError !== undefined) {
        throw this.readerError;
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        return false;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return true;
  }

  /**
   * Waits for the seat's turn: GetView shows legal actions. Until then each
   * event received is a reason to ask again.
   */
  private async turn(): Promise<SeatView> {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const seen = this.received;
      const view = await this.seat.getView();
      if (view.legalActions.length > 0) {
        return view;
      }
      if (!(await this.nextEvent(seen, Math.max(0, deadline - Date.now())))) {
        throw new Error(`not this seat's turn within ${WAIT_MS} ms (phase ${Phase[view.phase]})`);
      }
    }
  }

  private count(kind: string): number {
    return this.kindSeqs.get(kind)?.length ?? 0;
  }

  /** Waits until the events through `seq` have been received. */
  private async receivedThrough(seq: bigint): Promise<void> {
    const deadline = Date.now() + WAIT_MS;
    while (this.lastSeq < seq) {
      if (!(await this.nextEvent(this.received, deadline - Date.now()))) {
        throw new Error(`event ${seq} not received within ${WAIT_MS} ms (last ${this.lastSeq})`);
      }
    }
  }

  private async act(step: string, action: Action, options: { actionId?: string; expectedSeq?: bigint } = {}): Promise<void> {
    const result = await within(this.requireSession().act(action, options), `${step}'s result`);
    this.acted(step, action, result);
  }

  private acted(step: string, action: Action, result: { firstSeq: bigint; lastSeq: bigint }): void {
    this.outcome({
      step,
      action: actionJson(action),
      firstSeq: result.firstSeq.toString(),
      lastSeq: result.lastSeq.toString(),
    });
  }

  private outcome(value: Record<string, JsonValue>): void {
    this.outcomes.push(canonicalJson({ outcome: value }));
  }

  private requireSession(): SeatSession {
    if (this.session === undefined) {
      throw new Error("the scenario acts before `open`");
    }
    return this.session;
  }
}

/** An enum value's name as proto3 JSON writes it (`TICKET_STATE_PLACED`). */
function enumName(schema: DescEnum, value: number): string {
  const found = schema.value[value];
  if (found === undefined) {
    throw new Error(`${schema.typeName} has no value ${value}`);
  }
  return found.name;
}

function firstLegal(view: SeatView): Action {
  const action = view.legalActions[0];
  if (action === undefined) {
    throw new Error("no legal action");
  }
  return action;
}

/** The first card of the hand (in the view's order) that no legal play_card action plays. */
function illegalCard(view: SeatView): SeatView["hand"][number] | undefined {
  const legal = new Set(
    view.legalActions.flatMap((a) => (a.kind.case === "playCard" && a.kind.value.card ? [`${a.kind.value.card.suit}/${a.kind.value.card.rank}`] : [])),
  );
  return view.hand.find((c) => !legal.has(`${c.suit}/${c.rank}`));
}

/** The SpadesError a call or an action must be refused with. */
async function refusal(promise: Promise<unknown>): Promise<SpadesError> {
  try {
    await within(promise, "a refusal");
  } catch (e) {
    if (e instanceof SpadesError) {
      return e;
    }
    throw e;
  }
  throw new Error("expected a refusal, the server accepted");
}

function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${WAIT_MS} ms waiting for ${what}`)), WAIT_MS);
    }),
  ]).finally(() => clearTimeout(timer));
}
