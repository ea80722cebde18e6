// The web table in a real browser (Debian's Chromium, driven by Playwright)
// against the real stack (spades-server + Envoy + the web table's server, as
// `make run` starts them): a whole hand played by clicking and a reload
// mid-hand, each on a stream and by long-poll, the switch to long-poll when
// a proxy holds the stream back, an illegal click, a spectator who never
// sees a hidden card (checked against the match's export), and readable
// errors. Screenshots of the positions go to build/web-screenshots/.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright";
import { onPhone, openAdvanced, practiceMatch, shot } from "./page.js";
import { clientModule, launchBrowser, startStack, type ClientModule, type Stack } from "./stack.js";

const MOVE_TIMEOUT_MS = 20_000;
const HAND_TIMEOUT_MS = 120_000;

type Move = "bid" | "play" | "scored" | "over" | "problem";

interface Snapshot {
  phase: string;
  hand: string[];
  legal: string[];
  /** Finished tricks of this hand, in order: [code, seat]. */
  history: [string, number][];
  /** The trick in progress: [code, seat]. */
  trick: [string, number][];
  /** The last finished trick shown between tricks. */
  lastTrick: [string, number][];
  log: string[];
  logText: string[];
  problems: string[];
}

/** What the page shows, read off its DOM (data- attributes the table sets for this). */
function snapshot(page: Page): Promise<Snapshot> {
  return page.evaluate(() => {
    const codes = (sel: string): string[] => [...document.querySelectorAll(sel)].map((e) => e.getAttribute("data-card") ?? "");
    const placed = (sel: string): [string, number][] =>
      [...document.querySelectorAll(sel)].map((e) => [e.getAttribute("data-card") ?? "", Number(e.getAttribute("data-seat"))]);
    return {
      phase: document.querySelector("main")?.getAttribute("data-phase") ?? "",
      hand: codes("[data-hand=visible] [data-card]"),
      legal: codes("[data-hand=visible] [data-card][data-legal=true]"),
      history: placed("[data-history] [data-card]"),
      trick: placed("[data-trick=live] [data-card]"),
      lastTrick: placed("[data-trick=last] [data-card]"),
      log: [...document.querySelectorAll("[data-log] li[data-seq]")].map((e) => e.getAttribute("data-seq") ?? ""),
      logText: [...document.querySelectorAll("[data-log] li[data-seq]")].map((e) => e.textContent ?? ""),
      problems: [...document.querySelectorAll("[data-problem]")].map((e) => `${e.getAttribute("data-problem")}: ${e.textContent}`),
    };
  });
}

/** Waits until the page asks the player for something, or the hand is over. */
async function nextMove(page: Page): Promise<Move> {
  const handle = await page.waitForFunction(
    () => {
      if (document.querySelector("[data-dialog=hand-result]")) return "scored";
      if (document.querySelector("[data-match-over]")) return "over";
      if (document.querySelector("[data-problem]")) return "problem";
      if (document.querySelector(".card.sending")) return false;
      if (document.querySelector(".actions [data-action^=bid-]:not([disabled])")) return "bid";
      if (document.querySelector("[data-hand=visible] [data-legal=true]")) return "play";
      return false;
    },
    undefined,
    { timeout: MOVE_TIMEOUT_MS, polling: 50 },
  );
  return (await handle.jsonValue()) as Move;
}

/** What the page offers now: its action buttons' names, "card" (a card to play), "pass", "scored", "over", "problem". */
async function available(page: Page): Promise<string[]> {
  const handle = await page.waitForFunction(
    () => {
      const out: string[] = [];
      if (document.querySelector("[data-dialog=hand-result]")) out.push("scored");
      if (document.querySelector("[data-match-over]")) out.push("over");
      if (document.querySelector("[data-problem]")) out.push("problem");
      if (document.querySelector(".card.sending")) return false;
      for (const b of document.querySelectorAll(".actions [data-action]:not([disabled])")) out.push(b.getAttribute("data-action") ?? "");
      if (document.querySelector(".actions [data-action=pass]")) out.push("pass");
      else if (document.querySelector("[data-hand=visible] [data-legal=true]")) out.push("card");
      return out.length > 0 ? out : false;
    },
    undefined,
    { timeout: MOVE_TIMEOUT_MS, polling: 50 },
  );
  return (await handle.jsonValue()) as string[];
}

/** Clicks a card and waits until it has left the hand (or the hand is over: the next one may hold it again). */
async function playCard(page: Page, code: string): Promise<void> {
  await page.click(`[data-hand=visible] [data-card="${code}"]`);
  await page.waitForFunction(
    (c) => !document.querySelector(`[data-hand=visible] [data-card="${c}"]`) || document.querySelector("[data-dialog=hand-result]") !== null,
    code,
    { timeout: MOVE_TIMEOUT_MS },
  );
}

async function bid(page: Page, preferred = 3): Promise<number> {
  const offered = await page.$$eval(".actions [data-action^=bid-]", (bs) => bs.map((b) => Number(b.getAttribute("data-action")!.slice(4))));
  const tricks = offered.includes(preferred) ? preferred : offered[Math.floor(offered.length / 2)]!;
  await page.click(`[data-action=bid-${tricks}]`);
  await page.waitForSelector(".actions [data-action^=bid-]", { state: "detached", timeout: MOVE_TIMEOUT_MS });
  return tricks;
}

/** Bid when asked and play the first legal card, until ``cards`` are played. */
async function bidAndPlay(page: Page, cards: number): Promise<void> {
  for (let played = 0; played < cards; ) {
    const move = await nextMove(page);
    assert.ok(move === "bid" || move === "play", `${move}: ${(await snapshot(page)).problems.join("; ")}`);
    if (move === "bid") {
      await bid(page);
    } else {
      await playCard(page, (await snapshot(page)).legal[0]!);
      played++;
    }
  }
}


/** Every card played in the hand `hand` by the game record of the match's export, in order: [code, seat]. */
async function recordPlays(mod: ClientModule, stack: Stack, matchId: string, hand: number): Promise<[string, number][]> {
  const client = mod.connect(stack.address, { operatorToken: stack.operatorToken });
  const res = await client.rpc.exportMatch({ matchId }, { headers: { authorization: `Bearer ${stack.operatorToken}` }, timeoutMs: 10_000 });
  const record = JSON.parse(res.recordJson) as { ruleset: { players: number }; actions: [number, string][] };
  const players = record.ruleset.players;
  const perHand = players === 4 ? 52 : 0;
  assert.ok(perHand > 0, "a four-player table");
  const plays = record.actions.filter(([, a]) => a.startsWith("play ")).map(([seat, a]): [string, number] => [a.slice(5), seat]);
  return plays.slice(hand * perHand, (hand + 1) * perHand);
}

/** How many calls of each method of the service the page has made (by the request's path). */
function countCalls(page: Page): Record<string, number> {
  const counts: Record<string, number> = {};
  page.on("request", (r) => {
    const m = /\/spades\.v1\.SpadesService\/(\w+)$/.exec(new URL(r.url()).pathname);
    if (m !== null) {
      counts[m[1]!] = (counts[m[1]!] ?? 0) + 1;
    }
  });
  return counts;
}

/** The link indicator's mode: "stream" or "poll", and whether the page fell back to it by itself. */
async function transportShown(page: Page): Promise<{ transport: string; fallback: boolean }> {
  const badge = await page.waitForSelector("[data-link]");
  return { transport: (await badge.getAttribute("data-transport")) ?? "", fallback: (await badge.getAttribute("data-fallback")) === "true" };
}

/** The seat's events from the first up to the view's as_of_seq, read in Node on StreamEvents. */
async function seatEvents(mod: ClientModule, stack: Stack, page: Page): Promise<import("../../typescript/dist/src/node.js").MatchEvent[]> {
  const token = await page.evaluate(() => (JSON.parse(sessionStorage.getItem("spades.seat")!) as { token: string }).token);
  const client = mod.connect(stack.address, { operatorToken: stack.operatorToken });
  const seat = client.seat(token);
  const events: import("../../typescript/dist/src/node.js").MatchEvent[] = [];
  const view = await seat.getView();
  const stream = mod.streamEvents(seat);
  for await (const e of stream) {
    events.push(e);
    if (e.seq >= view.asOfSeq) break;
  }
  stream.close();
  return events;
}

function noDuplicates(values: string[], what: string): void {
  const seen = new Set<string>();
  for (const v of values) {
    assert.ok(!seen.has(v), `${what}: ${v} twice in ${values.join(" ")}`);
    seen.add(v);
  }
}

async function overflowX(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
}

describe("the web table in Chromium against the real stack", { timeout: 600_000 }, () => {
  let stack: Stack;
  let browser: Browser;
  let mod: ClientModule;

  before(async () => {
    mod = await clientModule();
    stack = await startStack("table");
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await stack?.stop();
  });

  for (const mode of ["stream", "poll"] as const) {
  const poll = mode === "poll";
  it(`plays a whole hand by clicking against bots, at phone width${poll ? ", by long-poll (?transport=poll)" : ""}`, async () => {
    await onPhone(browser, poll ? "hand-poll" : "hand", async (page) => {
      const calls = countCalls(page);
      const url = poll ? `${stack.url}?transport=poll` : stack.url;
      if (!poll) {
        await page.goto(url);
        await page.waitForSelector("[data-form=new-match]");
        await shot(page, "lobby.png");
      }
      const matchId = await practiceMatch(page, url, poll ? "1102" : "1101");
      const mine: string[] = [];
      const deadline = Date.now() + HAND_TIMEOUT_MS;
      let bids = 0;
      for (;;) {
        assert.ok(Date.now() < deadline, "the hand was not over in time");
        const move = await nextMove(page);
        if (move === "scored") break;
        assert.notEqual(move, "problem", (await snapshot(page)).problems.join("; "));
        assert.notEqual(move, "over");
        if (move === "bid") {
          if (!poll) {
            await shot(page, "bidding.png");
          }
          await bid(page);
          bids++;
          continue;
        }
        const s = await snapshot(page);
        assert.ok(s.legal.length > 0 && s.legal.every((c) => s.hand.includes(c)));
        // Every card on the table once: the hand, this hand's tricks, the trick in progress.
        noDuplicates([...s.hand, ...s.history.map(([c]) => c), ...s.trick.map(([c]) => c)], "cards shown");
        if (mine.length === 5) {
          await shot(page, poll ? "poll-playing.png" : "playing.png");
        }
        const card = s.legal[0]!;
        await playCard(page, card);
        mine.push(card);
      }
      assert.equal(bids, 1);
      assert.equal(mine.length, 13);
      assert.equal(await overflowX(page), 0, "nothing wider than the phone");
      // The hand's result, and the whole hand in the log: 52 cards, 13 tricks.
      const dialog = await page.textContent("[data-dialog=hand-result]");
      assert.match(dialog ?? "", /Hand 1/);
      assert.match(dialog ?? "", /Score/);
      if (!poll) {
        await shot(page, "hand-result.png", false);
      }
      const s = await snapshot(page);
      assert.equal(s.logText.filter((t) => / plays? /.test(t)).length, 52, s.logText.join("\n"));
      assert.equal(s.logText.filter((t) => / wins? trick /.test(t)).length, 13);
      noDuplicates(s.log, "log");
      // Each card played once in the log: 52 different cards.
      noDuplicates(s.logText.filter((t) => / plays? /.test(t)).map((t) => t.replace(/^.* plays? /, "")), "cards in the log");
      // The events came the way chosen, and a stream that worked was kept.
      assert.deepEqual(await transportShown(page), { transport: mode, fallback: false });
      if (poll) {
        assert.equal(calls["StreamEvents"] ?? 0, 0, "no stream in poll mode");
        assert.ok((calls["PollEvents"] ?? 0) > 5, `${calls["PollEvents"]} polls`);
      } else {
        assert.ok((calls["StreamEvents"] ?? 0) >= 1);
      }
      // The server's record agrees card for card with what was clicked.
      const plays = await recordPlays(mod, stack, matchId, 0);
      assert.equal(plays.length, 52);
      assert.deepEqual(
        plays.filter(([, seat]) => seat === 0).map(([c]) => c),
        mine,
      );
      await page.click("[data-action=continue]");
      await page.waitForSelector("[data-dialog=hand-result]", { state: "detached" });
    });
  });
  }

  for (const mode of ["stream", "poll"] as const) {
  const poll = mode === "poll";
  it(`resumes after a reload mid-hand: every card once, none missing, the log without gap or repeat${poll ? " (long-poll, chosen in the lobby)" : ""}`, async () => {
    await onPhone(browser, poll ? "reload-poll" : "reload", async (page) => {
      const calls = countCalls(page);
      const matchId = await practiceMatch(page, stack.url, poll ? "2203" : "2202", { longPoll: poll });
      await bidAndPlay(page, 4);
      assert.equal(await nextMove(page), "play");
      const before = await snapshot(page);
      await page.reload();
      await page.waitForSelector("[data-hand=visible]");
      await page.waitForSelector("[data-link=live]");
      assert.equal(await nextMove(page), "play");
      const afterReload = await snapshot(page);
      await shot(page, poll ? "after-reload-poll.png" : "after-reload.png");
      // The mode chosen in the lobby outlives the reload (no ?transport= in this URL).
      assert.deepEqual(await transportShown(page), { transport: mode, fallback: false });

      // The same table: the hand, this hand's tricks and the trick in progress.
      assert.deepEqual(afterReload.hand, before.hand);
      assert.deepEqual(afterReload.history, before.history);
      assert.deepEqual(afterReload.trick, before.trick);
      // Every card on the table once; the hand and the player's cards played are the cards dealt.
      const shown = [...afterReload.hand, ...afterReload.history.map(([c]) => c), ...afterReload.trick.map(([c]) => c)];
      noDuplicates(shown, "cards shown");
      const events = await seatEvents(mod, stack, page);
      const dealt = events.find((e) => e.kind.case === "handShown");
      assert.ok(dealt !== undefined && dealt.kind.case === "handShown");
      const minePlayed = [...afterReload.history, ...afterReload.trick].filter(([, s]) => s === 0).map(([c]) => c);
      assert.deepEqual([...afterReload.hand, ...minePlayed].sort(), dealt.kind.value.cards.map(codeOf).sort());
      // The cards on the table are the record's, in order.
      const plays = await recordPlays(mod, stack, matchId, 0);
      assert.deepEqual([...afterReload.history, ...afterReload.trick], plays);
      // The log: the lines before the reload, then the rest; each event once, none missing.
      assert.deepEqual(afterReload.log.slice(0, before.log.length), before.log);
      noDuplicates(afterReload.log, "log");
      assert.deepEqual(
        afterReload.log,
        events.map((e) => String(e.seq)),
      );

      // And the hand goes on from there to its end.
      for (let n = 0; ; n++) {
        assert.ok(n < 40, "the hand did not end");
        const move = await nextMove(page);
        if (move === "scored") break;
        assert.equal(move, "play", (await snapshot(page)).problems.join("; "));
        await playCard(page, (await snapshot(page)).legal[0]!);
      }
      const end = await snapshot(page);
      noDuplicates(end.log, "log");
      assert.equal(end.logText.filter((t) => / plays? /.test(t)).length, 52);
      const saved = await page.evaluate(() => (JSON.parse(sessionStorage.getItem("spades.seat")!) as { lastSeq: string }).lastSeq);
      assert.equal(saved, end.log.at(-1));
      if (poll) {
        assert.equal(calls["StreamEvents"] ?? 0, 0, "no stream in poll mode, before the reload or after");
      }
    });
  });
  }

  it("switches to long-poll by itself when a proxy holds the stream back, and keeps to it in this tab", async () => {
    await onPhone(browser, "fallback", async (page) => {
      // A buffering proxy: StreamEvents is sent on to Envoy, and its answer
      // is held until it ends, which a stream never does. Unary calls pass.
      let held = 0;
      await page.route("**/spades.v1.SpadesService/StreamEvents", (route) => {
        held++;
        void route
          .fetch({ timeout: 0 })
          .then((res) => route.fulfill({ response: res }))
          .catch(() => undefined);
      });
      const started = Date.now();
      await practiceMatch(page, stack.url, "2204");
      // The view comes (GetView), the events do not: within seconds the page switches.
      await page.waitForSelector("[data-link][data-transport=poll][data-fallback=true]", { timeout: 20_000 });
      const took = Date.now() - started;
      assert.ok(held >= 1, "the page opened a stream");
      await shot(page, "fallback.png");
      // Play on by long-poll: the bid and a few cards.
      await bidAndPlay(page, 4);
      assert.equal(await nextMove(page), "play");
      // The log: the seat's events, each once, none missing, across the switch.
      const s = await snapshot(page);
      noDuplicates(s.log, "log");
      assert.deepEqual(s.log, (await seatEvents(mod, stack, page)).map((e) => String(e.seq)));
      assert.ok(took < 15_000, `switched after ${took} ms`);

      // A reload in this tab starts by long-poll at once: no stream is tried again.
      const streams = held;
      assert.equal(await page.evaluate(() => sessionStorage.getItem("spades.transport.fallback")), "poll");
      await page.reload();
      await page.waitForSelector("[data-link=live][data-transport=poll][data-fallback=true]");
      assert.equal(await nextMove(page), "play");
      assert.equal(held, streams, "no stream after the reload");
      // The lobby says so; choosing the stream again there clears the fallback.
      await page.goto(`${stack.url}#/`);
      await openAdvanced(page);
      await page.waitForSelector("[data-form=connection] [data-fallback]");
      assert.ok(await page.isChecked("input[name=transport][value=poll]"));
      await page.check("input[name=transport][value=stream]");
      await page.waitForSelector("[data-form=connection] [data-fallback]", { state: "detached" });
      assert.equal(await page.evaluate(() => sessionStorage.getItem("spades.transport.fallback")), null);
      assert.equal(await page.evaluate(() => localStorage.getItem("spades.transport")), "stream");
      await page.unroute("**/spades.v1.SpadesService/StreamEvents");
    });
  });

  it("refuses an illegal click with the rule, and changes nothing", async () => {
    await onPhone(browser, "illegal", async (page) => {
      const matchId = await practiceMatch(page, stack.url, "3303");
      // A card during the bidding: the server says why not.
      assert.equal(await nextMove(page), "bid");
      const first = (await snapshot(page)).hand[0]!;
      assert.equal(await page.getAttribute(`[data-card="${first}"]`, "aria-disabled"), "true");
      await page.click(`[data-hand=visible] [data-card="${first}"]`, { force: true }); // a person clicks a dimmed card too
      const phase = await page.waitForSelector("[data-problem=WRONG_PHASE]");
      // One plain sentence in the player's language; the server's words and the codes only in the details fold.
      assert.match((await phase.textContent()) ?? "", /not possible at this point of the hand/);
      assert.equal(await phase.$eval("details", (d) => (d as HTMLDetailsElement).open), false);
      assert.match((await phase.$eval("details", (d) => d.textContent)) ?? "", /not allowed during bidding[\s\S]*WRONG_PHASE · FAILED_PRECONDITION/i);
      await page.click("[data-problem] button.close");
      await bid(page);
      // Then, at the first turn with a card that may not be played, that card.
      let refused: string | undefined;
      for (let n = 0; n < 13 && refused === undefined; n++) {
        const move = await nextMove(page);
        assert.equal(move, "play", (await snapshot(page)).problems.join("; "));
        const s = await snapshot(page);
        const illegal = s.hand.find((c) => !s.legal.includes(c));
        if (illegal === undefined) {
          await playCard(page, s.legal[0]!);
          continue;
        }
        await page.click(`[data-hand=visible] [data-card="${illegal}"]`, { force: true });
        const box = await page.waitForSelector("[data-problem]");
        const reason = await box.getAttribute("data-problem");
        assert.ok(reason === "MUST_FOLLOW_SUIT" || reason === "SPADES_NOT_BROKEN", `${reason}`);
        const text = (await box.textContent()) ?? "";
        assert.match(text, /Not allowed: (You must follow the suit that was led|You cannot lead trump)/);
        assert.match(text, /Rule: /);
        await shot(page, "illegal-click.png");
        const after = await snapshot(page);
        assert.deepEqual(after.hand, s.hand, "the card stays in the hand");
        assert.deepEqual(after.trick, s.trick, "nothing was played");
        const plays = await recordPlays(mod, stack, matchId, 0);
        assert.ok(!plays.some(([c, seat]) => c === illegal && seat === 0));
        // A legal card is still taken, and the message goes.
        await playCard(page, s.legal[0]!);
        await page.waitForSelector("[data-problem]", { state: "detached" });
        refused = illegal;
      }
      assert.ok(refused !== undefined, "no turn offered an illegal card");
    });
  });

  for (const mode of ["stream", "poll", "held"] as const) {
  const about = { stream: "", poll: ", by long-poll (?transport=poll)", held: ", its stream held back by a proxy: by long-poll after the switch" }[mode];
  it(`shows a spectator only public cards, checked against the match's export${about}`, async () => {
    // A match made as the page makes it; its seat played from here, slowly.
    const origin = new URL(stack.url).origin;
    const res = await fetch(new URL("/api/new-match", stack.url), {
      method: "POST",
      headers: { "content-type": "application/json", origin },
      body: JSON.stringify({ seed: { stream: "4404", poll: "4405", held: "4406" }[mode], botLevels: [2, 3, 4] }),
      signal: AbortSignal.timeout(10_000),
    });
    assert.equal(res.status, 200);
    const made = (await res.json()) as { matchId: string; token: string };
    const client = mod.connect(stack.address, { operatorToken: stack.operatorToken });
    const seat = client.seat(made.token);
    await seat.claim();

    await onPhone(browser, mode === "stream" ? "spectator" : `spectator-${mode}`, async (page) => {
      const calls = countCalls(page);
      if (mode === "held") {
        // As in the seat's test: Spectate's answer held until it ends, which it never does.
        await page.route("**/spades.v1.SpadesService/Spectate", (route) => {
          void route
            .fetch({ timeout: 0 })
            .then((res) => route.fulfill({ response: res }))
            .catch(() => undefined);
        });
      }
      await page.goto(`${stack.url}${mode === "poll" ? "?transport=poll" : ""}#/watch/${made.matchId}`);
      await page.waitForSelector("main.spectator [data-link=live]");
      assert.equal(await page.$("[data-hand]"), null, "a spectator has no hand");
      assert.equal(await page.$("[data-actions]"), null, "nor actions");
      let samples = 0;
      let inSecondHand = 0;
      for (let acted = 0; inSecondHand < 3 && acted < 60; acted++) {
        const view = await myTurn(seat);
        if (view.legalActions.length === 0) {
          break; // the match is over
        }
        const hand = view.handNumber;
        // The table is still (the bots wait for seat 0): the record has every card played.
        const plays = (await recordPlays(mod, stack, made.matchId, hand)).map(([c]) => c);
        await page.waitForFunction(
          ({ n, h }) =>
            document.querySelector("main")?.getAttribute("data-hand-number") === String(h) &&
            document.querySelectorAll("[data-history] [data-card], [data-trick=live] [data-card]").length === n,
          { n: plays.length, h: hand },
          { timeout: MOVE_TIMEOUT_MS },
        );
        const s = await snapshot(page);
        const shown = [...s.history, ...s.trick, ...s.lastTrick].map(([c]) => c);
        const held = view.hand.map(codeOf);
        for (const c of shown) {
          assert.ok(!held.includes(c), `the spectator sees ${c}, which seat 0 still holds`);
          assert.ok(plays.includes(c), `the spectator sees ${c}, which the record has not played in hand ${hand + 1}`);
        }
        // This hand's tricks and the trick in progress are exactly the record's plays, in order.
        assert.deepEqual([...s.history, ...s.trick].map(([c]) => c), plays);
        const everyCard = await page.$$eval("[data-card]", (es) => es.map((e) => e.getAttribute("data-card") ?? ""));
        assert.ok(everyCard.every((c) => plays.includes(c)), everyCard.join(" "));
        samples++;
        if (samples === 8 && mode === "stream") {
          await shot(page, "spectator.png");
        }
        if (hand >= 1) {
          inSecondHand++;
        }
        await seat.submitAction(view.legalActions[0]!, { expectedSeq: view.asOfSeq });
      }
      assert.ok(samples >= 14, `${samples} samples`);
      // The scores the spectator built from the events are the server's.
      const summary = await client.getMatch(made.matchId);
      await page.waitForFunction((n) => document.querySelectorAll("[data-scores] [data-result]").length >= n, summary.handNumber, {
        timeout: MOVE_TIMEOUT_MS,
      });
      for (const [side, score] of summary.scores.entries()) {
        assert.equal(await page.textContent(`[data-score="${side}"]`).then((t) => Number.parseInt(t ?? "", 10)), score);
      }
      // Every event in the log once, whatever brought it.
      noDuplicates((await snapshot(page)).log, "log");
      const shown = await transportShown(page);
      assert.deepEqual(shown, { transport: mode === "stream" ? "stream" : "poll", fallback: mode === "held" });
      if (mode === "poll") {
        assert.equal(calls["Spectate"] ?? 0, 0, "no stream in poll mode");
      }
      if (mode !== "stream") {
        assert.ok((calls["PollEvents"] ?? 0) > 5, `${calls["PollEvents"]} polls`);
      }
    });
  });
  }

  it("offers the variants' actions: blind nil and the exchange, the optional exchange, auction trump, the draw", async () => {
    const tables: { name: string; setup: (page: Page) => Promise<void>; prefer: string[]; expect: string[]; shotAt?: string }[] = [
      {
        name: "blind nil, compulsory exchange",
        setup: async (page) => page.check("input[name=blindNil]"),
        prefer: ["blind-nil"],
        expect: ["blind-nil", "pass"],
        shotAt: "pass",
      },
      {
        name: "polish: blind nil, optional exchange",
        setup: async (page) => {
          await page.check("input[name=preset][value=polish]");
          await page.check("input[name=blindNil]");
        },
        prefer: ["blind-nil", "exchange-take"],
        expect: ["blind-nil", "exchange-take", "pass"],
      },
      {
        name: "auction trump",
        setup: async (page) => page.check("input[name=auctionTrump]"),
        prefer: ["bid-13", "trump-hearts"],
        expect: ["bid-13", "trump-hearts"],
        shotAt: "trump-hearts",
      },
      {
        name: "two players' draw",
        setup: async (page) => {
          await page.check("input[name=preset][value=german]");
          await page.selectOption("select[name=players]", "2");
        },
        prefer: ["draw-keep"],
        expect: ["draw-keep"],
        shotAt: "draw-keep",
      },
      {
        name: "five players",
        setup: async (page) => {
          await page.check("input[name=preset][value=german]");
          await page.selectOption("select[name=players]", "5");
        },
        prefer: [],
        expect: ["card"],
        shotAt: "card",
      },
    ];
    for (const [i, table] of tables.entries()) {
      await onPhone(browser, `variant-${i}`, async (page) => {
        await page.goto(stack.url);
        await page.waitForSelector("[data-form=new-match]");
        await table.setup(page);
        await openAdvanced(page);
        await page.fill("input[name=seed]", String(5500 + i));
        await page.click("[data-action=start]");
        await page.waitForSelector("[data-hand]");
        const seen = new Set<string>();
        let cards = 0;
        for (let n = 0; cards < 2; n++) {
          assert.ok(n < 60, `${table.name}: no end in sight; seen ${[...seen].join(" ")}`);
          const offered = await available(page);
          assert.ok(!offered.includes("problem"), `${table.name}: ${(await snapshot(page)).problems.join("; ")}`);
          const choice = table.prefer.find((a) => offered.includes(a)) ?? offered.find((a) => a.startsWith("bid-") || a === "card" || a === "pass" || a.startsWith("draw-") || a === "look") ?? offered[0]!;
          if (choice === table.shotAt && !seen.has(choice)) {
            await shot(page, `variant-${table.shotAt}.png`);
          }
          seen.add(choice);
          if (choice === "card") {
            await playCard(page, (await snapshot(page)).legal[0]!);
            cards++;
          } else if (choice === "pass") {
            const count = await page.$$eval(".actions [data-action=pass]", () => Number(/Choose (\d)/.exec(document.querySelector(".actions")?.textContent ?? "")?.[1] ?? "0"));
            const hand = (await snapshot(page)).hand;
            for (const c of hand.slice(0, count)) {
              await page.click(`[data-hand=visible] [data-card="${c}"]`);
            }
            await page.click("[data-action=pass]:not([disabled])");
            await page.waitForSelector("[data-action=pass]", { state: "detached" });
          } else if (choice === "scored" || choice === "over") {
            break;
          } else {
            await page.click(`.actions [data-action="${choice}"]`);
            await page.waitForFunction((a) => !document.querySelector(`.actions [data-action="${a}"]:not([disabled])`) || document.querySelector(".card.sending") === null, choice);
            await page.waitForTimeout(50);
          }
        }
        for (const a of table.expect) {
          assert.ok(seen.has(a), `${table.name}: the page never offered ${a} (it offered ${[...seen].join(" ")})`);
        }
        if (table.expect.includes("trump-hearts")) {
          assert.match((await page.textContent(".facts")) ?? "", /Trump ♥ hearts/);
        }
        assert.equal(await overflowX(page), 0, `${table.name}: nothing wider than the phone`);
      });
    }
  });

  it("says what went wrong, never a blank page", async () => {
    await onPhone(browser, "errors", async (page) => {
      // No seat in this tab.
      await page.goto(`${stack.url}#/play/abc123`);
      await page.waitForSelector("[role=alert]");
      assert.match((await page.textContent("[role=alert]")) ?? "", /No seat here/);
      // A token the server does not know.
      const res = await fetch(new URL("/api/new-match", stack.url), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
        signal: AbortSignal.timeout(10_000),
      });
      const made = (await res.json()) as { matchId: string };
      await page.evaluate((id) => {
        sessionStorage.setItem("spades.seat", JSON.stringify({ matchId: id, seat: 0, token: `${id}.forged`, lastSeq: "0", log: [] }));
      }, made.matchId);
      await page.goto(`${stack.url}#/play/${made.matchId}`);
      await page.reload();
      const auth = await page.waitForSelector("[data-problem=UNAUTHENTICATED]");
      assert.match((await auth.textContent()) ?? "", /does not know this seat/);
      // A match that does not exist, watched.
      await page.goto(`${stack.url}#/watch/no-such-match`);
      const missing = await page.waitForSelector("[data-problem=MATCH_NOT_FOUND]");
      assert.match((await missing.textContent()) ?? "", /no such match/);
      // Variants that cannot be played together: the server's reason and words.
      await page.goto(stack.url);
      await page.check("input[name=auctionTrump]");
      await page.check("input[name=deucesHigh]");
      await page.click("[data-action=start]");
      const rules = await page.waitForSelector("[data-problem=INVALID_RULESET]");
      assert.match((await rules.textContent()) ?? "", /cannot be played together[\s\S]*(auction|deuces)/i);
      await shot(page, "error-rules.png");
    });
  });
});

/** A card's record name from its wire suit and rank (jokers aside: none at these tables). */
function codeOf(c: { suit: number; rank: number }): string {
  return "??23456789TJQKA"[c.rank]! + "?CDHS"[c.suit]!;
}

type SeatClient = ReturnType<ReturnType<ClientModule["connect"]>["seat"]>;

/** Polls the seat's view until it may act (or the match is over), bounded. */
async function myTurn(seat: SeatClient): Promise<Awaited<ReturnType<SeatClient["getView"]>>> {
  const deadline = Date.now() + MOVE_TIMEOUT_MS;
  for (;;) {
    const view = await seat.getView();
    if (view.legalActions.length > 0 || view.winner >= 0) {
      return view;
    }
    assert.ok(Date.now() < deadline, "seat 0's turn did not come");
    await new Promise((r) => setTimeout(r, 50));
  }
}
