// The table as a card player and as a keyboard or screen-reader user meets it:
// a whole hand by keyboard only, with each side's bid/won counters checked
// against the match's export at every trick, the last trick of the hand on
// the table when the result shows, and axe-core on the lobby, the table and
// the result (no serious or critical violation).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { AxeBuilder } from "@axe-core/playwright";
import type { Browser, Page } from "playwright";
import { MOVE_TIMEOUT_MS, classicHandState, exportRecord, onPhone, practiceMatch, shot } from "./page.js";
import { clientModule, launchBrowser, startStack, type ClientModule, type Stack } from "./stack.js";

/** axe-core's serious and critical violations on the page as it is, one line each. */
async function axeProblems(page: Page): Promise<string[]> {
  const result = await new AxeBuilder({ page }).withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]).analyze();
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(" ")).slice(0, 3).join(" | ")}`);
}

/** The side counters as the page shows them: [bid, won] per side. */
async function counters(page: Page): Promise<[string, number][]> {
  return page.$$eval("[data-sides] [data-side]", (els) => els.map((e) => [e.getAttribute("data-side-bid") ?? "", Number(e.getAttribute("data-side-won"))] as [string, number]));
}

/** Waits for the player's turn to act by keyboard: a decision's button or a playable card holds the focus; or the hand's result. */
async function focusedMove(page: Page): Promise<"bid" | "card" | "scored"> {
  const handle = await page.waitForFunction(
    () => {
      if (document.querySelector("[data-dialog=hand-result]")) return "scored";
      if (document.querySelector(".card.sending")) return false;
      const a = document.activeElement;
      if (a?.matches(".actions [data-action^=bid-]:not([disabled])")) return "bid";
      if (a?.matches("[data-hand=visible] [data-card][data-legal=true]")) return "card";
      return false;
    },
    undefined,
    { timeout: MOVE_TIMEOUT_MS, polling: 50 },
  );
  return (await handle.jsonValue()) as "bid" | "card" | "scored";
}

describe("the table by keyboard, checked against the export, and by axe-core", { timeout: 600_000 }, () => {
  let stack: Stack;
  let browser: Browser;
  let mod: ClientModule;

  before(async () => {
    mod = await clientModule();
    stack = await startStack("access");
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await stack?.stop();
  });

  it("plays a whole hand by keyboard only; the sides' bid/won match the export at every trick; the last trick shows with the result", async () => {
    await onPhone(browser, "keyboard", async (page) => {
      const matchId = await practiceMatch(page, stack.url, "4242");
      assert.deepEqual(await axeProblems(page), [], "axe on the table while bidding");
      let played = 0;
      for (;;) {
        const move = await focusedMove(page);
        if (move === "scored") break;
        if (move === "bid") {
          // The focus is on the first bid (nil): move to "2" with the arrow-free way a keyboard user has, Tab.
          await page.keyboard.press("Tab");
          await page.keyboard.press("Tab");
          const focused = await page.evaluate(() => document.activeElement?.getAttribute("data-action"));
          assert.equal(focused, "bid-2");
          await page.keyboard.press("Enter");
          await page.waitForSelector(".actions [data-action^=bid-]", { state: "detached", timeout: MOVE_TIMEOUT_MS });
          continue;
        }
        // The player's turn: every side's counters are the export's.
        const record = await exportRecord(mod, stack, matchId);
        const truth = classicHandState(record.actions, 0);
        const shown = await counters(page);
        assert.deepEqual(
          shown,
          [0, 1].map((s) => [String(truth.bid[s]), truth.won[s]]),
          `after ${truth.tricks.length} tricks`,
        );
        if (played === 0) {
          // The arrow keys move between playable cards only; End goes to the last one.
          await page.keyboard.press("End");
          const last = await page.evaluate(() => document.activeElement?.getAttribute("data-legal"));
          assert.equal(last, "true");
        }
        const code = await page.evaluate(() => document.activeElement?.getAttribute("data-card"));
        await page.keyboard.press("Enter");
        await page.waitForFunction(
          (c) => !document.querySelector(`[data-hand=visible] [data-card="${c}"]`) || document.querySelector("[data-dialog=hand-result]") !== null,
          code,
          { timeout: MOVE_TIMEOUT_MS },
        );
        played++;
        if (played === 3) await shot(page, "keyboard-playing.png");
      }
      assert.equal(played, 13);
      // The result is up, and the hand's 13th trick is still on the table, as the export has it.
      const record = await exportRecord(mod, stack, matchId);
      const last = classicHandState(record.actions, 0).tricks.at(-1)!;
      const onTable = await page.$$eval("[data-trick=last] [data-card]", (els) => els.map((e) => [e.getAttribute("data-card"), Number(e.getAttribute("data-seat"))]));
      assert.deepEqual(onTable, last, "the last trick on the table");
      assert.equal(await page.getAttribute("main", "data-holding"), "true");
      await shot(page, "last-trick-and-result.png");
      assert.deepEqual(await axeProblems(page), [], "axe on the hand's result");
      // The result's Continue has the focus; Enter lets the next hand in.
      assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("data-action")), "continue");
      await page.keyboard.press("Enter");
      await page.waitForSelector("main[data-hand-number='1'][data-holding=false]", { timeout: MOVE_TIMEOUT_MS });
    });
  });

  it("shows the previous trick on demand; with reduced motion nothing moves", async () => {
    for (const motion of ["no-preference", "reduce"] as const) {
      const context = await browser.newContext({ viewport: { width: 375, height: 812 }, reducedMotion: motion });
      try {
        const page = await context.newPage();
        const matchId = await practiceMatch(page, stack.url, "9191");
        await page.click(".actions [data-action=bid-3]");
        // Play until two tricks are done and a third is under way.
        for (;;) {
          await page.waitForSelector("[data-hand=visible] [data-legal=true]:not(.sending)", { timeout: MOVE_TIMEOUT_MS });
          const record = await exportRecord(mod, stack, matchId);
          if (classicHandState(record.actions, 0).tricks.length >= 2) break;
          await page.click("[data-hand=visible] [data-legal=true]");
          await page.waitForSelector(".card.sending", { state: "detached", timeout: MOVE_TIMEOUT_MS });
        }
        const record = await exportRecord(mod, stack, matchId);
        const tricks = classicHandState(record.actions, 0).tricks;
        // On the table: the trick under way (its lead, if the player is not leading), or the last one settled.
        const live = (await page.$$("[data-trick=live] [data-card]")).length > 0;
        await page.click("[data-action=last-trick]");
        const shown = await page.$$eval("[data-last-trick] [data-card]", (els) => els.map((e) => e.getAttribute("data-card")));
        const expected = (live ? tricks.at(-1) : tricks.at(-2))!.map(([c]) => c);
        assert.deepEqual(shown, expected, "the previous trick, card by card");
        const moving = await page.$eval(".center .played", (e) => getComputedStyle(e).animationName + "|" + getComputedStyle(e).transitionDuration);
        if (motion === "reduce") {
          assert.match(moving, /^none\|0s/, "no animation and no transition");
        } else {
          assert.doesNotMatch(moving, /^none\|0s$/, "cards move");
        }
      } finally {
        await context.close();
      }
    }
  });

  it("has no serious or critical axe-core violation on the lobby", async () => {
    await onPhone(browser, "axe-lobby", async (page) => {
      await page.goto(stack.url);
      await page.waitForSelector("[data-form=new-match]");
      assert.deepEqual(await axeProblems(page), []);
    });
  });
});
