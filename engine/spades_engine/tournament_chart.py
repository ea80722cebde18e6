"""A PNG chart of a tournament result, drawn with matplotlib.

``render`` draws the summary made by ``tournament.summarize``: the mean A - B
points per hand with its 95% CI whiskers, the games-mode win rate with its
CI, and think time p50/p99 bars per bot.  matplotlib is an optional extra
(``pip install 'spades-engine[tools]'``): the engine itself needs nothing, so
it is imported only when a chart is asked for, and :class:`ChartUnavailable`
says how to get it.
"""

from __future__ import annotations

import io
from typing import Any

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

GREEN, RED, GREY = "#2e8c46", "#c83c32", "#969696"
P50, P99 = "#466ebe", "#1e3278"


class ChartUnavailable(RuntimeError):
    """matplotlib is not installed."""


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: never a window, works without a display
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ChartUnavailable(
            "the PNG chart needs matplotlib: pip install 'spades-engine[tools]'"
        ) from e
    return plt


def _ci_panel(ax: Any, title: str, stat: dict[str, Any], ref: float, percent: bool) -> None:
    """One mean with its 95% CI against the reference line ``ref``; green when
    the interval is above it, red when below, grey when it straddles."""
    ax.set_title(title, fontsize=10)
    ax.axhline(ref, color="black", linewidth=0.8)
    ax.set_xticks([])
    mean, ci = stat.get("mean"), stat.get("ci95")
    if mean is None:
        ax.text(0.5, 0.5, "no data", color=RED, ha="center", transform=ax.transAxes)
        return
    color = GREY
    if ci is not None and ci[0] > ref:
        color = GREEN
    elif ci is not None and ci[1] < ref:
        color = RED
    scale = 100.0 if percent else 1.0
    unit = "%" if percent else ""
    ax.bar([0], [(mean - ref) * scale], bottom=ref * scale, width=0.5, color=color)
    label = f"mean {mean * scale:+.1f}{unit}" if not percent else f"mean {mean * scale:.1f}%"
    if ci is not None:
        lo, hi = ci[0] * scale, ci[1] * scale
        ax.errorbar([0], [mean * scale], yerr=[[mean * scale - lo], [hi - mean * scale]],
                    color="black", capsize=8, linewidth=1.5)  # fmt: skip
        label += f"\n95% CI {lo:.1f}{unit} .. {hi:.1f}{unit}"
    else:
        label += "\nCI n/a (n<2)"
    if percent:
        ax.set_ylim(0, 100)
    else:
        span = max(abs(mean), *(abs(v) for v in ci or ()), 1e-9) * 1.25
        ax.set_ylim(-span, span)
    ax.set_xlim(-1, 1)
    ax.set_xlabel(label, fontsize=9)


def _think_panel(ax: Any, think: dict[str, Any]) -> None:
    ax.set_title("think time per call, ms", fontsize=10)
    names = list(think)
    if not names:
        ax.text(0.5, 0.5, "no data", color=RED, ha="center", transform=ax.transAxes)
        return
    xs = range(len(names))
    p50 = [float(think[n]["p50_ms"]) for n in names]
    p99 = [float(think[n]["p99_ms"]) for n in names]
    ax.bar([x - 0.2 for x in xs], p50, width=0.4, color=P50, label="p50")
    ax.bar([x + 0.2 for x in xs], p99, width=0.4, color=P99, label="p99")
    ax.set_xticks(list(xs), [f"{n}\n{think[n]['calls']} calls" for n in names], fontsize=8)
    ax.legend(fontsize=8)


def render(summary: dict[str, Any], width: int = 900, height: int = 420) -> bytes:
    """The PNG chart of a ``tournament.summarize`` result, ``width`` x ``height`` pixels."""
    plt = _pyplot()
    win = summary.get("win_rate")
    panels = 3 if win is not None else 2
    dpi = 100
    fig, axes = plt.subplots(
        1,
        panels,
        figsize=(width / dpi, height / dpi),
        dpi=dpi,
        gridspec_kw={"width_ratios": [1] * (panels - 1) + [2]},
    )
    try:
        a, b = ",".join(summary["a"]), ",".join(summary["b"])
        unit = "deals" if summary["mode"] == "deals" else "games"
        rules = summary.get("preset") or "custom"
        fig.suptitle(
            f"A={a} vs B={b}: duplicate, {summary['pairs']} {unit} x "
            f"{len(summary['orientations'])} seatings, rules {rules}, seed {summary['seed']}",
            fontsize=11,
        )
        _ci_panel(axes[0], "A - B points per hand", summary["points_diff"], 0.0, False)
        if win is not None:
            _ci_panel(axes[1], "games won by A", win, 0.5, True)
        _think_panel(axes[-1], summary["think_ms"])
        fig.tight_layout()
        out = io.BytesIO()
        fig.savefig(out, format="png", dpi=dpi)
    finally:
        plt.close(fig)
    return out.getvalue()
