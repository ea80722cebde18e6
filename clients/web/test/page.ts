// What the browser tests share: reading the table off its DOM (the data-
// attributes the page sets for this), making the moves a player makes, the
// match's export as the truth to compare with, and screenshots.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright";
import { SCREENSHOTS, phonePage, type ClientModule, type Stack } from "./stack.js";

export const MOVE_TIMEOUT_MS = 20_000;

/** Saves a screenshot under build/web-screenshots/. */
export async function shot(page: Page, name: string, fullPage = true): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, name), fullPage });
}

/** Runs a test's body on a fresh phone page; fails on a script error; on failure, a screenshot of where it stood. */
export async function onPhone(browser: Browser, name: string, body: (page: Page, errors: string[]) => Promise<void>): Promise<void> {
  const { context, page, errors } = await phonePage(browser);
  try {
    await body(page, errors);
    assert.deepEqual(errors.filter((e) => !/Failed to load resource/.test(e)), [], "errors on the page");
  } catch (e) {
    await shot(page, `failed-${name}.png`).catch(() => undefined);
    throw e;
  } finally {
    await context.close();
  }
}

/** Opens the practice form's "Advanced" fold (the seed, the connection), if it is closed. */
export async function openAdvanced(page: Page): Promise<void> {
  const fold = await page.waitForSelector("[data-form=new-match] details[data-fold=advanced]", { state: "attached" });
  if (!(await fold.evaluate((d) => (d as HTMLDetailsElement).open))) {
    await page.click("[data-form=new-match] details[data-fold=advanced] > summary");
  }
}

/** Starts a practice match against easy bots from the lobby (by long-poll if asked); returns its match id. */
export async function practiceMatch(page: Page, url: string, seed: string, opts: { longPoll?: boolean } = {}): Promise<string> {
  await page.goto(url);
  await page.waitForSelector("[data-form=new-match]");
  await openAdvanced(page);
  if (opts.longPoll) {
    await page.check("input[name=transport][value=poll]");
  }
  await page.fill("input[name=seed]", seed);
  for (const i of [0, 1, 2]) {
    await page.selectOption(`select[name=bot-${i}]`, "2"); // easy bots
  }
  await page.click("[data-action=start]");
  await page.waitForSelector("[data-hand=visible]");
  return (await page.getAttribute("[data-match-id]", "data-match-id")) ?? "";
}

/** The match's game record (its export): the rules and every action, [seat, "bid 3" | "play QS" | ...]. */
export async function exportRecord(mod: ClientModule, stack: Stack, matchId: string): Promise<{ players: number; actions: [number, string][] }> {
  const client = mod.connect(stack.address, { operatorToken: stack.operatorToken });
  const res = await client.rpc.exportMatch({ matchId }, { headers: { authorization: `Bearer ${stack.operatorToken}` }, timeoutMs: 10_000 });
  const record = JSON.parse(res.recordJson) as { ruleset: { players: number }; actions: [number, string][] };
  return { players: record.ruleset.players, actions: record.actions };
}

const RANKS = "23456789TJQKA";

/** Who wins a classic trick (spades trump, no jokers): cards as [code, seat] in play order. */
export function classicWinner(trick: readonly (readonly [string, number])[]): number {
  const led = trick[0]![0][1];
  const beats = (a: string, b: string): boolean => {
    if (a[1] === b[1]) return RANKS.indexOf(a[0]!) > RANKS.indexOf(b[0]!);
    return a[1] === "S";
  };
  let best = trick[0]!;
  for (const c of trick.slice(1)) {
    if ((c[0][1] === led || c[0][1] === "S") && beats(c[0], best[0])) best = c;
  }
  return best[1];
}

/** A four-player classic hand's state by the export: each side's bid and tricks won, and the finished tricks. */
export function classicHandState(actions: readonly [number, string][], hand: number): { bid: number[]; won: number[]; tricks: [string, number][][] } {
  const bid = [0, 0];
  const won = [0, 0];
  const tricks: [string, number][][] = [];
  let handIndex = -1;
  const trick: [string, number][] = [];
  let bidsSeen = 4;
  for (const [seat, a] of actions) {
    if (a.startsWith("bid ")) {
      if (bidsSeen === 4) {
        if (handIndex === hand) break; // the next hand's first bid: the hand asked for is over
        handIndex++;
        bidsSeen = 0;
      }
      bidsSeen++;
      if (handIndex === hand) bid[seat % 2]! += Number(a.slice(4)) || 0;
    } else if (a.startsWith("play ") && handIndex === hand) {
      trick.push([a.slice(5), seat]);
      if (trick.length === 4) {
        won[classicWinner(trick) % 2]!++;
        tricks.push([...trick]);
        trick.length = 0;
      }
    }
  }
  return { bid, won, tricks };
}
