// Reads a session's or a stream's events in the background, for the tests to
// wait on: shared by client.test.ts (SeatSession) and events.test.ts (EventStream).
import type { MatchEvent } from "../src/node.js";
import { WAIT_MS } from "./harness.js";

export class EventReader {
  readonly events: MatchEvent[] = [];
  error: unknown;
  readonly done: Promise<void>;
  private wake: (() => void) | undefined;

  constructor(source: AsyncIterable<MatchEvent>) {
    this.done = (async () => {
      try {
        for await (const event of source) {
          this.events.push(event);
          this.notify();
        }
      } catch (e) {
        this.error = e;
      } finally {
        this.notify();
      }
    })();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  private async nap(left: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.min(left, 200));
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Waits until more than `seen` events are in (or the source ended). */
  async next(seen: number): Promise<void> {
    const deadline = Date.now() + WAIT_MS;
    while (this.events.length <= seen && this.error === undefined) {
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(`no event after ${seen} in ${WAIT_MS} ms`);
      }
      await this.nap(left);
    }
  }

  /** Waits until `until()` holds (checked after each event), or fails after WAIT_MS. */
  async waitFor(what: string, until: () => boolean): Promise<void> {
    const deadline = Date.now() + WAIT_MS;
    while (!until()) {
      if (this.error !== undefined) {
        throw new Error(`the stream ended before ${what}`, { cause: this.error });
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(`timed out waiting for ${what}`);
      }
      await this.nap(left);
    }
  }

  count(kind: MatchEvent["kind"]["case"]): number {
    return this.events.filter((e) => e.kind.case === kind).length;
  }

  has(kind: MatchEvent["kind"]["case"]): boolean {
    return this.events.some((e) => e.kind.case === kind);
  }
}
