"""A PNG chart of a tournament result, with no dependency beyond zlib and struct.

``Canvas`` is an RGB pixel buffer with filled rectangles and a 5x7 bitmap
font; ``encode_png`` writes it as an 8-bit truecolour PNG (filter 0 on every
row, one IDAT chunk).  ``render`` draws the summary made by
``tournament.summarize``: the mean A - B points per hand with its 95% CI
whiskers, the games-mode win rate with its CI, and think time p50/p99 bars per
bot.
"""

from __future__ import annotations

import math
import struct
import zlib
from typing import Any

RGB = tuple[int, int, int]

WHITE: RGB = (255, 255, 255)
BLACK: RGB = (20, 20, 20)
GREY: RGB = (150, 150, 150)
LIGHT: RGB = (225, 225, 225)
GREEN: RGB = (46, 140, 70)
RED: RGB = (200, 60, 50)
BLUE: RGB = (70, 110, 190)
DARK_BLUE: RGB = (30, 50, 120)
AMBER: RGB = (215, 150, 40)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def encode_png(width: int, height: int, rgb: bytes | bytearray) -> bytes:
    """An 8-bit RGB PNG of ``width`` x ``height`` pixels given row by row."""
    if len(rgb) != width * height * 3:
        raise ValueError("pixel buffer does not match the image size")
    stride = width * 3
    raw = bytearray()
    for y in range(height):
        raw.append(0)  # filter type 0 (None)
        raw += rgb[y * stride : (y + 1) * stride]

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        PNG_SIGNATURE
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(bytes(raw), 9))
        + chunk(b"IEND", b"")
    )


# 5x7 glyphs, one string of 7 rows of 5 pixels each ('#' set).
_GLYPHS: dict[str, str] = {
    " ": "..... ..... ..... ..... ..... ..... .....",
    "0": ".###. #...# #..## #.#.# ##..# #...# .###.",
    "1": "..#.. .##.. ..#.. ..#.. ..#.. ..#.. .###.",
    "2": ".###. #...# ....# ...#. ..#.. .#... #####",
    "3": "##### ...#. ..#.. ...#. ....# #...# .###.",
    "4": "...#. ..##. .#.#. #..#. ##### ...#. ...#.",
    "5": "##### #.... ####. ....# ....# #...# .###.",
    "6": "..##. .#... #.... ####. #...# #...# .###.",
    "7": "##### ....# ...#. ..#.. .#... .#... .#...",
    "8": ".###. #...# #...# .###. #...# #...# .###.",
    "9": ".###. #...# #...# .#### ....# ...#. .##..",
    "A": ".###. #...# #...# ##### #...# #...# #...#",
    "B": "####. #...# #...# ####. #...# #...# ####.",
    "C": ".###. #...# #.... #.... #.... #...# .###.",
    "D": "###.. #..#. #...# #...# #...# #..#. ###..",
    "E": "##### #.... #.... ####. #.... #.... #####",
    "F": "##### #.... #.... ####. #.... #.... #....",
    "G": ".###. #...# #.... #.### #...# #...# .####",
    "H": "#...# #...# #...# ##### #...# #...# #...#",
    "I": ".###. ..#.. ..#.. ..#.. ..#.. ..#.. .###.",
    "J": "..### ...#. ...#. ...#. ...#. #..#. .##..",
    "K": "#...# #..#. #.#.. ##... #.#.. #..#. #...#",
    "L": "#.... #.... #.... #.... #.... #.... #####",
    "M": "#...# ##.## #.#.# #.#.# #...# #...# #...#",
    "N": "#...# #...# ##..# #.#.# #..## #...# #...#",
    "O": ".###. #...# #...# #...# #...# #...# .###.",
    "P": "####. #...# #...# ####. #.... #.... #....",
    "Q": ".###. #...# #...# #...# #.#.# #..#. .##.#",
    "R": "####. #...# #...# ####. #.#.. #..#. #...#",
    "S": ".#### #.... #.... .###. ....# ....# ####.",
    "T": "##### ..#.. ..#.. ..#.. ..#.. ..#.. ..#..",
    "U": "#...# #...# #...# #...# #...# #...# .###.",
    "V": "#...# #...# #...# #...# #...# .#.#. ..#..",
    "W": "#...# #...# #...# #.#.# #.#.# #.#.# .#.#.",
    "X": "#...# #...# .#.#. ..#.. .#.#. #...# #...#",
    "Y": "#...# #...# .#.#. ..#.. ..#.. ..#.. ..#..",
    "Z": "##### ....# ...#. ..#.. .#... #.... #####",
    ".": "..... ..... ..... ..... ..... .##.. .##..",
    ",": "..... ..... ..... ..... .##.. ..#.. .#...",
    "-": "..... ..... ..... ##### ..... ..... .....",
    "+": "..... ..#.. ..#.. ##### ..#.. ..#.. .....",
    "/": "..... ....# ...#. ..#.. .#... #.... .....",
    "%": "##... ##..# ...#. ..#.. .#... #..## ...##",
    ":": "..... .##.. .##.. ..... .##.. .##.. .....",
    "(": "...#. ..#.. .#... .#... .#... ..#.. ...#.",
    ")": ".#... ..#.. ...#. ...#. ...#. ..#.. .#...",
    "[": ".###. .#... .#... .#... .#... .#... .###.",
    "]": ".###. ...#. ...#. ...#. ...#. ...#. .###.",
    "=": "..... ..... ##### ..... ##### ..... .....",
    "_": "..... ..... ..... ..... ..... ..... #####",
    "<": "...#. ..#.. .#... #.... .#... ..#.. ...#.",
    ">": ".#... ..#.. ...#. ....# ...#. ..#.. .#...",
    "?": ".###. #...# ....# ...#. ..#.. ..... ..#..",
    "!": "..#.. ..#.. ..#.. ..#.. ..#.. ..... ..#..",
    "*": "..... ..#.. #.#.# .###. #.#.# ..#.. .....",
    "|": "..#.. ..#.. ..#.. ..#.. ..#.. ..#.. ..#..",
    "'": "..#.. ..#.. .#... ..... ..... ..... .....",
    "#": ".#.#. .#.#. ##### .#.#. ##### .#.#. .#.#.",
}
FONT: dict[str, tuple[tuple[int, ...], ...]] = {
    ch: tuple(tuple(x for x, p in enumerate(row) if p == "#") for row in rows.split())
    for ch, rows in _GLYPHS.items()
}
GLYPH_W, GLYPH_H, ADVANCE = 5, 7, 6


class Canvas:
    def __init__(self, width: int, height: int, background: RGB = WHITE) -> None:
        self.width = width
        self.height = height
        self.pixels = bytearray(bytes(background) * (width * height))

    def rect(self, x0: int, y0: int, x1: int, y1: int, color: RGB) -> None:
        """Fill the pixels with x0 <= x < x1 and y0 <= y < y1 (corners in any order)."""
        x0, x1 = sorted((x0, x1))
        y0, y1 = sorted((y0, y1))
        x0, x1 = max(0, x0), min(self.width, x1)
        y0, y1 = max(0, y0), min(self.height, y1)
        if x0 >= x1 or y0 >= y1:
            return
        row = bytes(color) * (x1 - x0)
        for y in range(y0, y1):
            i = (y * self.width + x0) * 3
            self.pixels[i : i + len(row)] = row

    def hline(self, x0: int, x1: int, y: int, color: RGB, thick: int = 1) -> None:
        self.rect(x0, y, x1 + 1, y + thick, color)

    def vline(self, x: int, y0: int, y1: int, color: RGB, thick: int = 1) -> None:
        y0, y1 = sorted((y0, y1))
        self.rect(x, y0, x + thick, y1 + 1, color)

    def frame(self, x0: int, y0: int, x1: int, y1: int, color: RGB) -> None:
        self.hline(x0, x1, y0, color)
        self.hline(x0, x1, y1, color)
        self.vline(x0, y0, y1, color)
        self.vline(x1, y0, y1, color)

    def dashed_hline(self, x0: int, x1: int, y: int, color: RGB) -> None:
        for x in range(x0, x1 + 1, 6):
            self.hline(x, min(x + 2, x1), y, color)

    @staticmethod
    def text_width(text: str, scale: int = 1) -> int:
        return max(0, len(text) * ADVANCE * scale - scale)

    def text(self, x: int, y: int, text: str, color: RGB = BLACK, scale: int = 1) -> None:
        """Draw ``text`` (upper-cased) with its top-left corner at (x, y)."""
        for i, ch in enumerate(text.upper()):
            glyph = FONT.get(ch, FONT["?"])
            gx = x + i * ADVANCE * scale
            for row, cols in enumerate(glyph):
                for col in cols:
                    px, py = gx + col * scale, y + row * scale
                    self.rect(px, py, px + scale, py + scale, color)

    def text_centered(self, cx: int, y: int, text: str, color: RGB = BLACK, scale: int = 1) -> None:
        self.text(cx - self.text_width(text, scale) // 2, y, text, color, scale)

    def text_right(self, x: int, y: int, text: str, color: RGB = BLACK, scale: int = 1) -> None:
        self.text(x - self.text_width(text, scale), y, text, color, scale)

    def png(self) -> bytes:
        return encode_png(self.width, self.height, self.pixels)


def nice_ceiling(x: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is >= x (x > 0)."""
    if x <= 0 or not math.isfinite(x):
        return 1.0
    p = 10.0 ** math.floor(math.log10(x))
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        if m * p >= x * (1 - 1e-9):
            return m * p
    return 10.0 * p


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def _ci_panel(
    c: Canvas,
    box: tuple[int, int, int, int],
    title: str,
    stat: dict[str, Any],
    ref: float,
    lo_v: float,
    hi_v: float,
    as_percent: bool = False,
) -> None:
    """One bar from ``ref`` to the mean, with whiskers at the 95% CI."""
    x0, y0, x1, y1 = box
    c.frame(x0, y0, x1, y1, GREY)
    c.text_centered((x0 + x1) // 2, y0 + 8, title, BLACK, 1)
    top, bottom = y0 + 30, y1 - 36
    axis_x = x0 + 58
    plot_right = x1 - 16

    def ypix(v: float) -> int:
        v = min(max(v, lo_v), hi_v)
        return round(bottom - (v - lo_v) / (hi_v - lo_v) * (bottom - top))

    def label(v: float, digits: int = 0) -> str:
        return f"{v * 100:.{digits}f}%" if as_percent else _fmt(v)

    for v in (lo_v, ref, hi_v):
        y = ypix(v)
        c.dashed_hline(axis_x, plot_right, y, GREY if v != ref else BLACK)
        c.text_right(axis_x - 4, y - 3, label(v), BLACK)
    c.vline(axis_x, top, bottom, BLACK)
    mean = stat.get("mean")
    ci = stat.get("ci95")
    cx = (axis_x + plot_right) // 2
    half = max(10, (plot_right - axis_x) // 5)
    if mean is None:
        c.text_centered(cx, (top + bottom) // 2, "NO DATA", RED)
        return
    color = GREY
    if ci is not None and ci[0] > ref:
        color = GREEN
    elif ci is not None and ci[1] < ref:
        color = RED
    c.rect(cx - half, ypix(ref), cx + half + 1, ypix(mean), color)
    c.hline(cx - half, cx + half, ypix(mean), BLACK)
    text = f"MEAN {label(mean, 1)}"
    if ci is not None:
        lo, hi = ypix(ci[0]), ypix(ci[1])
        c.vline(cx, lo, hi, BLACK, 2)
        c.hline(cx - half // 2, cx + half // 2, lo, BLACK, 2)
        c.hline(cx - half // 2, cx + half // 2, hi, BLACK, 2)
        c.text_centered(cx, bottom + 10, text, BLACK)
        c.text_centered(cx, bottom + 22, f"95% CI {label(ci[0], 1)} .. {label(ci[1], 1)}", BLACK)
    else:
        c.text_centered(cx, bottom + 10, text, BLACK)
        c.text_centered(cx, bottom + 22, "CI N/A (N<2)", BLACK)


def _think_panel(c: Canvas, box: tuple[int, int, int, int], think: dict[str, Any]) -> None:
    """p50 and p99 think time bars, one pair per bot."""
    x0, y0, x1, y1 = box
    c.frame(x0, y0, x1, y1, GREY)
    c.text_centered((x0 + x1) // 2, y0 + 8, "THINK TIME PER CALL, MS", BLACK)
    top, bottom = y0 + 42, y1 - 36
    axis_x = x0 + 58
    plot_right = x1 - 12
    c.rect(x1 - 150, y0 + 22, x1 - 142, y0 + 30, BLUE)
    c.text(x1 - 138, y0 + 23, "P50", BLACK)
    c.rect(x1 - 100, y0 + 22, x1 - 92, y0 + 30, DARK_BLUE)
    c.text(x1 - 88, y0 + 23, "P99", BLACK)
    names = list(think)
    if not names:
        c.text_centered((x0 + x1) // 2, (top + bottom) // 2, "NO DATA", RED)
        return
    vmax = nice_ceiling(max([1e-3] + [float(t["p99_ms"]) for t in think.values()]) * 1.15)

    def ypix(v: float) -> int:
        return round(bottom - min(v, vmax) / vmax * (bottom - top))

    for v in (0.0, vmax / 2, vmax):
        y = ypix(v)
        c.dashed_hline(axis_x, plot_right, y, GREY if v else BLACK)
        c.text_right(axis_x - 4, y - 3, _fmt(v), BLACK)
    c.vline(axis_x, top, bottom, BLACK)
    slot = (plot_right - axis_x) // len(names)
    bar = max(4, min(36, slot // 3))
    for i, name in enumerate(names):
        cx = axis_x + slot * i + slot // 2
        for k, (key, color) in enumerate((("p50_ms", BLUE), ("p99_ms", DARK_BLUE))):
            v = float(think[name][key])
            bx = cx - bar - 1 if k == 0 else cx + 1
            c.rect(bx, ypix(0), bx + bar, ypix(v), color)
            c.text_centered(bx + bar // 2, ypix(v) - 10, _fmt(v), BLACK)
        c.text_centered(cx, bottom + 10, name[: max(1, slot // ADVANCE)], BLACK)
        c.text_centered(cx, bottom + 22, f"{think[name]['calls']} CALLS", GREY)


def render(summary: dict[str, Any], width: int = 900, height: int = 420) -> bytes:
    """The PNG chart of a ``tournament.summarize`` result."""
    c = Canvas(width, height)
    a, b = ",".join(summary["a"]), ",".join(summary["b"])
    unit = "DEALS" if summary["mode"] == "deals" else "GAMES"
    c.text(16, 12, f"A={a} VS B={b}", BLACK, 2)
    rules = summary.get("preset") or "custom"
    c.text(
        16,
        34,
        f"DUPLICATE, {summary['pairs']} {unit} X {len(summary['orientations'])} SEATINGS, "
        f"RULES {rules}, SEED {summary['seed']}",
        GREY,
    )
    d = summary["points_diff"]
    span = [abs(d["mean"] or 0.0)]
    if d.get("ci95"):
        span += [abs(d["ci95"][0]), abs(d["ci95"][1])]
    m = nice_ceiling(max(span) * 1.2) if max(span) > 0 else 1.0
    top, bottom = 52, height - 12
    win = summary.get("win_rate")
    gap = 12
    ci_w = 250
    x = 16
    _ci_panel(c, (x, top, x + ci_w, bottom), "A - B POINTS PER HAND", d, 0.0, -m, m)
    x += ci_w + gap
    if win is not None:
        _ci_panel(c, (x, top, x + ci_w, bottom), "GAMES WON BY A", win, 0.5, 0.0, 1.0, True)
        x += ci_w + gap
    _think_panel(c, (x, top, width - 16, bottom), summary["think_ms"])
    return c.png()
