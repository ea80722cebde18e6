#!/usr/bin/env python3
"""The web table (clients/web) on a phone: the bytes it ships, the time to a dealt hand.

* assets: each file of the built page (``--dist``; source maps left out), raw and
  gzipped (level 9), split into the first load (index.html, the scripts and CSS
  it names, their static imports, followed) and the lazy chunks (the rest).
* timing: the real stack (``python -m spades_server.stack`` with the flags of
  clients/web/test/stack.ts, ``SPADES_WEB_DIR`` = ``--dist``) and Debian's
  Chromium, driven by Playwright (clients/web/node_modules) from a Node script.
  Each run, a fresh context (empty cache) at 375 x 812: open the page; when
  ``form[data-form="new-match"]`` is visible click ``[data-action="start"]``
  (the lobby's defaults); wait for 13 cards in ``[data-hand]``. Times are the
  page's own ``performance.now()`` (from navigation start), taken by a
  MutationObserver as the DOM changes; total = lobby + click -> cards (the
  harness's reaction between them left out). One warm-up run first; then
  each ``--rates`` CPU slowdown (CDP ``Emulation.setCPUThrottlingRate``).

    python3 bench/web_page.py [--dist DIR] [--runs 10] [--rates 1,4] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gzip
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cpu_usage import machine_busy_seconds, warn_if_disturbed
from load import pct
from processes import Procs, free_port

# A run starts at most every RUN_EVERY_S: each makes a match by POST /api/new-match, which
# the web server limits to 30 a minute, bursts of 10 (spades_server.webapp).
RUN_EVERY_S = 2.1
ROOT = Path(__file__).resolve().parent.parent
WEB = ROOT / "clients" / "web"
UP = re.compile(r"^Spades is up: open (\S+)", re.M)
HTML_REFS = re.compile(r"<(?:script|link)\b[^>]*?\b(?:src|href)=\"(/[^\"]+)\"")
STATIC_IMPORT = re.compile(r"(?:^|[;}\s])import\s*(?:[\w$*{},\s]+?from\s*)?[\"']([^\"']+)[\"']")

# Runs in the page before its own scripts: the moments the lobby and the hand appear.
MARKS = """(() => {
  const b = (window.__bench = {});
  const hand = () =>
    document.querySelectorAll('[data-hand="visible"] button[data-card]').length === 13 ||
    document.querySelector('[data-hand="face-down"]')?.children.length === 13;
  const obs = new MutationObserver(() => {
    const form = document.querySelector('form[data-form="new-match"]');
    if (b.lobby === undefined && form?.checkVisibility()) b.lobby = performance.now();
    if (b.click !== undefined && b.hand === undefined && hand()) {
      b.hand = performance.now();
      obs.disconnect();
    }
  });
  obs.observe(document, { childList: true, subtree: true, attributes: true });
  document.addEventListener("click", (e) => {
    const start = e.target.closest?.('[data-action="start"]');
    if (b.click === undefined && start) b.click = performance.now();
  }, true);
})();"""

DRIVER = """import { chromium } from "playwright";
const [url, exe, runs, rates, marks, every] = JSON.parse(process.argv[1]);
const browser = await chromium.launch({ executablePath: exe, headless: true, timeout: 60000,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage"] });  // clients/web/test/stack.ts's launchBrowser
const out = { chromium: browser.version(), node: process.version, runs: [] };
let next = 0;
async function once(rate) {
  await new Promise((done) => setTimeout(done, next - Date.now()));
  next = Date.now() + every;
  const ctx = await browser.newContext({ viewport: { width: 375, height: 812 },
    deviceScaleFactor: 2, isMobile: true, hasTouch: true });  // stack.ts's phonePage
  ctx.setDefaultTimeout(60000);
  await ctx.addInitScript(marks);
  const page = await ctx.newPage();
  const cdp = await ctx.newCDPSession(page);
  if (rate !== 1) await cdp.send("Emulation.setCPUThrottlingRate", { rate });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  try {
    await page.goto(url, { waitUntil: "commit" });
    await page.waitForFunction(() => window.__bench.lobby !== undefined);
    await page.click('[data-action="start"]');
    await page.waitForFunction(() => window.__bench.hand !== undefined);
  } catch (e) {
    const text = await page.evaluate(() => document.body.innerText);
    throw new Error(`${e.message}\npage errors: ${errors}\nthe page's end: ${text.slice(-600)}`);
  }
  const b = await page.evaluate(() => ({ ...window.__bench, fetched: performance
    .getEntriesByType("resource").filter((e) => /\\.(js|css)$/.test(e.name))
    .reduce((n, e) => n + e.transferSize, 0) }));  // JS and CSS over the wire: a cold cache
  await ctx.close();
  return { rate, ...b };
}
out.warmup = await once(1);
for (const rate of rates) for (let i = 0; i < runs; i++) out.runs.push(await once(rate));
await browser.close();
console.log(JSON.stringify(out));
"""


def first_load(dist: Path) -> set[str]:
    """index.html, what it references, and the static imports of those scripts, followed."""
    refs = HTML_REFS.findall((dist / "index.html").read_text())
    todo = ["index.html", *(r.lstrip("/") for r in refs)]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or not (dist / name).is_file():
            continue
        seen.add(name)
        if name.endswith(".js"):
            base = Path(name).parent
            refs = STATIC_IMPORT.findall((dist / name).read_text(errors="replace"))
            todo += [r.lstrip("/") if r[0] == "/" else os.path.normpath(base / r) for r in refs]
    return seen


def assets(dist: Path) -> list[dict[str, Any]]:
    initial = first_load(dist)
    manifest = dist / ".vite" / "manifest.json"  # vite build --manifest: what each file is from
    source = {}
    if manifest.is_file():
        source = {c["file"]: c.get("src", "") for c in json.loads(manifest.read_text()).values()}
    rows = []
    for f in sorted(p for p in dist.rglob("*") if p.is_file() and ".vite" not in p.parts):
        name = f.relative_to(dist).as_posix()
        if name.endswith(".map"):
            continue
        data = f.read_bytes()
        gz = len(gzip.compress(data, compresslevel=9, mtime=0))
        load = "first" if name in initial else "lazy"
        rows.append({"asset": name, "src": source.get(name, ""), "load": load, "raw": len(data),
                     "gzip": gz})  # fmt: skip
    return rows


def kb(n: float) -> str:
    return f"{n / 1024:,.1f} KiB"


def print_assets(rows: list[dict[str, Any]]) -> None:
    print("| asset | loaded | raw | gzip -9 |\n|---|---|---:|---:|")
    for r in sorted(rows, key=lambda r: (r["load"], os.path.dirname(r["src"]), -r["raw"])):
        src = f" ({r['src']})" if r["src"] else ""
        print(f"| {r['asset']}{src} | {r['load']} | {kb(r['raw'])} | {kb(r['gzip'])} |")
    totals = {"first page load": [r for r in rows if r["load"] == "first"]}
    for r in sorted(rows, key=lambda r: r["src"]):  # by directory, when the manifest tells
        if r["load"] == "lazy" and r["src"]:
            totals.setdefault(f"lazy: {os.path.dirname(r['src'])}/", []).append(r)
    totals["lazy, all"] = [r for r in rows if r["load"] == "lazy"]
    for group, sel in totals.items():
        raw, gz = sum(r["raw"] for r in sel), sum(r["gzip"] for r in sel)
        print(f"| **{group}** ({len(sel)} files) | | **{kb(raw)}** | **{kb(gz)}** |")


def start_stack(procs: Procs, dist: Path) -> str:
    """``python -m spades_server.stack`` on a free loopback port; its URL once it says it is up."""
    argv = [sys.executable, "-m", "spades_server.stack", "--port", str(free_port()),
            "--log-dir", str(procs.workdir),
            "--", "--store", "memory", "--port", "0", "--metrics-port", "-1"]  # fmt: skip
    env = {"SPADES_WEB_DIR": str(dist), "SPADES_OPERATOR_TOKEN": ""}
    return procs.child("stack", argv, UP, env)[1]


def own_cpu_seconds() -> float:
    """This process and its descendants, once reaped: as a subreaper (PR_SET_CHILD_SUBREAPER),
    it reaps those whose parent exited first, which would else not count (Chromium's)."""
    deadline = time.monotonic() + 5
    with contextlib.suppress(ChildProcessError):
        while time.monotonic() < deadline:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                time.sleep(0.1)
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def timing(dist: Path, args: argparse.Namespace) -> dict[str, Any]:
    ctypes.CDLL(None).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER
    wall, machine, own = time.monotonic(), machine_busy_seconds(), own_cpu_seconds()
    with tempfile.TemporaryDirectory(prefix="spades-bench-web-page-") as tmp:
        procs = Procs(Path(tmp))
        try:
            url = start_stack(procs, dist)
            spec = [url, args.chromium, args.runs, args.rates, MARKS, 1000 * RUN_EVERY_S]
            cmd = ["node", "--input-type=module", "-e", DRIVER, json.dumps(spec)]
            done = subprocess.run(cmd, cwd=WEB, capture_output=True, text=True, check=False)
        finally:
            procs.stop_all()
    if done.returncode != 0:
        raise SystemExit(f"the browser driver failed:\n{done.stderr}")
    out: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    wall, machine = time.monotonic() - wall, machine_busy_seconds() - machine
    others = machine - (own_cpu_seconds() - own)
    out["other_processes_pct"] = 100 * max(0.0, others) / wall
    return out


def total(run: dict[str, float]) -> float:
    """Lobby interactive plus click -> cards: without the harness's reaction between."""
    return run["lobby"] + run["hand"] - run["click"]


def summary(runs: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    cols = {
        "lobby": [r["lobby"] for r in runs],
        "click_to_hand": [r["hand"] - r["click"] for r in runs],
        "total": [total(r) for r in runs],
    }
    return {k: {"p50": pct(sorted(v), 0.5), "p90": pct(sorted(v), 0.9), "max": max(v)}
            for k, v in cols.items()}  # fmt: skip


def print_timing(rows: dict[str, dict[str, dict[str, float]]], runs: int) -> None:
    print("| CPU | runs | lobby interactive, ms | click -> 13 cards, ms | total, ms |")
    print("|---|---:|---:|---:|---:|")
    for rate, s in rows.items():
        cells = " | ".join("{p50:,.0f} / {p90:,.0f} / {max:,.0f}".format(**s[k]) for k in s)
        print(f"| {'as is' if rate == '1' else rate + 'x slower'} | {runs} | {cells} |")
    print("\np50 / p90 / max; from navigation start (page clock); total = lobby + click -> cards")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dist", type=Path, default=WEB / "dist", help="[clients/web/dist]")
    p.add_argument("--runs", type=int, default=10, help="page loads per CPU rate [10]")
    p.add_argument("--rates", default="1,4", help="CPU throttling rates, 1 = none [1,4]")
    p.add_argument("--chromium", default=os.environ.get("SPADES_CHROMIUM", "/usr/bin/chromium"))
    p.add_argument("--assets-only", action="store_true", help="skip the browser runs")
    p.add_argument("--json", type=Path, help="write the figures to this file too")
    args = p.parse_args(argv)
    dist = args.dist.resolve()
    if not (dist / "index.html").is_file():
        raise SystemExit(f"{dist}/index.html is missing: build the page (see the docstring)")
    args.rates = [float(r) for r in args.rates.split(",")]
    print(f"bench/web_page.py: {dist}, {time.strftime('%Y-%m-%d')}, {platform.node()}, "
          f"{os.cpu_count()} cores\n")  # fmt: skip
    result: dict[str, Any] = {"dist": str(dist), "assets": assets(dist)}
    print_assets(result["assets"])
    if not args.assets_only:
        t = timing(dist, args)
        rows = {f"{r:g}": summary([x for x in t["runs"] if x["rate"] == r]) for r in args.rates}
        print(f"\nChromium {t['chromium']}, Node {t['node']}, 375 x 812, loopback; "
              f"warm-up run (not counted): total {total(t['warmup']):,.0f} ms\n")  # fmt: skip
        print_timing(rows, args.runs)
        fetched = min(r["fetched"] for r in t["runs"])
        print(f"JS and CSS fetched by each run: {kb(fetched)} at least (an empty cache each time)")
        print(f"other processes: {t['other_processes_pct']:.0f} % of one core during the runs")
        warn_if_disturbed([t["other_processes_pct"]])
        result |= {k: t[k] for k in ("chromium", "runs", "warmup", "other_processes_pct")}
        result["timing"] = rows
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
