// The conformance runner: executes one scenario of clients/conformance/ (see
// its README) with this client against a real server, and returns the
// transcript, one canonical JSON value per line.
import { create, fromJson, type JsonValue } from "@bufbuild/protobuf";
import type { SpadesClient, SeatClient, SeatSession } from "../src/index.js";
import { ActionSchema, CreateMatchRequestSchema, Phase, SpadesError, codeName, type Action, type MatchEvent, type SeatView } from "../src/index.js";
import { actionJson, canonicalJson, eventJson } from "../src/json.js";
import type { Server } from "./harness.js";

export interface Scenario {
  name: string;
  create: JsonValue;
  seat: number;
  steps: Step[];
}

export type Step =
  | { do: "claim_wrong_token" | "claim" | "open" | "cut" | "send_then_cut" | "retry" | "illegal_card" | "close" }
  | { do: "play"; until: Record<string, number> };

/** The longest any one wait of a step may take (a turn, an event, a result). */
const WAIT_MS = 30_000;
/**
 * When it is the seat's turn but the view's `as_of_seq` is past the last event
 * received, the events between may all be hidden from this seat (other hands);
 * if none comes in this time, the seat has seen all it may see.
 */
const SETTLE_MS = 300;

export class Runner {
  private readonly events: string[] = [];
  private readonly outcomes: string[] = [];
  private readonly counts = new Map<string, number>();
  private received = 0;
  private lastSeq = 0n;
  private wake: (() => void) | undefined;
  private session: SeatSession | undefined;
  private reader: Promise<void> | undefined;
  private readerError: unknown;
  private seat!: SeatClient;
  private matchId = "";

  constructor(
    private readonly client: SpadesClient,
    private readonly server: Server,
    private readonly scenario: Scenario,
  ) {}

  async run(): Promise<string> {
    const created = await this.client.createMatch(fromJson(CreateMatchRequestSchema, this.scenario.create));
    const token = created.seatTokens.find((t) => t.seat === this.scenario.seat);
    if (token === undefined || created.match === undefined) {
      throw new Error(`CreateMatch returned no token for seat ${this.scenario.seat}`);
    }
    this.matchId = created.match.matchId;
    this.seat = this.client.seat(token.token);
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
    return [...this.events, ...this.outcomes].map((line) => line + "\n").join("");
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
          if (this.count(kind) >= count) {
            break;
          }
          await this.act("play", firstLegal(view));
        }
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
        await this.act("retry", action, actionId);
        await this.act("retry_again", action, actionId);
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
        // The match is left as it waits for this seat (or over), with every
        // event up to there received: then nothing more can come.
        await this.turn(true);
        await this.requireSession().close();
        await this.reader;
        return;
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
    this.events.push(canonicalJson({ event: eventJson(event) }));
    const kind = event.kind.case ?? "";
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1);
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
   * Waits for the seat's turn (GetView shows legal actions) with every event
   * up to the view received, so that counts are those of the match as it
   * waits for this seat, however the events were batched or delayed.
   */
  private async turn(orOver = false): Promise<SeatView> {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const seen = this.received;
      const view = await this.seat.getView();
      if (view.legalActions.length > 0 || (orOver && view.phase === Phase.MATCH_OVER)) {
        if (this.lastSeq >= view.asOfSeq || !(await this.nextEvent(seen, SETTLE_MS))) {
          return view;
        }
        continue;
      }
      if (!(await this.nextEvent(seen, Math.max(0, deadline - Date.now())))) {
        throw new Error(`not this seat's turn within ${WAIT_MS} ms (phase ${Phase[view.phase]})`);
      }
    }
  }

  private count(kind: string): number {
    return this.counts.get(kind) ?? 0;
  }

  private async act(step: string, action: Action, actionId?: string): Promise<void> {
    const result = await within(this.requireSession().act(action, actionId === undefined ? {} : { actionId }), `${step}'s result`);
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
