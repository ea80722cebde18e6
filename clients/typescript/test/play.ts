// Playing a match out in a test: every seat given, until the match is over.
import assert from "node:assert/strict";
import { Phase, type Action, type SeatClient } from "../src/node.js";

/** Plays every seat given with `choose`'s action (submitAction; by default the
 * first legal one) until the match is over, or fails after `timeoutMs`. */
export async function playOut(
  seats: SeatClient[],
  choose: (legal: Action[]) => Action | undefined = (legal) => legal[0],
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let n = 0; ; ) {
    assert.ok(Date.now() < deadline, "the match did not end in time");
    let acted = false;
    for (const seat of seats) {
      const view = await seat.getView();
      if (view.phase === Phase.MATCH_OVER) {
        return;
      }
      const action = choose(view.legalActions);
      if (action !== undefined) {
        await seat.submitAction(action, { actionId: `a${++n}` });
        acted = true;
      }
    }
    if (!acted) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
}
