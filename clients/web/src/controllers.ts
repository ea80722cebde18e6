// The two ways to be at a table, apart from how they are drawn:
// - SeatController: a player's seat. The table is the server's view of the
//   seat (GetView), taken again whenever the seat's stream (StreamEvents)
//   brings an event newer than it; actions go by SubmitAction with an action
//   id and the view's sequence number (expected_seq). After a reload it
//   resumes the stream after the last sequence number it saw: the events
//   the view already holds only complete the log, so nothing is drawn twice.
// - WatchController: a spectator. No view call exists for spectators, so the
//   table is built from the public events (Spectate), from the first one.
// Both read their events on a stream (StreamEvents, Spectate) or, in the
// "poll" mode, on PollEvents long polls (the same events in the same order);
// a stream that looks held back by a buffering proxy makes the page switch to
// long-poll by itself (Controller.checkStall, below).
import { clone } from "@bufbuild/protobuf";
import {
  Phase,
  SeatViewSchema,
  SeatControl,
  SpadesError,
  pollEvents,
  pollSpectate,
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
import { loadTransport, saveFallback, saveSeat, type SavedSeat, type Transport, type TransportSetting } from "./storage.js";

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
  /** How the events come: a stream, or long polls. */
  readonly transport: Transport;
  /** True when "poll" was not chosen but fallen back to (this page, or earlier in this tab). */
  readonly fellBack: boolean;
  /** True while the table shows a hand's end (its last trick) rather than the table as it is now. */
  readonly holding: boolean;
  /** The match's turn timer in milliseconds (0: none). */
  readonly turnTimerMs: number;
  /** When the turn in view began, on this page's clock (Date.now() ms); 0 when unknown. */
  readonly turnSince: number;
}

/** How long the last trick of a hand stays on the table when the result is not dismissed. */
export const HOLD_MS = 5_000;

/**
 * The automatic fallback to long-poll. A stream owes the page events when it
 * has just (re)opened a call, and when this seat's own action was accepted
 * (its events are visible to the seat by definition). If it then delivers no
 * event for STALL_MS, the page asks PollEvents, without waiting, for the
 * events after the stream's last one. If the poll answers with one and the
 * stream still has not delivered it GRACE_MS later, the stream is being held
 * back — by a proxy or an HTTP stack that buffers a streamed response until
 * it ends, while unary calls get through — and the page switches to
 * long-poll, for the rest of this tab's life (storage.ts). A quiet table (the
 * poll has nothing new) or a server out of reach (the poll fails too) is no
 * reason to switch; nor is a stream that fails and reconnects, as long as it
 * delivers what the poll sees.
 */
const STALL_MS = 4_000;
const GRACE_MS = 1_500;

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
    transport: "stream",
    fellBack: false,
    holding: false,
    turnTimerMs: 0,
    turnSince: 0,
  };
  private readonly listeners = new Set<Listener>();
  protected stream: EventStream | undefined;
  protected stopped = false;
  private stallTimer: ReturnType<typeof setTimeout> | undefined;
  private probing = false;

  constructor(setting: TransportSetting = loadTransport()) {
    this.state = { ...this.state, transport: setting.transport, fellBack: setting.automatic };
  }

  /** The first event a zero-wait PollEvents sees after `afterSeq` (undefined: none); rejects when the poll fails. */
  protected abstract probe(afterSeq: bigint): Promise<bigint | undefined>;

  /** Opens the events again, in the current mode, after the last one the table has (for the fallback). */
  protected abstract reopen(): void;

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
    this.release();
  }

  /** The server's clock minus this page's, as far as the events tell (their delivery makes it an upper bound). */
  private clockSkew: number | undefined;

  /** Notes when the turn in view began: the time of the latest event that moves the game. */
  protected timeEvent(event: MatchEvent): void {
    if (event.kind.case === "chatMessage" || event.timeMs === 0n) {
      return;
    }
    const server = Number(event.timeMs);
    const skew = server - Date.now();
    this.clockSkew = this.clockSkew === undefined ? skew : Math.max(this.clockSkew, skew);
    this.patch.turnSince = server - this.clockSkew;
  }

  /** Fields to set with the next set() (gathered by helpers during an event). */
  protected patch: { -readonly [K in keyof TableState]?: TableState[K] } = {};

  protected flush(extra: Partial<TableState> = {}): void {
    const patch = { ...this.patch, ...extra };
    this.patch = {};
    this.set(patch);
  }

  private holdTimer: ReturnType<typeof setTimeout> | undefined;

  /**
   * Shows the end of a hand (`final`: the table after its last trick, before
   * the next deal) for HOLD_MS, or until the result is dismissed; what comes
   * meanwhile waits (see `present`).
   */
  protected hold(final: SeatView): void {
    final.legalActions = [];
    clearTimeout(this.holdTimer);
    this.holdTimer = setTimeout(() => this.release(), HOLD_MS);
    this.patch.holding = true;
    this.patch.view = final;
    this.patch.version = this.state.version + 1;
  }

  /** Ends a hold: the table as it is now. */
  protected release(): void {
    clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    if (this.state.holding) {
      this.set({ holding: false });
      this.afterHold();
    }
  }

  /** What a controller draws once a hold ends. */
  protected abstract afterHold(): void;

  stop(): void {
    this.stopped = true;
    clearTimeout(this.holdTimer);
    clearTimeout(this.quiet);
    this.owed(false);
    this.stream?.close();
  }

  /**
   * The stream owes the page events (true: arms the stall check, keeping an
   * earlier deadline), or has delivered one (false: disarms it). Long polls
   * owe nothing: they are the fallback.
   */
  protected owed(yes: boolean): void {
    if (!yes) {
      clearTimeout(this.stallTimer);
      this.stallTimer = undefined;
      return;
    }
    if (this.state.transport !== "stream" || this.stopped || this.stallTimer !== undefined) {
      return;
    }
    this.stallTimer = setTimeout(() => {
      this.stallTimer = undefined;
      void this.checkStall();
    }, STALL_MS);
  }

  /** The rule above STALL_MS: probe, give the stream GRACE_MS more, then switch. */
  private async checkStall(): Promise<void> {
    const stream = this.stream;
    if (this.stopped || this.probing || stream === undefined || this.state.transport !== "stream") {
      return;
    }
    this.probing = true;
    try {
      let first: bigint | undefined;
      try {
        first = await this.probe(stream.lastSeq);
      } catch {
        return; // unary calls fail too: the server is out of reach, not held back
      }
      if (first === undefined) {
        return; // a quiet table: the stream owes nothing
      }
      await new Promise((resolve) => setTimeout(resolve, GRACE_MS));
      if (this.stopped || this.stream !== stream || this.state.transport !== "stream" || stream.lastSeq >= first) {
        return; // it came meanwhile (or the page moved on)
      }
      console.info(`spades: the event stream has not delivered event ${first}, which a poll sees: switching to long-poll`);
      saveFallback();
      this.set({ transport: "poll", fellBack: true });
      this.reopen();
    } finally {
      this.probing = false;
    }
  }

  /** A stream or a long-poll loop, as the mode says. */
  protected events(open: { stream: () => EventStream; poll: () => EventStream }): EventStream {
    const events = this.state.transport === "poll" ? open.poll() : open.stream();
    this.owed(false);
    this.owed(true); // a new call owes the page its first events
    return events;
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
      onReconnect: (info: { attempt: number; error: SpadesError }) => {
        this.set({ link: "reconnecting", linkProblem: problemOf(info.error) });
        this.owed(true); // the next call owes the page what the last one did not bring
      },
    };
  }

  /** Reads a stream until it ends; a failure leaves the link "failed" with its problem. */
  protected async pump(stream: EventStream, onEvent: (e: MatchEvent) => void): Promise<void> {
    this.stream = stream;
    try {
      for await (const event of stream) {
        if (stream === this.stream) {
          this.owed(false);
        }
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

/** A random id (1 to 64 characters) for an action, or for a press of Play now (QuickPlay's request id); crypto.randomUUID needs a secure context, this does not. */
export function newActionId(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return "web-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export class SeatController extends Controller {
  /** The sequence number the drawn view is as of. */
  private viewSeq = 0n;
  /** The seat's events newer than the view drawn, in order (to finish a hand's picture at its end). */
  private since: MatchEvent[] = [];
  /** The newest view taken while a hand's end is held (or awaited: see show). */
  private pending: SeatView | undefined;
  /** The highest hand number whose HandScored this page has seen on its stream. */
  private scoredUpTo = -1;
  private refreshing = false;
  private again = false;

  constructor(
    private readonly seat: SeatClient,
    private readonly saved: SavedSeat,
    setting?: TransportSetting,
  ) {
    super(setting);
    this.state = { ...this.state, log: saved.log };
  }

  get matchId(): string {
    return this.saved.matchId;
  }

  async start(): Promise<void> {
    void matchSummary(this.saved.matchId).then(
      (m) => this.set({ turnTimerMs: m.turnTimerMs }),
      () => undefined, // the timer is a nicety: without the summary no countdown is shown
    );
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
    const options = { afterSeq: BigInt(this.saved.lastSeq), ...this.linkCallbacks() };
    const stream = this.events({ stream: () => streamEvents(this.seat, options), poll: () => pollEvents(this.seat, options) });
    void this.pump(stream, (e) => this.onEvent(e));
  }

  protected override reopen(): void {
    this.listen();
  }

  protected override async probe(afterSeq: bigint): Promise<bigint | undefined> {
    const { client, matchId, token } = this.seat;
    const res = await client.unary((o) => client.rpc.pollEvents({ matchId, afterSeq, waitMs: 0 }, o), token, { timeoutMs: 5_000 });
    return res.events[0]?.seq;
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
    this.timeEvent(event);
    if (event.seq > this.viewSeq) {
      this.since.push(event);
    }
    // Every hand scored that this page has not shown yet (the stream delivers
    // each event once, a reload resuming after the last one seen), even when
    // the view drawn already holds it (taken after the last card was played).
    if (event.kind.case === "handScored") {
      this.patch.scored = event.kind.value;
      this.scoredUpTo = Math.max(this.scoredUpTo, event.kind.value.handNumber);
      this.holdHandEnd(event.kind.value.handNumber);
      if (!this.patch.holding && this.pending !== undefined) {
        this.afterHold(); // nothing to hold: the view that waited for the score comes in
      }
    }
    this.flush({ log });
    if (event.seq > this.viewSeq) {
      void this.refresh();
    }
  }

  /**
   * The hand just scored, as it ended: the view drawn (of that hand) with the
   * events since it applied, up to the score, so its last trick stays on the
   * table while the next hand is dealt behind it.
   */
  private holdHandEnd(handNumber: number): void {
    const drawn = this.state.view;
    if (drawn === undefined || drawn.handNumber !== handNumber || drawn.phase === Phase.MATCH_OVER) {
      return; // the view is already past that hand (a reload): nothing to finish
    }
    const final = clone(SeatViewSchema, drawn);
    for (const e of this.since) {
      if (e.seq > final.asOfSeq) {
        applyPublicEvent(final, e);
      }
    }
    this.hold(final);
  }

  protected override afterHold(): void {
    const next = this.pending;
    this.pending = undefined;
    if (next !== undefined) {
      this.draw(next);
    }
  }

  private show(view: SeatView): void {
    if (view.asOfSeq < this.viewSeq) {
      return; // an older picture than the one drawn
    }
    // A view past the end of the hand drawn waits for that hand's score on
    // the stream, so the hand's last trick can be shown first (holdHandEnd).
    const drawn = this.state.view;
    const pastHand =
      drawn !== undefined &&
      drawn.phase !== Phase.MATCH_OVER &&
      (view.handNumber > drawn.handNumber || view.phase === Phase.MATCH_OVER) &&
      this.scoredUpTo < drawn.handNumber;
    if (this.state.holding || pastHand) {
      if (this.pending === undefined || view.asOfSeq >= this.pending.asOfSeq) {
        this.pending = view;
      }
      return;
    }
    this.draw(view);
  }

  private draw(view: SeatView): void {
    if (view.asOfSeq < this.viewSeq) {
      return;
    }
    this.viewSeq = view.asOfSeq;
    this.since = this.since.filter((e) => e.seq > view.asOfSeq);
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
      const res = await this.seat.submitAction(action, { actionId: newActionId(), expectedSeq: this.viewSeq });
      // The action's events that this seat sees: the stream owes them now.
      const mine = res.events.at(-1)?.seq;
      if (mine !== undefined && this.stream !== undefined && this.stream.lastSeq < mine) {
        this.owed(true);
      }
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
    setting?: TransportSetting,
  ) {
    super(setting);
    this.view = emptyView(undefined);
  }

  async start(): Promise<void> {
    let view = this.view;
    try {
      const summary = await matchSummary(this.matchId);
      view = emptyView(summary);
      this.set({ turnTimerMs: summary.turnTimerMs });
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
    this.open(0n);
  }

  /** The public events after `afterSeq`, applied to the view built so far. */
  private open(afterSeq: bigint): void {
    this.opening();
    const options = { afterSeq, ...this.linkCallbacks() };
    const stream = this.events({
      stream: () => spectate(this.client, this.matchId, options),
      poll: () => pollSpectate(this.client, this.matchId, options),
    });
    void this.pump(stream, (e) => this.onEvent(e));
  }

  protected override reopen(): void {
    if (this.stopped) {
      return;
    }
    const after = this.stream?.lastSeq ?? 0n;
    this.stream?.close();
    this.open(after); // on from the last event applied: the view is kept
  }

  protected override async probe(afterSeq: bigint): Promise<bigint | undefined> {
    try {
      const res = await this.client.rpc.pollEvents({ matchId: this.matchId, afterSeq, waitMs: 0 }, { timeoutMs: 5_000 });
      return res.events[0]?.seq;
    } catch (e) {
      throw SpadesError.from(e);
    }
  }

  private onEvent(event: MatchEvent): void {
    applyPublicEvent(this.view, event);
    this.timeEvent(event);
    const entry = describe(this.view, event);
    if (event.kind.case === "handScored") {
      this.patch.scored = event.kind.value;
      this.hold(clone(SeatViewSchema, this.view));
    }
    this.flush({
      link: "live",
      linkProblem: undefined,
      version: this.state.version + 1,
      ...(this.state.holding || this.patch.holding ? {} : { view: this.view }),
      log: entry !== undefined ? capped([...this.state.log, entry]) : this.state.log,
    });
  }

  protected override afterHold(): void {
    this.set({ view: this.view, version: this.state.version + 1 });
  }
}
