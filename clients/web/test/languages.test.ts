// Every language renders the lobby, a bidding and a playing position without
// a missing key: the page runs in strict mode (?i18n=strict: no fallback to
// English, each missing key recorded in window.spadesMissingKeys), so a key
// a language lacks fails here instead of quietly showing English. The
// screenshots of each position in each language go to build/web-screenshots/.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright";
import { MOVE_TIMEOUT_MS, onPhone, practiceMatch, shot } from "./page.js";
import { PKG, launchBrowser, startStack, type Stack } from "./stack.js";

const LANGUAGES = ["en", "pl", "de", "bg"] as const;

/** The language's own word for trump, as its translation file has it (shown in the table's header). */
function trumpWord(lng: string): string {
  const ui = JSON.parse(readFileSync(join(PKG, "src", "locales", lng, "ui.json"), "utf8")) as { header: { trump: string } };
  return ui.header.trump;
}

async function missingKeys(page: Page): Promise<string[]> {
  return page.evaluate(() => (window as unknown as { spadesMissingKeys?: string[] }).spadesMissingKeys ?? ["strict mode is off"]);
}

describe("the page in every language", { timeout: 600_000 }, () => {
  let stack: Stack;
  let browser: Browser;

  before(async () => {
    stack = await startStack("languages");
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await stack?.stop();
  });

  for (const lng of LANGUAGES) {
    it(`renders the lobby, a bidding and a playing position in ${lng} without a missing key`, async () => {
      await onPhone(browser, `language-${lng}`, async (page) => {
        const url = `${stack.url}?lang=${lng}&i18n=strict`;
        await page.goto(url);
        await page.waitForSelector("[data-form=new-match]");
        assert.equal(await page.getAttribute("html", "lang"), lng);
        await shot(page, `lang-${lng}-lobby.png`);
        assert.deepEqual(await missingKeys(page), [], "the lobby");

        await practiceMatch(page, url, "777");
        await page.waitForSelector(".actions [data-action^=bid-]:not([disabled])", { timeout: MOVE_TIMEOUT_MS });
        assert.ok(((await page.textContent(".facts")) ?? "").includes(trumpWord(lng)), "the header in the page's language");
        await shot(page, `lang-${lng}-bidding.png`);
        assert.deepEqual(await missingKeys(page), [], "bidding");

        await page.click("[data-action=bid-3]");
        await page.waitForSelector("[data-hand=visible] [data-legal=true]", { timeout: MOVE_TIMEOUT_MS });
        await page.click("[data-hand=visible] [data-legal=true]");
        await page.waitForSelector("[data-trick=live] [data-card], [data-trick=last] [data-card]", { timeout: MOVE_TIMEOUT_MS });
        await shot(page, `lang-${lng}-playing.png`);
        assert.deepEqual(await missingKeys(page), [], "playing");
      });
    });
  }

  it("takes the browser's language, switches with the picker and remembers the choice", async () => {
    const context = await browser.newContext({ locale: "de-DE", viewport: { width: 375, height: 812 } });
    try {
      const page = await context.newPage();
      await page.goto(stack.url);
      await page.waitForSelector("[data-form=new-match]");
      assert.equal(await page.getAttribute("html", "lang"), "de");
      await page.selectOption("select[data-action=language]", "bg");
      await page.waitForFunction(() => document.documentElement.lang === "bg");
      await page.reload();
      await page.waitForSelector("[data-form=new-match]");
      assert.equal(await page.getAttribute("html", "lang"), "bg");
    } finally {
      await context.close();
    }
  });
});
