// The two ways to be at a table, apart from how they are drawn:
// - SeatController: a player's seat. The table is the server's view of the
//   seat (GetView), taken again whenever the seat's stream (StreamEvents)
//   brings an event newer than it; actions go by SubmitAction with an action
//   id and the view's sequence number (expected_seq). After a reload it
//   resumes the stream after the last sequence number it saw: the events
//   the view already holds only complete the log, so nothing is drawn twice.
// - WatchController: a spectator. No view call exists for spectators, so the
//   table is built from the public events (Spectate), from the first one.
import {
  Phase,
  SeatControl,
  SpadesError,
  spectate,
  streamEvents,
  type ActionInit,
  type EventStream,
  type HandScored,
  type MatchEvent,
  type SeatClient,
  type SeatView,
  type SpadesClient,
} from "@spades/client";
import { matchSummary } from "./api.js";
import { problemOf, type Problem } from "./errors.js";
import { describe, type LogEntry } from "./log.js";
import { applyPublicEvent, emptyView } from "./model.js";
import { saveSeat, type SavedSeat } from "./storage.js";

export type Link = "connecting" | "live" | "reconnecting" | "failed";

export interface TableState {
  /** The table; undefined until the first view. */
  readonly view: SeatView | undefined;
  /** Bumped on every change of the view (which is changed in place for spectators). */
  readonly version: number;
  readonly log: readonly LogEntry[];
  readonly link: Link;
  /** The stream's or the first load's failure, while link is "failed" (or reconnecting). */
  readonly linkProblem: Problem | undefined;
  /** The last refusal of an action, until the next action or dismissal. */
  readonly notice: Problem | undefined;
  /** An action on its way: its key (a card code, "bid 3", ...). */
  readonly sending: string | undefined;
  /** A hand just scored, shown until dismissed. */
  readonly scored: HandScored | undefined;
}

type Listener = () => void;

abstract class Controller {
  state: TableState = {
    view: undefined,
    version: 0,
    log: [],
    link: "connecting",
    linkProblem: undefined,
    notice: undefined,
    sending: undefined,
    scored: undefined,
  };
  private readonly listeners = new Set<Listener>();
  protected stream: EventStream | undefined;
  protected stopped = false;

  subscribe(l: Listener): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }

  protected set(patch: Partial<TableState>): void {
    this.state = { ...this.state, ...patch };
    for (const l of this.listeners) {
      l();
    }
  }

  dismissNotice(): void {
    this.set({ notice: undefined });
  }

  dismissScored(): void {
    this.set({ scored: undefined });
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.quiet);
    this.stream?.close();
  }

  private quiet: ReturnType<typeof setTimeout> | undefined;

  /**
   * A stream (re)opened: "connecting" until its first sign of life. A resumed
   * stream with nothing new to send gets no headers from the server before
   * its next event, so one that has not failed within a second counts as live.
   */
  protected opening(): void {
    clearTimeout(this.quiet);
    this.set({ link: "connecting", linkProblem: undefined });
    this.quiet = setTimeout(() => {
      if (this.state.link === "connecting" && !this.stopped) {
        this.set({ link: "live" });
      }
    }, 1_000);
  }

  protected linkCallbacks() {
    return {
      onConnected: () => this.set({ link: "live", linkProblem: undefined }),
      onReconnect: (info: { attempt: number; error: SpadesError }) => this.set({ link: "reconnecting", linkProblem: problemOf(info.error) }),
    };
  }

  /** Reads a stream until it ends; a failure leaves the link "failed" with its problem. */
  protected async pump(stream: EventStream, onEvent: (e: MatchEvent) => void): Promise<void> {
    this.stream = stream;
    try {
      for await (const event of stream) {
        onEvent(event);
      }
    } catch (e) {
      if (!this.stopped) {
        this.set({ link: "failed", linkProblem: problemOf(e) });
      }
    }
  }
}

/** The log keeps its last LOG_LIMIT lines. */
const LOG_LIMIT = 300;

function capped(log: LogEntry[]): LogEntry[] {
  return log.length > LOG_LIMIT ? log.slice(-LOG_LIMIT) : log;
}

/** A random action id (1 to 64 characters); crypto.randomUUID needs a secure context, this does not. */
export function newActionId(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return "web-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export class SeatController extends Controller {
  /** The sequence number the drawn view is as of. */
  private viewSeq = 0n;
  private refreshing = false;
  private again = false;

  constructor(
    private readonly seat: SeatClient,
    private readonly saved: SavedSeat,
  ) {
    super();
    this.state = { ...this.state, log: saved.log };
  }

  get matchId(): string {
    return this.saved.matchId;
  }

  async start(): Promise<void> {
    try {
      let view = await this.seat.getView();
      const mine = view.seats[view.seat];
      if (view.phase !== Phase.MATCH_OVER && mine !== undefined && mine.control !== SeatControl.HUMAN) {
        try {
          const claimed = await this.seat.claim();
          if (claimed.view !== undefined) {
            view = claimed.view;
          }
        } catch (e) {
          // A seat that cannot be claimed now (seat changes used up) is still shown; acting takes it back.
          this.set({ notice: problemOf(e) });
        }
      }
      this.show(view);
    } catch (e) {
      this.set({ link: "failed", linkProblem: problemOf(e) });
      return;
    }
    this.listen();
  }

  /** (Re)opens the stream after the last sequence number seen. */
  listen(): void {
    if (this.stopped) {
      return;
    }
    this.stream?.close();
    this.opening();
    const stream = streamEvents(this.seat, { afterSeq: BigInt(this.saved.lastSeq), ...this.linkCallbacks() });
    void this.pump(stream, (e) => this.onEvent(e));
  }

  private onEvent(event: MatchEvent): void {
    if (this.state.link !== "live") {
      this.set({ link: "live", linkProblem: undefined });
    }
    const view = this.state.view;
    if (view === undefined) {
      return;
    }
    const entry = describe(view, event);
    const log = entry !== undefined ? capped([...this.state.log, entry]) : this.state.log;
    this.saved.lastSeq = String(event.seq);
    this.saved.log = log as LogEntry[];
    saveSeat(this.saved);
    // Every hand scored that this page has not shown yet (the stream delivers
    // each event once, a reload resuming after the last one seen), even when
    // the view drawn already holds it (taken after the last card was played).
    this.set({
      log,
      ...(event.kind.case === "handScored" ? { scored: event.kind.value } : {}),
    });
    if (event.seq > this.viewSeq) {
      void this.refresh();
    }
  }

  private show(view: SeatView): void {
    if (view.asOfSeq < this.viewSeq) {
      return; // an older picture than the one drawn
    }
    this.viewSeq = view.asOfSeq;
    this.set({ view, version: this.state.version + 1 });
  }

  /** Takes the view again; calls that come while one is on its way make one more after it. */
  async refresh(): Promise<void> {
    if (this.refreshing) {
      this.again = true;
      return;
    }
    this.refreshing = true;
    try {
      do {
        this.again = false;
        try {
          this.show(await this.seat.getView());
        } catch (e) {
          this.set({ notice: problemOf(e) });
        }
      } while (this.again && !this.stopped);
    } finally {
      this.refreshing = false;
    }
  }

  /** Sends an action for the seat; a refusal becomes the notice. */
  async act(action: ActionInit, key: string): Promise<void> {
    if (this.state.sending !== undefined) {
      return;
    }
    this.set({ sending: key, notice: undefined });
    try {
      await this.seat.submitAction(action, { actionId: newActionId(), expectedSeq: this.viewSeq });
    } catch (e) {
      this.set({ notice: problemOf(e) });
    }
    try {
      // The table after the action (or after what made it stale), before the
      // next click: until then the hand still shows the card just played.
      this.show(await this.seat.getView());
    } catch (e) {
      this.set({ notice: problemOf(e) });
    } finally {
      this.set({ sending: undefined });
    }
  }

  /** Hands the seat to a bot (LeaveSeat) and stops. */
  async leave(): Promise<void> {
    try {
      await this.seat.leave({ timeoutMs: 3_000 });
    } catch {
      // leaving is a courtesy: the turn timer or the operator handles the rest
    }
    this.stop();
  }
}

export class WatchController extends Controller {
  private readonly view: SeatView;

  constructor(
    private readonly client: SpadesClient,
    readonly matchId: string,
  ) {
    super();
    this.view = emptyView(undefined);
  }

  async start(): Promise<void> {
    let view = this.view;
    try {
      view = emptyView(await matchSummary(this.matchId));
    } catch {
      // names and rules are a nicety: without the summary the seats are numbered
    }
    Object.assign(this.view, view);
    this.set({ view: this.view, version: this.state.version + 1 });
    this.listen();
  }

  listen(): void {
    if (this.stopped) {
      return;
    }
    this.stream?.close();
    // Every event again from the first: the table is built from them.
    Object.assign(this.view, emptyView(undefined), { seats: this.view.seats, ruleset: this.view.ruleset });
    this.set({ log: [] });
    this.opening();
    const stream = spectate(this.client, this.matchId, this.linkCallbacks());
    void this.pump(stream, (e) => this.onEvent(e));
  }

  private onEvent(event: MatchEvent): void {
    applyPublicEvent(this.view, event);
    const entry = describe(this.view, event);
    this.set({
      link: "live",
      linkProblem: undefined,
      version: this.state.version + 1,
      log: entry !== undefined ? capped([...this.state.log, entry]) : this.state.log,
    });
  }
}
