// The lobby in a real browser (Debian's Chromium, driven by Playwright)
// against the real stack (spades-server + Envoy + the web table's server,
// whose POST /api/guest hands out guest credentials): two people at one
// table by an invite link, four people seated together by Play now, a
// rematch after a (short, rated) match, and the leaderboard and profile that
// match leaves. Screenshots go to build/web-screenshots/.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { AxeBuilder } from "@axe-core/playwright";
import type { Browser, BrowserContext, Page } from "playwright";
import { SCREENSHOTS, clientModule, launchBrowser, phonePage, startStack, type ClientModule, type Stack } from "./stack.js";

const HAND_TIMEOUT_MS = 180_000;

/** The server's flags for these tests: rated tables may seat bots (at fixed ratings) and a player is on the board after one rated game. */
const SERVER_FLAGS = ["--rated-bots", "on", "--rating-min-games", "1", "--quickplay-bot-wait-seconds", "60"];

interface Person {
  context: BrowserContext;
  page: Page;
  errors: string[];
}

async function person(browser: Browser, stack: Stack): Promise<Person> {
  const p = await phonePage(browser);
  await p.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(stack.url).origin });
  return p;
}

async function shot(page: Page, name: string, fullPage = true): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, name), fullPage });
}

async function overflowX(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
}

/** The page's own checks: nothing wider than the phone, no key without an English text, no serious accessibility fault. */
async function pageChecks(page: Page, what: string): Promise<void> {
  assert.ok((await overflowX(page)) <= 0, `${what}: wider than the phone`);
  const missing = await page.evaluate(() => (window as unknown as { spadesMissingKeys?: string[] }).spadesMissingKeys ?? []);
  assert.deepEqual(missing, [], `${what}: keys without a text`);
  const axe = await new AxeBuilder({ page }).analyze();
  const serious = axe.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(
    serious.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`),
    [],
    `${what}: accessibility`,
  );
}

/** Opens the lobby (strict i18n: a key with no English text is recorded) and takes a name. */
async function signIn(page: Page, url: string, name: string): Promise<string> {
  await page.goto(`${url}?i18n=strict#/`);
  await page.waitForSelector("[data-form=identity]");
  await page.fill("input[name=playerName]", name);
  await page.click("[data-action=sign-in]");
  const bar = await page.waitForSelector("[data-identity]");
  return (await bar.getAttribute("data-identity")) ?? "";
}

async function savedSeat(page: Page): Promise<{ matchId: string; seat: number; token: string }> {
  return page.evaluate(() => JSON.parse(sessionStorage.getItem("spades.seat") ?? "null") as { matchId: string; seat: number; token: string });
}

async function atPlay(page: Page): Promise<string> {
  await page.waitForFunction(() => /^#\/play\//.test(window.location.hash), undefined, { timeout: 90_000 });
  return decodeURIComponent(new URL(page.url()).hash.slice("#/play/".length));
}

/**
 * Plays this seat by clicking (a bid, else a legal card) until `done` says
 * the page shows the end: only the data attributes the table promises
 * (data-card, data-legal, data-action="bid-N", data-phase, data-hand-number,
 * data-scored / the hand result dialog, data-match-over).
 */
async function playUntil(page: Page, until: "scored" | "over"): Promise<{ bids: number; cards: number }> {
  const deadline = Date.now() + HAND_TIMEOUT_MS;
  const clicked = { bids: 0, cards: 0 };
  for (;;) {
    assert.ok(Date.now() < deadline, `not ${until} in time`);
    const handle = await page.waitForFunction(
      (end) => {
        const main = document.querySelector("main[data-phase]");
        const over = document.querySelector("[data-match-over]") !== null || /OVER/i.test(main?.getAttribute("data-phase") ?? "");
        if (over) return "done";
        if (end === "scored") {
          const hand = Number(main?.getAttribute("data-hand-number") ?? "0");
          if (document.querySelector("[data-scored], [data-dialog=hand-result]") !== null || hand >= 1) return "done";
        }
        if (document.querySelector("[data-problem]")) return "problem";
        if (document.querySelector('[data-action^="bid-"]:not([disabled])')) return "bid";
        if (document.querySelector('button[data-card][data-legal="true"]')) return "card";
        // Between hands (the result dialog of a hand that did not end the match): close it.
        if (document.querySelector("[data-dialog=hand-result] button, [data-scored] button")) return "dismiss";
        return false;
      },
      until,
      { timeout: 60_000, polling: 50 },
    );
    const move = (await handle.jsonValue()) as string;
    if (move === "done") return clicked;
    if (move === "problem") {
      const text = await page.textContent("[data-problem]");
      // A refusal of a click that raced the table (it moved on): look again.
      if (/STALE_SEQUENCE|NOT_YOUR_TURN/.test(text ?? "")) {
        await page.click("[data-problem] button").catch(() => undefined);
        continue;
      }
      assert.fail(`a problem on the table: ${text}`);
    }
    if (move === "dismiss") {
      await page.click("[data-dialog=hand-result] button, [data-scored] button").catch(() => undefined);
      continue;
    }
    if (move === "bid") {
      const offered = await page.$$eval('[data-action^="bid-"]:not([disabled])', (bs) => bs.map((b) => b.getAttribute("data-action")!));
      const choice = offered.includes("bid-3") ? "bid-3" : offered[Math.floor(offered.length / 2)]!;
      await page.click(`[data-action="${choice}"]`);
      clicked.bids++;
      await page.waitForSelector(`[data-action="${choice}"]:not([disabled])`, { state: "detached", timeout: 20_000 }).catch(() => undefined);
      continue;
    }
    const code = await page.getAttribute('button[data-card][data-legal="true"]', "data-card");
    if (code === null) continue;
    await page.click(`button[data-card="${code}"][data-legal="true"]`);
    clicked.cards++;
    await page
      .waitForFunction((c) => document.querySelector(`button[data-card="${c}"][data-legal="true"]`) === null, code, { timeout: 20_000 })
      .catch(() => undefined);
  }
}

/** A guest credential from the web server, as the page gets one (for the test's own gRPC player). */
async function guest(stack: Stack, name: string): Promise<{ credential: string; playerId: string }> {
  const res = await fetch(new URL("/api/guest", stack.url), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name }) });
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()) as { credential: string; playerId: string };
}

describe("the lobby in Chromium against the real stack", { timeout: 900_000 }, () => {
  let stack: Stack;
  let browser: Browser;
  let mod: ClientModule;
  const people: Person[] = [];

  const newPerson = async (): Promise<Person> => {
    const p = await person(browser, stack);
    people.push(p);
    return p;
  };

  /** Runs a test; on failure, a screenshot of each page open. */
  const run = async (name: string, body: () => Promise<void>): Promise<void> => {
    const mine = people.length;
    try {
      await body();
      for (const p of people.slice(mine)) {
        assert.deepEqual(p.errors.filter((e) => !/Failed to load resource/.test(e)), [], "errors on the page");
      }
    } catch (e) {
      for (const [i, p] of people.slice(mine).entries()) {
        await shot(p.page, `failed-lobby-${name}-${i}.png`).catch(() => undefined);
      }
      throw e;
    } finally {
      for (const p of people.splice(mine)) {
        await p.context.close().catch(() => undefined);
      }
    }
  };

  before(async () => {
    mod = await clientModule();
    stack = await startStack("lobby", SERVER_FLAGS);
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await stack?.stop();
  });

  it("two people: one opens a table and shares the invite link, the other joins as partner, the host starts, both play a hand", async () => {
    await run("invite", async () => {
      const ann = await newPerson();
      const bob = await newPerson();
      const annId = await signIn(ann.page, stack.url, "Ann");
      assert.match(annId, /^guest-/);
      await pageChecks(ann.page, "the lobby");
      await shot(ann.page, "lobby-home.png");

      // The Advanced fold holds the seed and the connection.
      assert.equal(await ann.page.isVisible("input[name=seed]"), false);

      await ann.page.check("input[name=visibility][value=private]");
      await ann.page.selectOption("select[name=turnTimer]", "60000");
      await ann.page.click("[data-action=open-table]");
      await ann.page.waitForSelector("[data-page=waiting-room] [data-invite-link]");
      await ann.page.click("[data-action=copy-invite-link]");
      const link = await ann.page.evaluate(() => navigator.clipboard.readText());
      assert.match(link, /#\/join\/[A-Z0-9-]+$/);
      assert.equal(link, await ann.page.inputValue("[data-invite-link]"));
      const tableId = (await ann.page.getAttribute("[data-page=waiting-room]", "data-table-id")) ?? "";

      // Bob opens the link: his name first, then the table and its seats.
      await bob.page.goto(link.replace("#/", "?i18n=strict#/"));
      await bob.page.waitForSelector("[data-page=join] [data-form=identity]");
      await bob.page.fill("input[name=playerName]", "Bob");
      await bob.page.click("[data-action=sign-in]");
      const partner = await bob.page.waitForSelector("[data-action=join-suggested]");
      assert.match((await partner.textContent()) ?? "", /Ann/);
      await pageChecks(bob.page, "the join page");
      await shot(bob.page, "join.png");
      await partner.click();
      await bob.page.waitForSelector(`[data-page=waiting-room][data-table-id="${tableId}"]`);

      // Ann sees Bob opposite her; she starts, bots take seats 1 and 3.
      await ann.page.waitForSelector('[data-seats] [data-seat="2"][data-seat-state=player]');
      assert.match((await ann.page.textContent('[data-seats] [data-seat="2"]')) ?? "", /Bob/);
      assert.match((await ann.page.textContent('[data-seats] [data-seat="0"]')) ?? "", /host/);
      await pageChecks(ann.page, "the waiting room");
      await shot(ann.page, "waiting-room.png");
      await ann.page.click("[data-action=start-table]");

      const [a, b] = await Promise.all([atPlay(ann.page), atPlay(bob.page)]);
      assert.equal(a, tableId);
      assert.equal(b, tableId);
      const [seatA, seatB] = await Promise.all([savedSeat(ann.page), savedSeat(bob.page)]);
      assert.equal(seatA.seat, 0);
      assert.equal(seatB.seat, 2);
      assert.equal(seatA.matchId, tableId);

      const client = mod.connect(stack.address, { operatorToken: stack.operatorToken });
      // Each page takes its seat as it opens the table: the seats are the two people's once both have.
      const want = [mod.SeatControl.HUMAN, mod.SeatControl.BOT, mod.SeatControl.HUMAN, mod.SeatControl.BOT];
      let controls: number[] = [];
      for (let i = 0; i < 100; i++) {
        controls = (await client.getMatch(tableId)).seats.map((s) => s.control);
        if (controls.join() === want.join()) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.deepEqual(controls, want);

      // The table's turn timer counts down on the seat to act (a person: bots do not wait).
      const countdown = await ann.page.waitForSelector("[data-seat] [data-countdown]", { timeout: 20_000 });
      const left = Number(await countdown.getAttribute("data-countdown"));
      assert.ok(left > 0 && left <= 60, `${left} s left`);
      // Seat names, the partner marked, the bots shown as bots.
      assert.match((await ann.page.textContent('.felt [data-seat="2"]')) ?? "", /Bob/);
      assert.equal(await ann.page.getAttribute('.felt [data-seat="2"]', "data-partner"), "true");
      assert.equal(await ann.page.getAttribute('.felt [data-seat="1"]', "data-control"), "bot");

      const played = await Promise.all([playUntil(ann.page, "scored"), playUntil(bob.page, "scored")]);
      assert.deepEqual(played, [
        { bids: 1, cards: 13 },
        { bids: 1, cards: 13 },
      ]);

      // Bob drops out (his seat handed to a bot), and Ann sees him away; he comes back, and she sees him back.
      const bobSeat = client.seat(seatB.token);
      await bobSeat.leave();
      await ann.page.waitForSelector('.felt [data-seat="2"][data-control=away]', { timeout: 20_000 });
      await shot(ann.page, "partner-away.png");
      await bobSeat.claim();
      await ann.page.waitForSelector('.felt [data-seat="2"][data-control=human]', { timeout: 20_000 });
    });
  });

  it("four people press Play now (classic, unrated), two of them as partners, and sit at one table, no bots", async () => {
    await run("quickplay", async () => {
      const four = [await newPerson(), await newPerson(), await newPerson(), await newPerson()];
      const ids = await Promise.all(four.map((p, i) => signIn(p.page, stack.url, `Quick ${i + 1}`)));
      // Quick 1 and Quick 3 come as a party: each names the other's id (shown in the lobby) as partner.
      const party: Record<number, string> = { 0: ids[2]!, 2: ids[0]! };
      for (const [i, p] of four.entries()) {
        await p.page.check("input[name=qpPreset][value=classic]");
        assert.equal(await p.page.isChecked("input[name=qpRated]"), false);
        const friend = party[i];
        if (friend !== undefined) {
          await p.page.check("input[name=qpParty][value=friend]");
          await p.page.fill("input[name=partnerId]", friend);
        }
        await p.page.click("[data-action=play-now]");
        if (i === 0) {
          await p.page.waitForSelector("[data-ticket]");
          await shot(p.page, "quickplay-waiting.png");
        }
      }
      const matches = await Promise.all(four.map((p) => atPlay(p.page)));
      await Promise.all(four.map((p) => p.page.waitForSelector("main[data-phase]")));
      assert.equal(new Set(matches).size, 1, `one match: ${matches.join(" ")}`);
      const seats = await Promise.all(four.map((p) => savedSeat(p.page)));
      assert.deepEqual(seats.map((s) => s.seat).sort(), [0, 1, 2, 3]);
      const client = mod.connect(stack.address, { operatorToken: stack.operatorToken });
      const summary = await client.getMatch(matches[0]!);
      assert.ok(
        summary.seats.every((s) => s.control !== mod.SeatControl.BOT),
        `no bots: ${summary.seats.map((s) => `${s.name}=${mod.SeatControl[s.control]}`).join(" ")}`,
      );
      assert.deepEqual(summary.seats.map((s) => s.name).sort(), ["Quick 1", "Quick 2", "Quick 3", "Quick 4"]);
      assert.equal(Math.abs(seats[0]!.seat - seats[2]!.seat), 2, "the party sits opposite: partners");
    });
  });

  it("a rematch after a short rated match; then the leaderboard and the profile it leaves", async () => {
    await run("rematch", async () => {
      // The test's own player (gRPC) opens an invite-only rated table of one
      // hand's worth of points (target 1), bots at 1 and 3.
      const host = await guest(stack, "Hal");
      const client = mod.connect(stack.address);
      const hal = client.player(host.credential);
      const opened = await hal.openTable({
        ruleset: { preset: "classic", targetScore: 1 },
        botSeats: [1, 3],
        visibility: mod.TableVisibility.INVITE_ONLY,
        rated: true,
      });
      assert.ok(opened.table?.rated, "a rated table (--rated-bots on)");
      const code = opened.table!.inviteCode;

      const cat = await newPerson();
      const catId = await signIn(cat.page, stack.url, "Cat");
      await cat.page.fill("input[name=inviteCode]", code.toLowerCase());
      await cat.page.click("[data-action=join-code]");
      await cat.page.click("[data-action=join-suggested]");
      const matchId = await atPlay(cat.page);
      assert.equal(matchId, opened.table!.tableId);
      assert.equal((await savedSeat(cat.page)).seat, 2);

      // Hal plays his seat from here; Cat clicks hers, until the match is over.
      const halSeat = client.seat(opened.seatToken);
      let over = false;
      const halPlays = (async () => {
        const deadline = Date.now() + HAND_TIMEOUT_MS * 2;
        while (!over) {
          assert.ok(Date.now() < deadline, "Hal's match did not end");
          const view = await halSeat.getView();
          if (view.phase === mod.Phase.MATCH_OVER) return;
          const action = view.legalActions[0];
          if (action !== undefined) {
            await halSeat.submitAction(action, { expectedSeq: view.asOfSeq }).catch(() => undefined);
          } else {
            await new Promise((r) => setTimeout(r, 100));
          }
        }
      })();
      try {
        const played = await playUntil(cat.page, "over");
        assert.ok(played.cards >= 13, `${played.cards} cards`);
      } finally {
        over = true;
      }
      await halPlays;

      // Cat asks for the rematch with the button at the match's end (the result of the last hand dismissed first).
      await cat.page.click("[data-action=continue]").catch(() => undefined);
      await cat.page.click("[data-match-over] [data-action=rematch]");
      await cat.page.waitForSelector("[data-page=waiting-room][data-table-state=waiting]");
      await cat.page.waitForSelector('[data-seats] [data-seat="2"]');
      assert.match((await cat.page.textContent('[data-seats] [data-seat="2"]')) ?? "", /accepted/);
      await shot(cat.page, "rematch-waiting.png");
      // Hal accepts: the new match is dealt and Cat's page takes her there.
      const accepted = await halSeat.awaitRematch({ waitMs: 5_000 });
      const next = await atPlay(cat.page);
      assert.equal(next, accepted.table!.matchId);
      assert.notEqual(next, matchId);
      assert.equal((await savedSeat(cat.page)).seat, 2);

      // The leaderboard of the classic pool has Cat (one rated game is enough here), marked as her.
      await cat.page.evaluate(() => {
        window.location.hash = "#/leaderboard";
      });
      await cat.page.waitForSelector(`[data-board] tr[data-player="${catId}"]`);
      assert.match((await cat.page.textContent(`[data-board] tr[data-player="${catId}"]`)) ?? "", /Cat.*you/);
      await cat.page.click("[data-action=around-me]");
      await cat.page.waitForSelector(`[data-board] tr[data-player="${catId}"]`);
      await pageChecks(cat.page, "the leaderboard");
      await shot(cat.page, "leaderboard.png");

      // Her profile: the classic rating with its rank, and the record of one match with bots.
      await cat.page.click("[data-action=profile]");
      await cat.page.waitForSelector("[data-page=profile] [data-ratings] tr[data-pool=classic]");
      assert.match((await cat.page.textContent("[data-ratings] tr[data-pool=classic]")) ?? "", /#\d/);
      const record = (await cat.page.textContent("[data-record=record-bots]")) ?? "";
      assert.match(record, /Matches\s*1/);
      assert.match(record, /Contracts made/);
      await pageChecks(cat.page, "the profile");
      await shot(cat.page, "profile.png");

      // The language switcher: the lobby follows, in Polish.
      await cat.page.goto(`${stack.url}#/`);
      await cat.page.waitForSelector("[data-identity]");
      await cat.page.selectOption("[data-action=language]", "pl");
      await cat.page.waitForFunction(() => document.documentElement.lang === "pl");
      assert.match((await cat.page.textContent("[data-form=quick-play] h2")) ?? "", /Zagraj teraz/);
      await cat.page.selectOption("[data-action=language]", "en");
      await cat.page.waitForFunction(() => document.documentElement.lang === "en");
    });
  });

  it("empty states: a new player's profile and an empty leaderboard; the practice form's fold; a wrong invite code", async () => {
    await run("empty", async () => {
      const dan = await newPerson();
      await signIn(dan.page, stack.url, "Dan");
      await dan.page.click("details[data-fold=advanced] summary");
      assert.equal(await dan.page.isVisible("input[name=seed]"), true);
      assert.equal(await dan.page.isVisible("input[name=transport][value=stream]"), true);
      await dan.page.evaluate(() => {
        window.location.hash = "#/profile";
      });
      await dan.page.waitForSelector("[data-page=profile] [data-empty]");
      await dan.page.evaluate(() => {
        window.location.hash = "#/leaderboard/bulgarian";
      });
      await dan.page.waitForSelector("[data-page=leaderboard] [data-empty]");
      await pageChecks(dan.page, "an empty leaderboard");
      await dan.page.evaluate(() => {
        window.location.hash = "#/join/NOPE0-NOPE0";
      });
      await dan.page.waitForSelector("[data-page=join] [data-problem]");
      assert.match((await dan.page.textContent("[data-problem]")) ?? "", /INVITE_NOT_FOUND/);
    });
  });
});
